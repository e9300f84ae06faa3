//! The skiplist's member index: an open-addressing table (linear probing, backward-shift
//! deletion) of node numbers, each slot with 32 bits of its member's hash. Members stay
//! reachable from their home slot (`hash & mask`), so ZSCAN can walk home slots in Redis's
//! reverse-binary cursor order: every member present for the whole iteration is returned
//! at least once whatever the table does in between (grow, shrink, move entries), and each
//! call costs what it returns.

const EMPTY: u32 = u32::MAX;
const MIN_CAP: usize = 8;

#[derive(Clone, Copy, Debug)]
struct Slot {
    node: u32,
    tag: u32,
}

const FREE: Slot = Slot {
    node: EMPTY,
    tag: 0,
};

#[derive(Clone, Debug, Default)]
pub struct MemberIndex {
    slots: Vec<Slot>,
    len: usize,
}

impl MemberIndex {
    pub fn new() -> MemberIndex {
        MemberIndex::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// The node whose member has hash tag `tag` and satisfies `eq`.
    #[inline]
    pub fn find(&self, tag: u32, eq: impl Fn(u32) -> bool) -> Option<u32> {
        self.slot_of(tag, |s| s.tag == tag && eq(s.node))
            .map(|i| self.slots[i].node)
    }

    /// The slot of the first entry of `tag`'s probe sequence that `hit` accepts.
    #[inline]
    fn slot_of(&self, tag: u32, hit: impl Fn(Slot) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = tag as usize & mask;
        loop {
            let s = self.slots[i];
            if s.node == EMPTY {
                return None;
            }
            if hit(s) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Add `node` (not present) under `tag`.
    pub fn insert(&mut self, tag: u32, node: u32) {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.resize((self.slots.len() * 2).max(MIN_CAP));
        }
        self.place(Slot { node, tag });
        self.len += 1;
    }

    fn place(&mut self, s: Slot) {
        let mask = self.mask();
        let mut i = s.tag as usize & mask;
        while self.slots[i].node != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }

    fn resize(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![FREE; cap]);
        for s in old {
            if s.node != EMPTY {
                self.place(s);
            }
        }
    }

    /// Remove `node` (stored under `tag`); false if it is not there.
    pub fn remove(&mut self, tag: u32, node: u32) -> bool {
        let Some(i) = self.slot_of(tag, |s| s.node == node) else {
            return false;
        };
        let mask = self.mask();
        // Backward-shift deletion: pull later entries of the cluster into the hole when
        // their home slot does not lie cyclically in (hole, j].
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.node == EMPTY {
                break;
            }
            let home = s.tag as usize & mask;
            let between = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !between {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = FREE;
        self.len -= 1;
        if self.slots.len() > MIN_CAP && self.len * 8 < self.slots.len() {
            self.resize((self.slots.len() / 2).max(MIN_CAP));
        }
        true
    }

    /// Every node, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .filter(|s| s.node != EMPTY)
            .map(|s| s.node)
    }

    /// One step of a scan: calls `f` with every node whose home slot is the one `cursor`
    /// names, and returns the next cursor (0 when the walk is complete), as dictScan.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(u32)) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.mask();
        let home = cursor as usize & mask;
        let mut i = home;
        loop {
            let s = self.slots[i];
            if s.node == EMPTY {
                break;
            }
            if s.tag as usize & mask == home {
                f(s.node);
            }
            i = (i + 1) & mask;
            if i == home {
                break;
            }
        }
        let mut v = cursor | !(mask as u64);
        v = v.reverse_bits().wrapping_add(1).reverse_bits();
        v
    }

    /// Bytes held by the table.
    pub fn footprint(&self) -> usize {
        crate::mem::vec::<Slot>(self.slots.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn tag(n: u32) -> u32 {
        // Deliberately clustered tags to exercise probing and wrap-around.
        n.wrapping_mul(2654435761) >> 3 | (n & 7)
    }

    proptest::proptest! {
        #[test]
        fn model(ops in proptest::collection::vec((proptest::bool::ANY, 0u32..200), 1..600)) {
            let mut ix = MemberIndex::new();
            let mut model: HashMap<u32, u32> = HashMap::new();
            for (add, n) in ops {
                let t = tag(n);
                if add {
                    if let std::collections::hash_map::Entry::Vacant(e) = model.entry(n) {
                        e.insert(t);
                        ix.insert(t, n);
                    }
                } else {
                    assert_eq!(ix.remove(t, n), model.remove(&n).is_some());
                }
                assert_eq!(ix.len(), model.len());
            }
            for n in 0..200 {
                assert_eq!(ix.find(tag(n), |x| x == n).is_some(), model.contains_key(&n));
            }
            let mut all: Vec<u32> = ix.iter().collect();
            all.sort_unstable();
            let mut want: Vec<u32> = model.keys().copied().collect();
            want.sort_unstable();
            assert_eq!(all, want);
        }

        /// Members present for a whole scan are seen, while others come and go and the
        /// table grows and shrinks between steps.
        #[test]
        fn scan_sees_every_stable_member(churn in proptest::collection::vec((proptest::bool::ANY, 1000u32..3000), 0..2000), stable in 1u32..300) {
            let mut ix = MemberIndex::new();
            for n in 0..stable {
                ix.insert(tag(n), n);
            }
            let mut seen = HashSet::new();
            let mut present: HashSet<u32> = HashSet::new();
            let mut cursor = 0u64;
            let mut ops = churn.into_iter();
            loop {
                cursor = ix.scan_step(cursor, |n| { seen.insert(n); });
                for (add, n) in ops.by_ref().take(7) {
                    if add {
                        if present.insert(n) { ix.insert(tag(n), n); }
                    } else if present.remove(&n) {
                        ix.remove(tag(n), n);
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
            for n in 0..stable {
                assert!(seen.contains(&n), "member {n} missed");
            }
        }
    }
}
