//! Which shards of a database hold keys with a TTL, readable without any shard lock: one
//! bit per shard, so the active expiry cycle skips a database, or a shard, with none
//! without locking it.
//!
//! A shard's TTL index ([`crate::shard`]'s `Expires`) sets or clears its bit when it goes
//! from or to empty, under the shard's lock (one writer per bit at a time, so the bit is
//! exact); a reader may see it a moment late, and the cycle then finds the shard on its
//! next pass. A shard keeps no pointer to its bit: whoever modifies a shard holds it by
//! its index in its database, and hands the shard a [`TtlBit`] with each change that may
//! flip it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One database's bits (shard `i` is bit `i % 64` of word `i / 64`).
pub struct TtlMap {
    words: Box<[AtomicU64]>,
}

impl TtlMap {
    pub fn new(shards: usize) -> TtlMap {
        TtlMap {
            words: (0..shards.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Does shard `i` hold keys with a TTL?
    #[inline]
    pub fn has(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w.load(Relaxed) & (1 << (i % 64)) != 0)
    }

    /// Does any shard?
    pub fn any(&self) -> bool {
        self.words.iter().any(|w| w.load(Relaxed) != 0)
    }

    fn set(&self, i: usize, on: bool) {
        let Some(w) = self.words.get(i / 64) else {
            return;
        };
        let bit = 1 << (i % 64);
        if on {
            w.fetch_or(bit, Relaxed);
        } else {
            w.fetch_and(!bit, Relaxed);
        }
    }
}

/// A shard's bit: its database's [`TtlMap`] and its index there ([`TtlBit::NONE`]: a
/// shard of its own, in tests and file writers).
#[derive(Clone, Copy)]
pub(crate) struct TtlBit<'a> {
    map: Option<&'a TtlMap>,
    index: usize,
}

impl<'a> TtlBit<'a> {
    #[cfg(test)]
    pub(crate) const NONE: TtlBit<'static> = TtlBit {
        map: None,
        index: 0,
    };

    pub(crate) fn new(map: &'a TtlMap, index: usize) -> TtlBit<'a> {
        TtlBit {
            map: Some(map),
            index,
        }
    }

    /// The shard's TTL index is now empty (`false`) or not.
    #[inline]
    pub(crate) fn set(self, has_keys: bool) {
        if let Some(m) = self.map {
            m.set(self.index, has_keys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits() {
        let m = TtlMap::new(130);
        assert!(!m.any());
        let (a, b) = (TtlBit::new(&m, 3), TtlBit::new(&m, 129));
        a.set(true);
        b.set(true);
        assert!(m.has(3) && m.has(129) && !m.has(4) && !m.has(64) && !m.has(1000));
        a.set(false);
        assert!(!m.has(3) && m.any());
        b.set(false);
        assert!(!m.any());
        TtlBit::NONE.set(true);
    }
}
