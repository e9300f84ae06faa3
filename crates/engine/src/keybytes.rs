//! `KeyBytes`: a key's bytes, stored inline when short (the common case) so a key costs
//! no allocation of its own.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Longest key kept inline (the struct is 24 bytes, like a `Vec`).
pub const INLINE_CAP: usize = 22;

#[derive(Clone)]
pub enum KeyBytes {
    Inline { len: u8, data: [u8; INLINE_CAP] },
    Heap(Box<[u8]>),
}

impl KeyBytes {
    pub fn new(b: &[u8]) -> KeyBytes {
        if b.len() <= INLINE_CAP {
            let mut data = [0u8; INLINE_CAP];
            data[..b.len()].copy_from_slice(b);
            KeyBytes::Inline {
                len: b.len() as u8,
                data,
            }
        } else {
            KeyBytes::Heap(b.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, data } => &data[..*len as usize],
            KeyBytes::Heap(b) => b,
        }
    }
}

impl Deref for KeyBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for KeyBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for KeyBytes {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for KeyBytes {
    fn from(b: &[u8]) -> Self {
        KeyBytes::new(b)
    }
}

impl From<Vec<u8>> for KeyBytes {
    fn from(b: Vec<u8>) -> Self {
        KeyBytes::new(&b)
    }
}

impl PartialEq for KeyBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for KeyBytes {}

impl PartialEq<[u8]> for KeyBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<&[u8]> for KeyBytes {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_bytes() == *other
    }
}

impl Hash for KeyBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap() {
        assert_eq!(std::mem::size_of::<KeyBytes>(), 24);
        let a = KeyBytes::new(b"short");
        assert!(matches!(a, KeyBytes::Inline { .. }));
        assert_eq!(&*a, b"short");
        let long = vec![b'x'; 40];
        let b = KeyBytes::new(&long);
        assert!(matches!(b, KeyBytes::Heap(_)));
        assert_eq!(&*b, &long[..]);
        assert_eq!(KeyBytes::new(b""), KeyBytes::new(b""));
    }
}
