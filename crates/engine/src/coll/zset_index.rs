//! The skiplist's member index: an open-addressing table (linear probing, backward-shift
//! deletion) of node numbers, each slot with 32 bits of its member's hash. Members stay
//! reachable from their home slot (`hash & mask`), so ZSCAN can walk home slots in Redis's
//! reverse-binary cursor order: every member present for the whole iteration is returned
//! at least once whatever the table does in between (grow, shrink, move entries), and each
//! call costs what it returns.
//!
//! Resizing is incremental, as Redis's dict rehashes: a resize allocates the new slot
//! array and keeps the old one beside it; each insert or remove then moves the old
//! array's entries over a run at a time (a run: consecutive full slots, ended by an empty
//! one), from slot 0 up. Moving whole runs keeps every probe sequence left in the old
//! array unbroken, and leaves every old slot below `moved` empty: a member whose old home
//! slot is below `moved` lives in the new array only. A lookup probes the new array, then
//! the old one when the member's old home has not been passed. New members go to the new
//! array. A resize finishes the one under way first (the pace below makes that rare).

/// A slot: 0 when empty, else the member's hash tag in the high 32 bits and its node
/// number plus one in the low 32 (so a fresh array is zeroed memory, which the allocator
/// hands out without writing it).
type Word = u64;
const EMPTY: Word = 0;
const MIN_CAP: usize = 8;
/// Old slots looked at per insert or remove while a resize is under way (the run in
/// progress is always finished). A growth at load 0.8 to twice the slots has 0.8x the old
/// slot count of inserts before the next; a shrink (below 1/8) to at most half the new
/// slots has at least 1/16 of the old slot count of removes. Tests use a slower pace so
/// that operations land mid-move and a resize sometimes has to finish the one before.
const STEP_SLOTS: usize = if cfg!(test) { 3 } else { 32 };
/// A new array this small is filled at once: moving it costs no more than a few steps.
const AT_ONCE: usize = if cfg!(test) { MIN_CAP } else { 1024 };

#[inline]
fn word(tag: u32, node: u32) -> Word {
    debug_assert!(node < u32::MAX);
    (Word::from(tag) << 32) | Word::from(node + 1)
}

#[inline]
fn node_of(w: Word) -> u32 {
    (w as u32).wrapping_sub(1)
}

#[inline]
fn tag_of(w: Word) -> u32 {
    (w >> 32) as u32
}

/// The slot of the first entry of `tag`'s probe sequence in `t` that `hit` accepts.
#[inline]
fn probe(t: &[Word], tag: u32, hit: impl Fn(Word) -> bool) -> Option<usize> {
    let mask = t.len().wrapping_sub(1);
    let mut i = tag as usize & mask;
    loop {
        let w = *t.get(i)?;
        if w == EMPTY {
            return None;
        }
        if hit(w) {
            return Some(i);
        }
        i = (i + 1) & mask;
    }
}

/// Put `w` in the first empty slot of its probe sequence (`t` is never full).
fn place(t: &mut [Word], w: Word) {
    let mask = t.len() - 1;
    let mut i = tag_of(w) as usize & mask;
    while t[i] != EMPTY {
        i = (i + 1) & mask;
    }
    t[i] = w;
}

/// Empty slot `i` of `t` by backward-shift deletion: later entries of its run move into
/// the hole when their home slot does not lie cyclically in (hole, j].
fn delete_at(t: &mut [Word], i: usize) {
    let mask = t.len() - 1;
    let mut hole = i;
    let mut j = i;
    loop {
        j = (j + 1) & mask;
        let w = t[j];
        if w == EMPTY {
            break;
        }
        let home = tag_of(w) as usize & mask;
        let between = if hole <= j {
            hole < home && home <= j
        } else {
            hole < home || home <= j
        };
        if !between {
            t[hole] = w;
            hole = j;
        }
    }
    t[hole] = EMPTY;
}

/// Calls `f` with every node of `t` whose home slot is `home`.
fn visit_home(t: &[Word], home: usize, f: &mut impl FnMut(u32)) {
    let mask = t.len() - 1;
    let mut i = home;
    loop {
        let w = t[i];
        if w == EMPTY {
            return;
        }
        if tag_of(w) as usize & mask == home {
            f(node_of(w));
        }
        i = (i + 1) & mask;
        if i == home {
            return;
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct MemberIndex {
    /// The slots (a power of two, or none yet); new entries go here.
    slots: Vec<Word>,
    /// While a resize is under way: the previous slots, emptied into `slots` a run at a
    /// time; empty otherwise.
    old: Vec<Word>,
    /// Every slot of `old` below this one is empty, its entries moved.
    moved: usize,
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

    /// Is a resize under way (two slot arrays)?
    pub fn is_moving(&self) -> bool {
        !self.old.is_empty()
    }

    /// May the old array hold an entry of `tag` (its old home not yet passed)?
    #[inline]
    fn old_may_hold(&self, tag: u32) -> bool {
        !self.old.is_empty() && tag as usize & (self.old.len() - 1) >= self.moved
    }

    /// The node whose member has hash tag `tag` and satisfies `eq`.
    #[inline]
    pub fn find(&self, tag: u32, eq: impl Fn(u32) -> bool) -> Option<u32> {
        let hit = |w: Word| tag_of(w) == tag && eq(node_of(w));
        if let Some(i) = probe(&self.slots, tag, hit) {
            return Some(node_of(self.slots[i]));
        }
        if self.old_may_hold(tag) {
            return probe(&self.old, tag, hit).map(|i| node_of(self.old[i]));
        }
        None
    }

    /// Add `node` (not present) under `tag`.
    pub fn insert(&mut self, tag: u32, node: u32) {
        self.step();
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.resize((self.slots.len() * 2).max(MIN_CAP));
        }
        place(&mut self.slots, word(tag, node));
        self.len += 1;
    }

    /// Remove `node` (stored under `tag`); false if it is not there.
    pub fn remove(&mut self, tag: u32, node: u32) -> bool {
        let w = word(tag, node);
        if let Some(i) = probe(&self.slots, tag, |s| s == w) {
            delete_at(&mut self.slots, i);
        } else if let Some(i) = self
            .old_may_hold(tag)
            .then(|| probe(&self.old, tag, |s| s == w))
            .flatten()
        {
            delete_at(&mut self.old, i);
        } else {
            return false;
        }
        self.len -= 1;
        self.step();
        if !self.is_moving() && self.slots.len() > MIN_CAP && self.len * 8 < self.slots.len() {
            // Load at most 1/2 after the shrink.
            self.resize((self.len * 2).next_power_of_two().max(MIN_CAP));
        }
        true
    }

    /// Begin moving every entry to `cap` slots (finishing a resize under way first).
    fn resize(&mut self, cap: usize) {
        self.finish();
        if cap == self.slots.len() {
            return;
        }
        self.old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        self.moved = 0;
        if self.old.len() <= AT_ONCE {
            self.finish();
        }
    }

    fn finish(&mut self) {
        while self.is_moving() {
            self.move_runs();
        }
    }

    /// A step of the resize under way, if any.
    #[inline]
    fn step(&mut self) {
        if self.is_moving() {
            self.move_runs();
        }
    }

    /// Move the runs of at least `STEP_SLOTS` old slots (all that is left when fewer).
    #[inline(never)]
    fn move_runs(&mut self) {
        let end = self.old.len();
        let budget = (self.moved + STEP_SLOTS).min(end);
        while self.moved < budget || (self.moved < end && self.old[self.moved] != EMPTY) {
            let w = std::mem::replace(&mut self.old[self.moved], EMPTY);
            if w != EMPTY {
                place(&mut self.slots, w);
            }
            self.moved += 1;
        }
        if self.moved == end {
            self.old = Vec::new();
            self.moved = 0;
        }
    }

    /// Every node (the new array's in slot order, then the old array's).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .chain(&self.old)
            .filter(|&&w| w != EMPTY)
            .map(|&w| node_of(w))
    }

    /// One step of a scan: calls `f` with every node whose home slot is the one `cursor`
    /// names, and returns the next cursor (0 when the walk is complete), as dictScan.
    /// While a resize is under way: the home slot in the smaller array, then every home
    /// slot of the larger array that expands from it.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(u32)) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        super::dict_scan::step(cursor, self.slots.len(), self.old.len(), |old, home| {
            visit_home(if old { &self.old } else { &self.slots }, home, &mut f);
        })
    }

    /// Bytes held by the slot arrays.
    pub fn footprint(&self) -> usize {
        crate::mem::vec::<Word>(self.slots.capacity())
            + crate::mem::vec::<Word>(self.old.capacity())
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

    /// The layout's invariants: old slots below `moved` are empty, every entry is reached
    /// from its home slot by its probe sequence, and `len` counts both arrays.
    fn check_layout(ix: &MemberIndex) {
        assert!(ix.old[..ix.moved].iter().all(|&w| w == EMPTY));
        for t in [&ix.slots, &ix.old] {
            for (i, &w) in t.iter().enumerate() {
                if w != EMPTY {
                    assert_eq!(probe(t, tag_of(w), |s| s == w), Some(i));
                }
            }
        }
        assert_eq!(ix.iter().count(), ix.len());
    }

    /// Adds (mostly) for the first half of the operations and removes (mostly) for the
    /// second, so the table grows and shrinks through several resizes, with finds, adds
    /// and removes landing while entries are being moved.
    fn run_model(ops: &[(u8, u32)]) -> usize {
        let mut ix = MemberIndex::new();
        let mut model: HashMap<u32, u32> = HashMap::new();
        let mut mid_move = 0;
        for (k, &(op, n)) in ops.iter().enumerate() {
            let t = tag(n);
            let growing = k < ops.len() / 2;
            mid_move += usize::from(ix.is_moving());
            match op {
                0..=6 if growing => {
                    if let std::collections::hash_map::Entry::Vacant(e) = model.entry(n) {
                        e.insert(t);
                        ix.insert(t, n);
                    }
                }
                0..=6 => assert_eq!(ix.remove(t, n), model.remove(&n).is_some()),
                7 if !growing => {
                    if let std::collections::hash_map::Entry::Vacant(e) = model.entry(n) {
                        e.insert(t);
                        ix.insert(t, n);
                    }
                }
                7 => assert_eq!(ix.remove(t, n), model.remove(&n).is_some()),
                _ => {}
            }
            assert_eq!(ix.len(), model.len());
            for m in [n, n ^ 1, n / 2] {
                assert_eq!(ix.find(tag(m), |x| x == m), model.get(&m).map(|_| m));
            }
            if k % 64 == 0 {
                check_layout(&ix);
            }
        }
        check_layout(&ix);
        for n in 0..800 {
            assert_eq!(
                ix.find(tag(n), |x| x == n).is_some(),
                model.contains_key(&n)
            );
        }
        let mut all: Vec<u32> = ix.iter().collect();
        all.sort_unstable();
        let mut want: Vec<u32> = model.keys().copied().collect();
        want.sort_unstable();
        assert_eq!(all, want);
        mid_move
    }

    #[test]
    fn operations_land_mid_move() {
        let ops: Vec<(u8, u32)> = (0..3000u32)
            .map(|i| ((i % 9) as u8, i.wrapping_mul(7919) % 800))
            .collect();
        assert!(run_model(&ops) > 100, "no operation met a resize under way");
    }

    /// Two members a scan must see, while the table grows from nothing past 4,000
    /// members and is emptied again between its steps: steps meet both arrays.
    #[test]
    fn scan_across_growth_and_shrink() {
        let mut ix = MemberIndex::new();
        ix.insert(tag(1), 1);
        ix.insert(tag(2), 2);
        let (mut seen, mut cursor, mut k, mut both) = (HashSet::new(), 0u64, 10u32, 0);
        loop {
            both += usize::from(ix.is_moving());
            cursor = ix.scan_step(cursor, |n| {
                seen.insert(n);
            });
            for _ in 0..4 {
                if k < 4000 {
                    ix.insert(tag(k), k);
                } else if k < 8000 {
                    assert!(ix.remove(tag(k - 3990), k - 3990));
                }
                k += 1;
            }
            if cursor == 0 {
                break;
            }
        }
        assert!(seen.contains(&1) && seen.contains(&2));
        assert!(both > 0);
    }

    proptest::proptest! {
        #[test]
        fn model(ops in proptest::collection::vec((0u8..9, 0u32..800), 1..1500)) {
            run_model(&ops);
        }

        /// Members present for a whole scan are seen, while others come and go and the
        /// table grows and shrinks between steps (with resizes under way).
        #[test]
        fn scan_sees_every_stable_member(churn in proptest::collection::vec((0u8..4, 1000u32..3000), 0..3000), stable in 1u32..300, per_step in 1usize..12) {
            let mut ix = MemberIndex::new();
            for n in 0..stable {
                ix.insert(tag(n), n);
            }
            let mut seen = HashSet::new();
            let mut present: HashSet<u32> = HashSet::new();
            let mut cursor = 0u64;
            let half = churn.len() / 2;
            let mut ops = churn.into_iter().enumerate();
            loop {
                cursor = ix.scan_step(cursor, |n| { seen.insert(n); });
                for (k, (op, n)) in ops.by_ref().take(per_step) {
                    // Adds (mostly) first, then removes (mostly).
                    if (op == 0) != (k < half) {
                        if present.insert(n) { ix.insert(tag(n), n); }
                    } else if present.remove(&n) {
                        assert!(ix.remove(tag(n), n));
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
            for n in 0..stable {
                proptest::prop_assert!(seen.contains(&n), "member {} missed", n);
            }
            for n in &seen {
                proptest::prop_assert!(*n < stable || (1000..3000).contains(n));
            }
        }
    }
}
