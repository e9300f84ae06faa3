//! One client's tracking state beside its flag bits (`clients::flag::TRACKING*`): where
//! its invalidations go, and its BCAST prefixes.

use crate::clients::ClientInfo;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};

/// A field of `ClientInfo`.
#[derive(Default)]
pub struct ClientTracking {
    /// REDIRECT's client id (0: none).
    redirect: AtomicU64,
    /// That client, while it lives (a weak reference: two clients redirecting to each
    /// other must not keep each other alive).
    redirect_to: Mutex<Weak<ClientInfo>>,
    /// BCAST prefixes, in byte order (as Redis's radix tree lists them).
    prefixes: Mutex<Vec<Box<[u8]>>>,
}

impl ClientTracking {
    pub fn redirect(&self) -> u64 {
        self.redirect.load(Relaxed)
    }

    pub fn set_redirect(&self, id: u64, to: Option<&Arc<ClientInfo>>) {
        *self.redirect_to.lock() = to.map(Arc::downgrade).unwrap_or_default();
        self.redirect.store(id, Relaxed);
    }

    /// The redirect client, if it is still there.
    pub fn redirect_client(&self) -> Option<Arc<ClientInfo>> {
        self.redirect_to.lock().upgrade()
    }

    pub fn prefixes(&self) -> Vec<Box<[u8]>> {
        self.prefixes.lock().clone()
    }

    /// Add `p`; false if the client had it already.
    pub fn add_prefix(&self, p: &[u8]) -> bool {
        let mut v = self.prefixes.lock();
        match v.binary_search_by(|x| (**x).cmp(p)) {
            Ok(_) => false,
            Err(at) => {
                v.insert(at, p.into());
                true
            }
        }
    }

    pub fn take_prefixes(&self) -> Vec<Box<[u8]>> {
        std::mem::take(&mut *self.prefixes.lock())
    }
}

/// CLIENT TRACKING's options, parsed.
#[derive(Default, Debug)]
pub struct Options {
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Vec<u8>>,
}

/// Do `a` and `b` share their shorter one's length as a prefix (Redis's
/// stringCheckPrefix: both would invalidate the same keys)?
pub fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// Redis's checkPrefixCollisionsOrReply: the error for the first prefix that overlaps
/// one the client has, or another one given after it.
/// The prefixes are quoted as C strings (`%s`: up to a NUL), their bytes unchanged.
pub fn prefix_collision(existing: &[Box<[u8]>], given: &[Vec<u8>]) -> Option<Vec<u8>> {
    use crate::cmd::args::{c_str, error_text};
    const TAIL: &[u8] = b"'. Prefixes for a single client must not overlap.";
    for (i, p) in given.iter().enumerate() {
        if let Some(e) = existing.iter().find(|e| overlap(e, p)) {
            return Some(error_text(&[
                b"ERR Prefix '",
                c_str(p),
                b"' overlaps with an existing prefix '",
                c_str(e),
                TAIL,
            ]));
        }
        if let Some(q) = given[i + 1..].iter().find(|q| overlap(p, q)) {
            return Some(error_text(&[
                b"ERR Prefix '",
                c_str(p),
                b"' overlaps with another provided prefix '",
                c_str(q),
                TAIL,
            ]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collisions() {
        assert!(overlap(b"", b"abc"));
        assert!(overlap(b"ab", b"abc"));
        assert!(!overlap(b"ab", b"ac"));
        let have: Vec<Box<[u8]>> = vec![b"foo".as_slice().into()];
        let e = prefix_collision(&have, &[b"fo".to_vec()]).unwrap();
        let has = |e: &[u8], s: &str| e.windows(s.len()).any(|w| w == s.as_bytes());
        assert!(has(&e, "'fo' overlaps with an existing prefix 'foo'"));
        let e = prefix_collision(&[], &[b"a".to_vec(), b"b".to_vec(), b"ab".to_vec()]).unwrap();
        assert!(has(&e, "'a' overlaps with another provided prefix 'ab'"));
        assert!(prefix_collision(&have, &[b"bar".to_vec()]).is_none());
    }
}
