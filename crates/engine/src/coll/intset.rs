//! Redis's intset, byte for byte: a sorted array of integers of one width (2, 4 or 8 bytes,
//! widened when a value needs it), the encoding of small sets of integers.
//!
//! ```text
//! [encoding: u32 LE = width in bytes][length: u32 LE][values, ascending, LE]
//! ```

const HEADER: usize = 8;

#[derive(Clone, PartialEq, Eq)]
pub struct Intset {
    buf: Vec<u8>,
}

impl std::fmt::Debug for Intset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Default for Intset {
    fn default() -> Self {
        Self::new()
    }
}

fn width_for(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl Intset {
    pub fn new() -> Intset {
        let mut buf = Vec::with_capacity(HEADER);
        buf.extend_from_slice(&2u32.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        Intset { buf }
    }

    /// Adopt bytes from a DUMP payload or RDB file after checking them (a valid width,
    /// the length matching the size, values strictly ascending): None if malformed.
    pub fn from_bytes(buf: Vec<u8>) -> Option<Intset> {
        if buf.len() < HEADER {
            return None;
        }
        let w = u32::from_le_bytes(buf[0..4].try_into().ok()?) as usize;
        let n = u32::from_le_bytes(buf[4..8].try_into().ok()?) as usize;
        if !matches!(w, 2 | 4 | 8) || n.checked_mul(w)? + HEADER != buf.len() || n == 0 {
            return None;
        }
        let s = Intset { buf };
        let mut prev = None;
        for v in s.iter() {
            if prev.is_some_and(|p| p >= v) {
                return None;
            }
            prev = Some(v);
        }
        Some(s)
    }

    /// The exact bytes (what DUMP and RDB write).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes held by the allocation (at its size class).
    pub fn allocated(&self) -> usize {
        crate::mem::vec::<u8>(self.buf.capacity())
    }

    fn width(&self) -> usize {
        u32::from_le_bytes(self.buf[0..4].try_into().expect("4 bytes")) as usize
    }

    pub fn len(&self) -> usize {
        u32::from_le_bytes(self.buf[4..8].try_into().expect("4 bytes")) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at sorted position `i`.
    pub fn get(&self, i: usize) -> i64 {
        let w = self.width();
        let at = HEADER + i * w;
        let b = &self.buf[at..at + w];
        match w {
            2 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            4 => i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes"))),
            _ => i64::from_le_bytes(b.try_into().expect("8 bytes")),
        }
    }

    fn put(&mut self, i: usize, v: i64) {
        let w = self.width();
        let at = HEADER + i * w;
        let dst = &mut self.buf[at..at + w];
        match w {
            2 => dst.copy_from_slice(&(v as i16).to_le_bytes()),
            4 => dst.copy_from_slice(&(v as i32).to_le_bytes()),
            _ => dst.copy_from_slice(&v.to_le_bytes()),
        }
    }

    fn set_len(&mut self, n: usize) {
        self.buf[4..8].copy_from_slice(&(n as u32).to_le_bytes());
    }

    /// Ok(position) if present, Err(insertion point) if not.
    fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn contains(&self, v: i64) -> bool {
        width_for(v) <= self.width() && self.search(v).is_ok()
    }

    /// Add `v`; false if it was there.
    pub fn insert(&mut self, v: i64) -> bool {
        if width_for(v) > self.width() {
            self.upgrade(width_for(v));
        }
        let pos = match self.search(v) {
            Ok(_) => return false,
            Err(p) => p,
        };
        let w = self.width();
        let n = self.len();
        crate::mem::reserve_in_class(&mut self.buf, w);
        let at = HEADER + pos * w;
        let old_len = self.buf.len();
        self.buf.resize(old_len + w, 0);
        self.buf.copy_within(at..old_len, at + w);
        self.set_len(n + 1);
        self.put(pos, v);
        true
    }

    /// Remove `v`; false if it was not there.
    pub fn remove(&mut self, v: i64) -> bool {
        if width_for(v) > self.width() {
            return false;
        }
        match self.search(v) {
            Ok(pos) => {
                let w = self.width();
                let n = self.len();
                let at = HEADER + pos * w;
                self.buf.drain(at..at + w);
                crate::mem::shrink_to_class(&mut self.buf);
                self.set_len(n - 1);
                true
            }
            Err(_) => false,
        }
    }

    /// Widen every value to `w` bytes (intsetUpgradeAndAdd's first half).
    fn upgrade(&mut self, w: usize) {
        let vals: Vec<i64> = self.iter().collect();
        let mut buf = Vec::with_capacity(HEADER + (vals.len() + 1) * w);
        buf.extend_from_slice(&(w as u32).to_le_bytes());
        buf.extend_from_slice(&(vals.len() as u32).to_le_bytes());
        buf.resize(HEADER + vals.len() * w, 0);
        self.buf = buf;
        for (i, v) in vals.into_iter().enumerate() {
            self.put(i, v);
        }
    }

    /// Values in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = i64> + ExactSizeIterator + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// The encoded size in bytes (intsetBlobLen).
    pub fn bytes_len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_bytes_and_upgrade() {
        let mut s = Intset::new();
        assert!(s.insert(3));
        assert!(s.insert(1));
        assert!(!s.insert(3));
        assert_eq!(s.as_bytes(), &[2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 3, 0]);
        assert!(s.insert(70000));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1, 3, 70000]);
        assert_eq!(s.as_bytes()[0], 4);
        assert!(s.insert(i64::MIN));
        assert_eq!(s.get(0), i64::MIN);
        assert!(s.contains(70000) && !s.contains(2) && !s.contains(i64::MAX));
        assert!(s.remove(3) && !s.remove(3));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![i64::MIN, 1, 70000]);
        let copy = Intset::from_bytes(s.as_bytes().to_vec()).expect("valid");
        assert_eq!(copy, s);
        let mut bad = s.as_bytes().to_vec();
        bad[16..24].copy_from_slice(&i64::MAX.to_le_bytes()); // no longer sorted
        assert!(Intset::from_bytes(bad).is_none());
        let mut dup = s.as_bytes().to_vec();
        dup[16..24].copy_from_slice(&i64::MIN.to_le_bytes()); // a duplicate
        assert!(Intset::from_bytes(dup).is_none());
    }
}
