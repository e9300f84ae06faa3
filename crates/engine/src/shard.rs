//! One shard: a hash table of entries plus the keys that carry a TTL.

pub use crate::entry::{Entry, NO_EXPIRE};
use crate::expiry::OnExpired;
use crate::ttl_map::TtlBit;
use hashbrown::hash_table::Entry as Slot;
use hashbrown::HashTable;
use indexmap::IndexSet;
use rand::Rng;

/// Hash the way the whole keyspace does; the same key always gets the same hash in one
/// process (shard choice, table slot and SCAN order all derive from it).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static STATE: std::sync::OnceLock<foldhash::fast::FixedState> = std::sync::OnceLock::new();
    STATE
        .get_or_init(|| foldhash::fast::FixedState::with_seed(rand::random()))
        .hash_one(key)
}

/// The keys of a shard that carry a TTL. Reads go to the set itself (`Deref`); every
/// change goes through a method here, given the shard's bit in its database's
/// [`crate::ttl_map::TtlMap`], which it sets or clears when the set goes from or to empty.
#[derive(Default)]
pub(crate) struct Expires {
    keys: IndexSet<Box<[u8]>, foldhash::fast::FixedState>,
}

impl std::ops::Deref for Expires {
    type Target = IndexSet<Box<[u8]>, foldhash::fast::FixedState>;

    fn deref(&self) -> &Self::Target {
        &self.keys
    }
}

impl Expires {
    pub(crate) fn insert(&mut self, key: Box<[u8]>, bit: TtlBit) -> bool {
        let added = self.keys.insert(key);
        if added && self.keys.len() == 1 {
            bit.set(true);
        }
        added
    }

    pub(crate) fn swap_remove(&mut self, key: &[u8], bit: TtlBit) -> bool {
        let removed = self.keys.swap_remove(key);
        if removed && self.keys.is_empty() {
            bit.set(false);
        }
        removed
    }

    fn swap_remove_index(&mut self, i: usize, bit: TtlBit) -> Option<Box<[u8]>> {
        let key = self.keys.swap_remove_index(i);
        if key.is_some() && self.keys.is_empty() {
            bit.set(false);
        }
        key
    }

    fn swap_indices(&mut self, a: usize, b: usize) {
        self.keys.swap_indices(a, b);
    }

    fn clear(&mut self, bit: TtlBit) {
        if !self.keys.is_empty() {
            self.keys.clear();
            bit.set(false);
        }
    }

    /// Exchange the keys with `other`, each keeping its place (its bit, `bit` and
    /// `other_bit`) in its database.
    fn swap_keys(&mut self, other: &mut Expires, bit: TtlBit, other_bit: TtlBit) {
        std::mem::swap(&mut self.keys, &mut other.keys);
        bit.set(!self.keys.is_empty());
        other_bit.set(!other.keys.is_empty());
    }
}

/// What [`Shard::lookup`] found.
pub(crate) enum Lookup<'a> {
    Live(&'a mut Entry, &'a mut Expires),
    /// The key was past its TTL: it has been removed, here it is.
    Expired(Entry),
    Missing,
}

/// Set or clear an entry's expiry, keeping the shard's TTL index (and its `bit`) in step.
pub(crate) fn set_expire_indexed(
    e: &mut Entry,
    expires: &mut Expires,
    bit: TtlBit,
    expire_at: i64,
) {
    let had = e.expire_at() != NO_EXPIRE;
    e.set_expire_at(expire_at);
    match (had, expire_at != NO_EXPIRE) {
        (false, true) => {
            expires.insert(e.key().into(), bit);
        }
        (true, false) => {
            expires.swap_remove(e.key(), bit);
        }
        _ => {}
    }
}

/// A shard of one database.
#[derive(Default)]
pub struct Shard {
    /// Each slot is one thin pointer to the key's block (see [`Entry`]).
    table: HashTable<Entry>,
    /// Keys with a TTL, for the active expiry cycle's sweep and volatile eviction's
    /// random sampling.
    expires: Expires,
    /// Where the expiry cycle's sweep of `expires` goes on.
    expire_cursor: usize,
}

fn rehash(e: &Entry) -> u64 {
    hash_key(e.key())
}

/// Bytes of a shard's key table and TTL index, given their capacities and what the TTL
/// index's copies of the keys take.
fn tables_bytes(
    table_capacity: usize,
    expires_capacity: usize,
    key_copies: usize,
) -> (usize, usize) {
    use crate::mem;
    let expires = mem::hashbrown::<usize>(expires_capacity)
        + mem::vec::<(usize, Box<[u8]>)>(expires_capacity)
        + key_copies;
    (mem::hashbrown::<Entry>(table_capacity), expires)
}

/// [`Shard::table_bytes`] from a shard's published figures, for a shard that cannot be
/// locked now: the TTL index's key copies, which need the keys, are estimated at 16 bytes
/// each (jemalloc's smallest class but one: keys up to 16 bytes).
pub fn table_bytes_of(f: &crate::shard_lock::ShardFigures) -> (usize, usize) {
    tables_bytes(f.table_capacity, f.expires_capacity, f.expires * 16)
}

impl Shard {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Room for `additional` more keys without growing the table.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional, rehash);
    }

    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// Slots of the key table.
    pub fn table_capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Slots of the TTL index.
    pub fn expires_capacity(&self) -> usize {
        self.expires.capacity()
    }

    /// Bytes of the shard's tables (MEMORY STATS): the key table's slots, and the TTL
    /// index with its copies of the keys (estimated from the first few keys).
    pub fn table_bytes(&self) -> (usize, usize) {
        let copies = crate::mem::sampled(
            self.expires.iter().map(|k| crate::mem::vec::<u8>(k.len())),
            self.expires.len(),
            5,
        );
        tables_bytes(self.table.capacity(), self.expires.capacity(), copies)
    }

    /// Find `key`: live, or found past its TTL (then, as `on` says, removed and handed
    /// back, hidden as missing, or kept as live), or missing.
    /// `bit`: the shard's (as for every change below).
    #[inline]
    pub(crate) fn lookup(
        &mut self,
        h: u64,
        key: &[u8],
        now_ms: i64,
        bit: TtlBit,
        on: OnExpired,
    ) -> Lookup<'_> {
        let Ok(slot) = self.table.find_entry(h, |e| e.key() == key) else {
            return Lookup::Missing;
        };
        if slot.get().is_expired(now_ms) {
            match on {
                OnExpired::Delete => {
                    let (e, _) = slot.remove();
                    self.expires.swap_remove(key, bit);
                    return Lookup::Expired(e);
                }
                OnExpired::Hide => return Lookup::Missing,
                OnExpired::Keep => {}
            }
        }
        Lookup::Live(slot.into_mut(), &mut self.expires)
    }

    /// The entry for `key` as it is, expired or not (introspection that must not modify).
    pub fn peek(&self, h: u64, key: &[u8]) -> Option<&Entry> {
        self.table.find(h, |e| e.key() == key)
    }

    /// Insert or replace `key` (with a fresh access time), returning the previous entry
    /// if any.
    #[cfg(test)]
    pub(crate) fn insert<'v>(
        &mut self,
        h: u64,
        key: &[u8],
        value: impl Into<crate::value::ValueRef<'v>>,
        expire_at: i64,
        bit: TtlBit,
    ) -> Option<Entry> {
        self.insert_entry(
            h,
            Entry::new(key, value, expire_at, crate::clock::lru_clock()),
            bit,
        )
    }

    /// Put a whole entry in (MOVE, RENAME, COPY, RESTORE), returning the previous one.
    pub(crate) fn insert_entry(&mut self, h: u64, entry: Entry, bit: TtlBit) -> Option<Entry> {
        let has_ttl = entry.expire_at() != NO_EXPIRE;
        if has_ttl {
            self.expires.insert(entry.key().into(), bit);
        }
        let old = match self.table.entry(h, |e| e.key() == entry.key(), rehash) {
            Slot::Occupied(mut o) => Some(std::mem::replace(o.get_mut(), entry)),
            Slot::Vacant(v) => {
                v.insert(entry);
                None
            }
        };
        if let Some(o) = &old {
            if !has_ttl && o.expire_at() != NO_EXPIRE {
                self.expires.swap_remove(o.key(), bit);
            }
        }
        old
    }

    pub(crate) fn remove(&mut self, h: u64, key: &[u8], bit: TtlBit) -> Option<Entry> {
        let (e, _) = self.table.find_entry(h, |e| e.key() == key).ok()?.remove();
        if e.expire_at() != NO_EXPIRE {
            self.expires.swap_remove(key, bit);
        }
        Some(e)
    }

    /// Set or clear the expiry of an existing key. Returns false if the key is absent.
    #[cfg(test)]
    pub(crate) fn set_expire(&mut self, h: u64, key: &[u8], expire_at: i64, bit: TtlBit) -> bool {
        let Some(e) = self.table.find_mut(h, |e| e.key() == key) else {
            return false;
        };
        set_expire_indexed(e, &mut self.expires, bit, expire_at);
        true
    }

    /// Drop everything, returning the old contents (so a caller may free them elsewhere).
    pub(crate) fn take_all(&mut self, bit: TtlBit) -> HashTable<Entry> {
        self.expires.clear(bit);
        std::mem::take(&mut self.table)
    }

    /// Swap contents with another shard (SWAPDB); each keeps its place (its bit, `bit` and
    /// `other_bit`) in its database's [`crate::ttl_map::TtlMap`].
    pub(crate) fn swap(&mut self, other: &mut Shard, bit: TtlBit, other_bit: TtlBit) {
        std::mem::swap(&mut self.table, &mut other.table);
        self.expires.swap_keys(&mut other.expires, bit, other_bit);
        std::mem::swap(&mut self.expire_cursor, &mut other.expire_cursor);
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter()
    }

    /// One step of the active expiry cycle: check up to `max` keys with a TTL not yet
    /// checked in this sweep of the TTL index, drawn at random, and delete the expired ones,
    /// handing each (with its hash) to `expired_entry`. A sweep checks every key once in a random order (the keys
    /// checked and alive are moved before `expire_cursor`), as Redis's cycle walks its
    /// expires table in hash order: a stretch of keys set together, expiring together, is
    /// not met all at once. Returns (checked, expired, whether the sweep ended, to start
    /// over next time).
    pub(crate) fn expire_sample(
        &mut self,
        max: usize,
        now_ms: i64,
        bit: TtlBit,
        mut expired_entry: impl FnMut(u64, Entry),
    ) -> (usize, usize, bool) {
        let mut rng = rand::thread_rng();
        let (mut checked, mut expired) = (0, 0);
        loop {
            let (i, len) = (self.expire_cursor, self.expires.len());
            if i >= len {
                self.expire_cursor = 0;
                return (checked, expired, true);
            }
            if checked == max {
                return (checked, expired, false);
            }
            checked += 1;
            let j = rng.gen_range(i..len);
            let key: &[u8] = &self.expires[j];
            let h = hash_key(key);
            let dead = self
                .table
                .find(h, |e| e.key() == key)
                .map(|e| e.is_expired(now_ms))
                .unwrap_or(true);
            if !dead {
                self.expires.swap_indices(i, j);
                self.expire_cursor = i + 1;
                continue;
            }
            // The last key, not checked yet, moves into position `j`.
            if let Some(key) = self.expires.swap_remove_index(j, bit) {
                if let Ok(slot) = self.table.find_entry(h, |e| e.key() == &*key) {
                    expired_entry(h, slot.remove().0);
                }
            }
            expired += 1;
        }
    }

    /// A random live key, if any (RANDOMKEY).
    pub fn random_key(&self) -> Option<&Entry> {
        let n = self.table.len();
        if n == 0 {
            return None;
        }
        let i = rand::thread_rng().gen_range(0..n);
        self.table.iter().nth(i)
    }

    // ---- eviction sampling (crate::evict) ----

    /// Up to `n` entries read from a random position on, in table order, wrapping around
    /// (Redis's dictGetSomeKeys); with `volatile`, only keys with a TTL (from a random
    /// position of the TTL index).
    pub(crate) fn sample(&self, n: usize, volatile: bool, mut visit: impl FnMut(&Entry)) {
        let mut rng = rand::thread_rng();
        if volatile {
            let len = self.expires.len();
            if len == 0 {
                return;
            }
            let start = rng.gen_range(0..len);
            for i in (start..len).chain(0..start).take(n) {
                let key: &[u8] = &self.expires[i];
                if let Some(e) = self.table.find(hash_key(key), |e| e.key() == key) {
                    visit(e);
                }
            }
            return;
        }
        let len = self.table.len();
        if len == 0 {
            return;
        }
        let start = rng.gen_range(0..len);
        let head = self.table.iter().skip(start).take(n);
        let wrapped = n.saturating_sub(len - start);
        head.chain(self.table.iter().take(wrapped))
            .for_each(&mut visit);
    }
}

/// The table bytes a key costs beyond its entry (MEMORY USAGE): its slot in the key
/// table (a pointer and a control byte) and, with a TTL, its place in the TTL index
/// (entry, index and control byte) with its copy of the key.
pub fn slot_bytes(e: &Entry) -> usize {
    let slot = std::mem::size_of::<Entry>() + 1;
    if e.expire_at() == NO_EXPIRE {
        slot
    } else {
        slot + std::mem::size_of::<(usize, Box<[u8]>)>() + 9 + crate::mem::vec::<u8>(e.key().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{StrRef, ValueRef};

    /// A shard of its own.
    const NONE: TtlBit = TtlBit::NONE;

    fn put(s: &mut Shard, k: &[u8], v: &[u8], expire: i64) -> Option<Entry> {
        s.insert(hash_key(k), k, StrRef::encode(v), expire, NONE)
    }

    #[test]
    fn insert_get_replace_remove() {
        let mut s = Shard::default();
        for i in 0..300 {
            put(&mut s, format!("k{i}").as_bytes(), b"v", NO_EXPIRE);
        }
        assert_eq!(s.len(), 300);
        let old = put(&mut s, b"k7", b"12", 100).expect("replaced");
        assert_eq!(old.value(), ValueRef::Str(StrRef::Embstr(b"v")));
        assert_eq!(s.expires_len(), 1);
        let h = hash_key(b"k7");
        assert_eq!(s.peek(h, b"k7").unwrap().expire_at(), 100);
        // Replacing without a TTL forgets it.
        put(&mut s, b"k7", b"x", NO_EXPIRE);
        assert_eq!(s.expires_len(), 0);
        assert!(s.set_expire(h, b"k7", 50, NONE));
        assert!(!s.set_expire(hash_key(b"nope"), b"nope", 50, NONE));
        assert_eq!(s.expires_len(), 1);
        // Lazy expiry on lookup.
        assert!(matches!(
            s.lookup(h, b"k7", 49, NONE, OnExpired::Delete),
            Lookup::Live(..)
        ));
        // Hidden (a replica's read) or kept (its master's stream): left in place.
        assert!(matches!(
            s.lookup(h, b"k7", 50, NONE, OnExpired::Hide),
            Lookup::Missing
        ));
        assert!(matches!(
            s.lookup(h, b"k7", 50, NONE, OnExpired::Keep),
            Lookup::Live(..)
        ));
        assert_eq!(s.expires_len(), 1);
        assert!(matches!(
            s.lookup(h, b"k7", 50, NONE, OnExpired::Delete),
            Lookup::Expired(_)
        ));
        assert!(matches!(
            s.lookup(h, b"k7", 50, NONE, OnExpired::Delete),
            Lookup::Missing
        ));
        assert_eq!((s.len(), s.expires_len()), (299, 0));
        let e = s.remove(hash_key(b"k1"), b"k1", NONE).unwrap();
        assert_eq!(e.key(), b"k1");
        assert!(s.remove(hash_key(b"k1"), b"k1", NONE).is_none());
        // A renamed entry keeps its TTL and is found under its new key.
        let e = s.remove(hash_key(b"k2"), b"k2", NONE).unwrap();
        s.insert_entry(hash_key(b"k2"), e, NONE);
        s.set_expire(hash_key(b"k2"), b"k2", 1_000, NONE);
        let e = s
            .remove(hash_key(b"k2"), b"k2", NONE)
            .unwrap()
            .with_key(b"moved");
        s.insert_entry(hash_key(b"moved"), e, NONE);
        assert_eq!(
            s.peek(hash_key(b"moved"), b"moved").unwrap().expire_at(),
            1_000
        );
        assert_eq!(s.expires_len(), 1);
        let all = s.take_all(NONE);
        assert_eq!((all.len(), s.len(), s.expires_len()), (298, 0, 0));
    }

    #[test]
    fn expire_sample_deletes_expired() {
        let mut s = Shard::default();
        for i in 0..50 {
            let at = if i % 2 == 0 { 10 } else { 1_000 };
            put(&mut s, format!("k{i}").as_bytes(), b"v", at);
        }
        put(&mut s, b"forever", b"v", NO_EXPIRE);
        // Two steps of 20 and a third check each of the 50 keys once.
        let a = s.expire_sample(20, 500, NONE, |_, e| drop(e));
        let b = s.expire_sample(20, 500, NONE, |_, e| drop(e));
        assert!(!a.2 && !b.2);
        let c = s.expire_sample(20, 500, NONE, |_, e| drop(e));
        assert_eq!(c.0, 10);
        assert_eq!((a.0 + b.0 + c.0, a.1 + b.1 + c.1, c.2), (50, 25, true));
        assert_eq!((s.len(), s.expires_len()), (26, 25));
        // The next sweep starts over and finds nothing more to delete.
        assert_eq!(
            s.expire_sample(100, 500, NONE, |_, e| drop(e)),
            (25, 0, true)
        );
    }
}

#[cfg(test)]
mod ttl_map_tests {
    use super::*;
    use crate::ttl_map::TtlMap;
    use crate::value::StrRef;

    fn put(s: &mut Shard, bit: TtlBit, k: &[u8], expire: i64) {
        s.insert(hash_key(k), k, StrRef::encode(b"v"), expire, bit);
    }

    /// A shard's bit follows its TTL index through every change: set while it holds keys.
    #[test]
    fn bits_follow_the_ttl_index() {
        let map = TtlMap::new(2);
        let (sb, tb) = (TtlBit::new(&map, 0), TtlBit::new(&map, 1));
        let (mut s, mut t) = (Shard::default(), Shard::default());
        let check = |s: &Shard, i: usize| assert_eq!(map.has(i), s.expires_len() > 0);
        put(&mut s, sb, b"plain", NO_EXPIRE);
        check(&s, 0);
        assert!(!map.any());
        put(&mut s, sb, b"a", 100);
        put(&mut s, sb, b"b", 100);
        put(&mut s, sb, b"c", 1_000);
        check(&s, 0);
        put(&mut s, sb, b"c", NO_EXPIRE); // replaced without a TTL
        s.set_expire(hash_key(b"plain"), b"plain", 1_000, sb);
        s.set_expire(hash_key(b"plain"), b"plain", NO_EXPIRE, sb);
        s.remove(hash_key(b"b"), b"b", sb);
        check(&s, 0);
        assert!(matches!(
            s.lookup(hash_key(b"a"), b"a", 100, sb, OnExpired::Delete),
            Lookup::Expired(_)
        ));
        check(&s, 0);
        assert!(!map.any());
        put(&mut s, sb, b"d", 10);
        put(&mut s, sb, b"e", 10);
        put(&mut t, tb, b"x", 1_000);
        check(&s, 0);
        check(&t, 1);
        // SWAPDB: the contents move, each place keeps its bit.
        let mut u = Shard::default();
        s.swap(&mut u, sb, TtlBit::NONE);
        check(&s, 0);
        assert!(!map.has(0) && map.has(1));
        u.swap(&mut s, TtlBit::NONE, sb);
        check(&s, 0);
        s.expire_sample(100, 500, sb, |_, e| drop(e));
        check(&s, 0);
        assert!(!map.has(0));
        t.take_all(tb);
        check(&t, 1);
        assert!(!map.any());
    }
}
