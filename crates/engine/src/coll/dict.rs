//! The large hash and set encodings' table, as Redis's dict: chained, with a power of two
//! of buckets, rehashed incrementally (a growing or shrinking table keeps its old buckets
//! beside the new ones and moves a few per write, looking in both meanwhile, so a resize
//! of a big table is no pause), so that HSCAN can walk it with Redis's reverse-binary
//! cursor. Its entries live in one dense chunked array ([`Chunked`]: growing never copies
//! them): a random entry is one random index away, and a removal moves the last entry
//! into the freed index (SSCAN's downward walk relies on that).
//!
//! Memory per entry: the item, its 4-byte hash and 4-byte chain link, and a 4-byte
//! bucket head at a load between 1/2 and 1 (up to 1/8 after removals).

use super::chunked::Chunked;
use std::hash::BuildHasher;

/// A link (a bucket head or a slot's `next`): slot index + 1, so that the empty link is 0
/// and a new bucket array is zeroed memory (no pass over it to fill).
const NIL: u32 = 0;

fn link(slot: usize) -> u32 {
    slot as u32 + 1
}

fn slot_of(link: u32) -> usize {
    link as usize - 1
}

const MIN_BUCKETS: usize = 4;

/// `n` empty buckets (zeroed memory: a big array is not touched until used).
fn no_buckets(n: usize) -> Box<[u32]> {
    vec![NIL; n].into_boxed_slice()
}

/// Buckets moved per write while rehashing, and empty buckets looked at (as Redis's
/// dictRehash(d, 1) with its `empty_visits`, times four: a rehash always ends before
/// the table needs the next one).
const REHASH_BUCKETS: usize = 4;
const REHASH_EMPTY_VISITS: usize = 40;

/// The most entries a table holds (links are 4 bytes, 0 is the empty link).
pub const MAX_ENTRIES: usize = u32::MAX as usize - 1;

/// The hash of a key (a seeded foldhash, folded to 32 bits).
#[inline]
pub fn hash_key(key: &[u8]) -> u32 {
    static STATE: std::sync::OnceLock<foldhash::fast::FixedState> = std::sync::OnceLock::new();
    let h = STATE
        .get_or_init(|| foldhash::fast::FixedState::with_seed(rand::random()))
        .hash_one(key);
    (h ^ (h >> 32)) as u32
}

/// What a table holds: an item with the key it is found by.
pub trait Keyed {
    fn key(&self) -> &[u8];
}

#[derive(Clone)]
struct Slot<T> {
    item: T,
    hash: u32,
    next: u32,
}

/// Entries per chunk of the slot array: 1,024.
const SLOT_CHUNK_BITS: u32 = 10;

type Slots<T> = Chunked<Slot<T>, SLOT_CHUNK_BITS>;

#[derive(Clone)]
pub struct Dict<T> {
    /// Head link of each bucket (NIL = empty); the length is a power of two. New
    /// entries go here.
    buckets: Box<[u32]>,
    /// While rehashing: the previous buckets, moved into `buckets` a few per write;
    /// empty otherwise.
    old: Box<[u32]>,
    /// Old buckets before this one have been moved.
    moved: usize,
    slots: Slots<T>,
}

impl<T: Keyed> Default for Dict<T> {
    fn default() -> Self {
        Dict::new()
    }
}

/// In the chain starting at `heads[b]`, make the link that points at `from` point at
/// `to`; false if `from` is not in that chain.
fn relink_chain<T>(heads: &mut [u32], slots: &mut Slots<T>, b: usize, from: u32, to: u32) -> bool {
    if heads[b] == from {
        heads[b] = to;
        return true;
    }
    let mut at = heads[b];
    while at != NIL {
        let s = &mut slots[slot_of(at)];
        if s.next == from {
            s.next = to;
            return true;
        }
        at = s.next;
    }
    false
}

impl<T: Keyed> Dict<T> {
    pub fn new() -> Dict<T> {
        Dict {
            buckets: no_buckets(MIN_BUCKETS),
            old: Box::default(),
            moved: 0,
            slots: Slots::new(),
        }
    }

    /// Buckets for `n` entries, and room for them in the first chunk of slots.
    pub fn with_capacity(n: usize) -> Dict<T> {
        let mut t = Dict::new();
        t.buckets = no_buckets(n.next_power_of_two().max(MIN_BUCKETS));
        t.slots.reserve_first(n);
        t
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn is_rehashing(&self) -> bool {
        !self.old.is_empty()
    }

    /// Buckets for `n` entries in all, at once (finishing a rehash under way): for a
    /// table about to be filled to a known size, not for one that grows a bit at a time.
    pub fn reserve(&mut self, n: usize) {
        let want = n.next_power_of_two();
        if want > self.buckets.len() {
            self.start_rehash(want);
            self.finish_rehash();
        }
        self.slots.reserve_first(n);
    }

    /// Slot index of the entry keyed `key` (of hash `hash`), if present (in the old
    /// buckets or the new).
    #[inline]
    pub fn find(&self, key: &[u8], hash: u32) -> Option<usize> {
        let new = self.buckets[hash as usize & (self.buckets.len() - 1)];
        let old = match self.old.len() {
            0 => NIL,
            n => self.old[hash as usize & (n - 1)],
        };
        for head in [old, new] {
            let mut at = head;
            while at != NIL {
                let s = &self.slots[slot_of(at)];
                if s.hash == hash && s.item.key() == key {
                    return Some(slot_of(at));
                }
                at = s.next;
            }
        }
        None
    }

    /// The entry at slot `i` (`i < len`): slots are dense, so a uniformly random index is
    /// a uniformly random entry.
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        &self.slots[i].item
    }

    /// The entry at slot `i`, to change in place (its key must stay the same).
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.slots[i].item
    }

    /// Add an entry whose key (of hash `hash`) is absent; returns its slot index.
    /// Panics past [`MAX_ENTRIES`]: callers that take entries from the network check
    /// `len` first.
    pub fn insert_new(&mut self, item: T, hash: u32) -> usize {
        let idx = self.slots.len();
        assert!(idx < MAX_ENTRIES, "table full");
        self.rehash_step();
        if idx >= self.buckets.len() {
            self.start_rehash(self.buckets.len() * 2);
        }
        let b = hash as usize & (self.buckets.len() - 1);
        self.slots.push(Slot {
            item,
            hash,
            next: self.buckets[b],
        });
        self.buckets[b] = link(idx);
        idx
    }

    /// Remove and return the entry at slot `i` (`i < len`): the last entry moves into
    /// slot `i`.
    pub fn remove_at(&mut self, i: usize) -> T {
        let (hash, next) = (self.slots[i].hash, self.slots[i].next);
        self.relink(hash, link(i), next);
        let last = self.slots.len() - 1;
        if i != last {
            // The last slot moves into `i`: repoint the link that named it.
            let h = self.slots[last].hash;
            self.relink(h, link(last), link(i));
        }
        let item = self.slots.swap_remove(i).item;
        self.rehash_step();
        let n = self.slots.len();
        if self.buckets.len() > MIN_BUCKETS && n * 8 < self.buckets.len() {
            self.start_rehash((n * 2).next_power_of_two().max(MIN_BUCKETS));
        }
        item
    }

    /// Make the link to slot `from` (of hash `hash`) point at `to`, in whichever table
    /// holds it.
    fn relink(&mut self, hash: u32, from: u32, to: u32) {
        if !self.old.is_empty() {
            let b = hash as usize & (self.old.len() - 1);
            if relink_chain(&mut self.old, &mut self.slots, b, from, to) {
                return;
            }
        }
        let b = hash as usize & (self.buckets.len() - 1);
        let found = relink_chain(&mut self.buckets, &mut self.slots, b, from, to);
        assert!(found, "slot not in its bucket's chain");
    }

    /// Begin moving every entry to `n` buckets (finishing a rehash under way first).
    fn start_rehash(&mut self, n: usize) {
        self.finish_rehash();
        if n == self.buckets.len() {
            return;
        }
        self.old = std::mem::replace(&mut self.buckets, no_buckets(n));
        self.moved = 0;
    }

    fn finish_rehash(&mut self) {
        while self.is_rehashing() {
            self.rehash_step();
        }
    }

    /// Move a few old buckets into the new ones.
    fn rehash_step(&mut self) {
        if self.old.is_empty() {
            return;
        }
        let mask = self.buckets.len() - 1;
        let (mut done, mut empty) = (0, 0);
        while done < REHASH_BUCKETS && self.moved < self.old.len() {
            let mut at = std::mem::replace(&mut self.old[self.moved], NIL);
            self.moved += 1;
            if at == NIL {
                empty += 1;
                if empty >= REHASH_EMPTY_VISITS {
                    break;
                }
                continue;
            }
            while at != NIL {
                let s = &mut self.slots[slot_of(at)];
                let next = s.next;
                let b = s.hash as usize & mask;
                s.next = self.buckets[b];
                self.buckets[b] = at;
                at = next;
            }
            done += 1;
        }
        if self.moved == self.old.len() {
            self.old = Box::default();
            self.moved = 0;
        }
    }

    /// Every entry, in slot order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    fn visit_chain(&self, mut at: u32, visit: &mut impl FnMut(&T)) {
        while at != NIL {
            let s = &self.slots[slot_of(at)];
            visit(&s.item);
            at = s.next;
        }
    }

    /// One step of a reverse-binary cursor scan (Redis's dictScan): visits every entry in
    /// the bucket `cursor` designates (while rehashing: in the smaller table's bucket and
    /// in every bucket of the larger table that it expands to), and returns the next
    /// cursor (0 when the walk is done).
    pub fn scan_bucket(&self, cursor: u64, mut visit: impl FnMut(&T)) -> u64 {
        super::dict_scan::step(cursor, self.buckets.len(), self.old.len(), |old, i| {
            let t = if old { &self.old } else { &self.buckets };
            self.visit_chain(t[i], &mut visit);
        })
    }

    /// Bytes held beyond the table itself: the bucket arrays and the slot chunks (not
    /// what the items hold on the heap).
    pub fn allocated(&self) -> usize {
        use crate::mem;
        mem::vec::<u32>(self.buckets.len())
            + mem::vec::<u32>(self.old.len())
            + self.slots.allocated()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    impl Keyed for Vec<u8> {
        fn key(&self) -> &[u8] {
            self
        }
    }

    fn insert(t: &mut Dict<Vec<u8>>, k: &[u8]) -> bool {
        let h = hash_key(k);
        if t.find(k, h).is_some() {
            return false;
        }
        t.insert_new(k.to_vec(), h);
        true
    }

    fn remove(t: &mut Dict<Vec<u8>>, k: &[u8]) -> bool {
        match t.find(k, hash_key(k)) {
            Some(i) => {
                t.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// Grow past several doublings, shrink back, grow again, against a HashSet; every
    /// link checked at each resize boundary.
    #[test]
    fn model_through_resizes() {
        let mut t: Dict<Vec<u8>> = Dict::new();
        let mut m: HashSet<Vec<u8>> = HashSet::new();
        let mut seed = 99u64;
        let mut rehashing = 0;
        for round in 0..3 {
            let (lo, hi) = (round * 10_000, round * 10_000 + 6_000);
            for i in lo..hi {
                let k = format!("k{i}").into_bytes();
                assert_eq!(insert(&mut t, &k), m.insert(k));
                rehashing += t.is_rehashing() as usize;
            }
            // remove all but ~1/20 in a pseudo-random order, the rest via remove_at
            let keys: Vec<Vec<u8>> = m.iter().cloned().collect();
            for k in keys {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if (seed >> 33).is_multiple_of(20) {
                    continue;
                }
                if (seed >> 40).is_multiple_of(2) {
                    assert_eq!(remove(&mut t, &k), m.remove(&k));
                } else if !t.is_empty() {
                    let i = (seed >> 20) as usize % t.len();
                    let got = t.remove_at(i);
                    assert!(m.remove(&got));
                }
                rehashing += t.is_rehashing() as usize;
                assert_eq!(t.len(), m.len());
            }
            for k in &m {
                assert!(t.find(k, hash_key(k)).is_some());
            }
            assert!(!remove(&mut t, b"absent"));
            let all: HashSet<Vec<u8>> = t.iter().cloned().collect();
            assert_eq!(all, m);
        }
        assert!(rehashing > 1000);
    }
}
