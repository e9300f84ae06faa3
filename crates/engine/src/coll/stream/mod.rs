//! Redis's stream type: entries with IDs, in nodes of Redis's own listpack layout (see
//! [`node`]) kept in a `BTreeMap` keyed by each node's master ID (Redis keeps them in a
//! radix tree keyed the same way). Nodes fill up to `stream-node-max-bytes` /
//! `stream-node-max-entries` as in Redis, entries are deleted by flagging them, and a node
//! goes when its last live entry does, so each node's bytes, and the DUMP payload made of
//! them, are Redis's.

pub mod group;
pub mod id;
pub mod node;

pub use group::{Group, Nack, Name, ENTRIES_READ_INVALID};
pub use id::{IdArg, StreamId};
pub use node::EntryRef;

use crate::coll::listpack::Listpack;
use crate::coll::Limits;
use std::collections::BTreeMap;

/// Largest total of field and value bytes one entry may have (STREAM_LISTPACK_MAX_SIZE).
const MAX_ENTRY_BYTES: usize = 1 << 30;
/// Bytes a new node is allocated with (STREAM_LISTPACK_MAX_PRE_ALLOCATE).
const MAX_PREALLOC: usize = 4096;

/// How XADD names the new entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewId {
    /// `*`: from the clock.
    Auto,
    /// `<ms>-*`.
    AutoSeq(u64),
    Exact(StreamId),
}

/// Why an entry could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The ID is not greater than the stream's last ID.
    NotGreater,
    /// `<ms>-*` at the last sequence of that millisecond.
    SeqExhausted,
    /// The entry is larger than a node may be.
    TooLarge,
}

/// How XADD/XTRIM trim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// A stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Listpack>,
    length: u64,
    last_id: StreamId,
    first_id: StreamId,
    max_deleted: StreamId,
    entries_added: u64,
    groups: BTreeMap<Vec<u8>, Group>,
}

/// A stream's counters, copied out (what the read-counter estimates look at).
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    pub length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
}

/// The counters (entries added, a group's entries read, delivery counts and times) come
/// from payloads as Redis loads them, any 64-bit value: arithmetic on them wraps as
/// Redis's C arithmetic does, never panics.
impl Meta {
    /// streamRangeHasTombstones: may `start..=end` hold a deleted entry?
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() || self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// streamEstimateDistanceFromFirstEverEntry: the read counter of `id`, or
    /// [`ENTRIES_READ_INVALID`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return ENTRIES_READ_INVALID;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added.wrapping_sub(self.length as i64);
            } else if id == self.first_id {
                return added.wrapping_sub(self.length as i64).wrapping_add(1);
            }
        }
        ENTRIES_READ_INVALID
    }

    /// streamReplyWithCGLag: entries not yet delivered to the group, if known.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != ENTRIES_READ_INVALID
            && !self.range_has_tombstones(g.last_id, StreamId::MAX)
        {
            return Some(added.wrapping_sub(g.entries_read));
        }
        match self.estimate_distance(g.last_id) {
            ENTRIES_READ_INVALID => None,
            n => Some(added.wrapping_sub(n)),
        }
    }

    /// Advance a group's last ID to `id` (delivered by XREADGROUP), keeping its read
    /// counter as Redis does.
    fn advance(&self, g: &mut Group, id: StreamId) {
        if g.entries_read != ENTRIES_READ_INVALID && !self.range_has_tombstones(id, StreamId::MAX) {
            g.entries_read = g.entries_read.wrapping_add(1);
        } else if self.entries_added != 0 {
            g.entries_read = self.estimate_distance(id);
        }
        g.last_id = id;
    }
}

/// What XREADGROUP `>` delivered from one stream.
pub struct GroupRead<'a> {
    pub entries: Vec<EntryRef<'a>>,
    /// The group's last ID and read counter afterwards.
    pub last_id: StreamId,
    pub entries_read: i64,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// A stream from nodes and counters read from RDB (each node already validated).
    /// None when they disagree (the live entries of the nodes are not `length`): Skein
    /// refuses such a payload where Redis would keep a stream whose length lies.
    pub fn from_parts(
        nodes: BTreeMap<StreamId, Listpack>,
        length: u64,
        last_id: StreamId,
        counters: Option<(StreamId, StreamId, u64)>,
    ) -> Option<Stream> {
        let live: u64 = nodes
            .values()
            .map(|lp| node::master(lp).count.max(0) as u64)
            .sum();
        if live != length {
            return None;
        }
        let mut s = Stream {
            nodes,
            length,
            last_id,
            ..Stream::default()
        };
        match counters {
            Some((first, max_deleted, added)) => {
                s.first_id = first;
                s.max_deleted = max_deleted;
                s.entries_added = added;
            }
            None => {
                // RDB_TYPE_STREAM_LISTPACKS (before 7.0): as Redis's loader fills them.
                s.entries_added = length;
                s.first_id = s.edge_id(true).unwrap_or(StreamId::MAX);
            }
        }
        Some(s)
    }

    /// Live entries (XLEN).
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The last ID given out (`last-generated-id`).
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// `recorded-first-entry-id`.
    pub fn first_id(&self) -> StreamId {
        self.first_id
    }

    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// Nodes (`radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes in ID order, with their master IDs (for RDB).
    pub fn nodes(&self) -> impl Iterator<Item = (StreamId, &Listpack)> {
        self.nodes.iter().map(|(k, v)| (*k, v))
    }

    /// How many nodes Redis's radix tree of these master IDs has (`radix-tree-nodes`):
    /// the root, every branching point and every child of one (the 16-byte keys are
    /// all leaves; single-child runs are compressed into one node).
    pub fn rax_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|k| k.to_be_bytes()).collect();
        rax_count(&keys, 0, true)
    }

    /// Bytes held beyond the `Stream` itself (MEMORY USAGE): the node tree, the nodes'
    /// listpacks as Redis estimates them (the average of the first `samples` for all
    /// but the last, which is counted as it is), and the consumer groups with their
    /// pending entries and consumers.
    pub fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        let n = self.nodes.len();
        let nodes = mem::btree::<StreamId, Listpack>(n)
            + match self.nodes.last_key_value() {
                None => 0,
                Some(_) if n <= samples => self.nodes.values().map(Listpack::allocated).sum(),
                Some((_, last)) => {
                    mem::sampled(self.nodes.values().map(Listpack::allocated), n - 1, samples)
                        + last.allocated()
                }
            };
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| mem::vec::<u8>(name.len()) + g.footprint())
            .sum();
        nodes + mem::btree::<Vec<u8>, Group>(self.groups.len()) + groups
    }

    /// XADD's append (streamAppendItem): `pairs` is field, value, field, value...
    pub fn append(
        &mut self,
        id: NewId,
        pairs: &[&[u8]],
        now_ms: u64,
        lim: &Limits,
    ) -> Result<StreamId, AddError> {
        let id = match id {
            NewId::Exact(id) => id,
            NewId::AutoSeq(ms) if ms == self.last_id.ms => {
                if self.last_id.seq == u64::MAX {
                    return Err(AddError::SeqExhausted);
                }
                StreamId::new(ms, self.last_id.seq + 1)
            }
            NewId::AutoSeq(ms) => StreamId::new(ms, 0),
            NewId::Auto if now_ms > self.last_id.ms => StreamId::new(now_ms, 0),
            NewId::Auto => self.last_id.incr().unwrap_or(StreamId::MIN),
        };
        if id <= self.last_id {
            return Err(AddError::NotGreater);
        }
        let total: usize = pairs.iter().map(|p| p.len()).sum();
        if total > MAX_ENTRY_BYTES {
            return Err(AddError::TooLarge);
        }
        let max_bytes = match lim.stream_node_max_bytes as usize {
            0 => MAX_ENTRY_BYTES,
            n => n.min(MAX_ENTRY_BYTES),
        };
        let tail = self.nodes.last_entry();
        let fits = tail.as_ref().is_some_and(|t| {
            let lp = t.get();
            let m = node::master(lp);
            lp.bytes_len() + total < max_bytes
                && (lim.stream_node_max_entries == 0
                    || ((m.count + m.deleted) as u64) < lim.stream_node_max_entries)
        });
        match tail {
            Some(mut t) if fits => {
                let key = *t.key();
                let lp = t.get_mut();
                let m = node::master(lp);
                let same = node::same_fields(lp, &m, pairs);
                node::set_counts(lp, m.count + 1, m.deleted);
                node::push_entry(lp, key, id, pairs, same);
            }
            tail => {
                if let Some(mut t) = tail {
                    t.get_mut().shrink();
                }
                let prealloc = match lim.stream_node_max_bytes as usize {
                    0 => MAX_PREALLOC,
                    n => n.min(MAX_PREALLOC),
                };
                self.nodes.insert(id, node::new_node(id, pairs, prealloc));
            }
        }
        self.length += 1;
        self.entries_added = self.entries_added.wrapping_add(1);
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// Visit the live entries with IDs in `start..=end`, ascending (or descending with
    /// `rev`), until `f` returns false.
    pub fn walk<'a>(
        &'a self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        f: impl FnMut(EntryRef<'a>) -> bool,
    ) {
        walk(&self.nodes, start, end, rev, f);
    }

    /// Up to `count` (0: all) live entries in `start..=end`.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: usize,
    ) -> Vec<EntryRef<'_>> {
        let mut v = Vec::new();
        self.walk(start, end, rev, |e| {
            v.push(e);
            count == 0 || v.len() < count
        });
        v
    }

    /// The live entry with this ID.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        let mut found = None;
        self.walk(id, id, false, |e| {
            found = Some(e);
            false
        });
        found
    }

    /// The first or last live entry's ID (streamGetEdgeID skipping tombstones): None if
    /// the stream has none.
    pub fn edge_id(&self, first: bool) -> Option<StreamId> {
        let mut id = None;
        self.walk(StreamId::MIN, StreamId::MAX, !first, |e| {
            id = Some(e.id);
            false
        });
        id
    }

    /// The first entry's ID, deleted ones included (streamGetEdgeID without skipping
    /// tombstones): the approximate trims propagate it.
    pub fn first_id_with_tombstones(&self) -> StreamId {
        self.nodes
            .iter()
            .next()
            .and_then(|(k, lp)| node::first_entry(lp, *k, &node::master(lp)))
            .map_or(StreamId::MAX, |e| e.id)
    }

    /// Flag one live entry deleted (streamDeleteItem); false if there is none with `id`.
    fn delete_one(&mut self, id: StreamId) -> bool {
        let Some((&key, lp)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let m = node::master(lp);
        let mut e = node::first_entry(lp, key, &m);
        while let Some(at) = e {
            if at.id == id && !at.deleted() {
                if m.count <= 1 {
                    self.nodes.remove(&key);
                } else {
                    node::mark_deleted(lp, &at);
                    node::set_counts(lp, m.count - 1, m.deleted + 1);
                }
                self.length -= 1;
                return true;
            }
            if at.id > id {
                break;
            }
            e = node::next_entry(lp, key, &m, &at);
        }
        false
    }

    /// XDEL: delete these IDs; returns how many were live entries.
    pub fn delete(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_gone = false;
        for &id in ids {
            if self.delete_one(id) {
                first_gone |= id == self.first_id;
                self.max_deleted = self.max_deleted.max(id);
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first_gone {
                self.first_id = self.edge_id(true).unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// streamTrim: drop the oldest entries by `how`; with `approx` only whole nodes;
    /// `limit` (0: none) caps the entries removed. Returns how many were removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted: u64 = 0;
        while let Some(mut first) = self.nodes.first_entry() {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let key = *first.key();
            let lp = first.get_mut();
            let m = node::master(lp);
            let entries = m.count.max(0) as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => {
                    node::last_entry(lp, key, &m).map_or(StreamId::MIN, |e| e.id) < min
                }
            };
            if remove_node {
                first.remove();
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let mut from_node = 0i64;
            let mut e = node::first_entry(lp, key, &m);
            while let Some(at) = e {
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => at.id >= min,
                };
                if stop {
                    break;
                }
                if !at.deleted() {
                    node::mark_deleted(lp, &at);
                    from_node += 1;
                    self.length -= 1;
                }
                e = node::next_entry(lp, key, &m, &at);
            }
            deleted += from_node as u64;
            node::set_counts(lp, m.count - from_node, m.deleted + from_node);
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true).unwrap_or(StreamId::MAX);
        }
        deleted
    }

    /// The counters, copied.
    pub fn meta(&self) -> Meta {
        Meta {
            length: self.length,
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
        }
    }

    /// The consumer groups by name.
    pub fn groups(&self) -> &BTreeMap<Vec<u8>, Group> {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// streamCreateCG: false if the name is taken.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups
            .insert(name.to_vec(), Group::new(last_id, entries_read));
        true
    }

    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// Add a group as loaded from RDB (replacing one of the same name).
    pub fn put_group(&mut self, name: Vec<u8>, g: Group) {
        self.groups.insert(name, g);
    }

    /// XREADGROUP `>`: up to `count` (0: all) entries after the group's last ID go to
    /// `consumer` (pending unless `noack`), the group's last ID and read counter following.
    /// None if there is no such group.
    pub fn read_group<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &Name,
        count: usize,
        noack: bool,
        now: i64,
    ) -> Option<GroupRead<'a>> {
        let meta = self.meta();
        let Stream { nodes, groups, .. } = self;
        let g = groups.get_mut(group)?;
        let mut entries = Vec::new();
        let Some(start) = g.last_id.incr() else {
            return Some(GroupRead {
                entries,
                last_id: g.last_id,
                entries_read: g.entries_read,
            });
        };
        walk(&*nodes, start, StreamId::MAX, false, |e| {
            if e.id > g.last_id {
                meta.advance(g, e.id);
            }
            if !noack {
                g.deliver(e.id, consumer, now);
            }
            entries.push(e);
            count == 0 || entries.len() < count
        });
        Some(GroupRead {
            entries,
            last_id: g.last_id,
            entries_read: g.entries_read,
        })
    }

    /// XREADGROUP with an ID: up to `count` (0: all) of `consumer`'s pending IDs from
    /// `start`, each with its entry (None if it is no longer in the stream); the ones still
    /// there count one more delivery, now.
    pub fn read_history<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: usize,
        now: i64,
    ) -> Vec<(StreamId, Option<EntryRef<'a>>)> {
        let Stream { nodes, groups, .. } = self;
        let nodes = &*nodes;
        let Some(g) = groups.get_mut(group) else {
            return Vec::new();
        };
        let Some(c) = g.consumers.get(consumer) else {
            return Vec::new();
        };
        let ids: Vec<StreamId> = c
            .pel
            .range(start..)
            .take(if count == 0 { usize::MAX } else { count })
            .copied()
            .collect();
        ids.into_iter()
            .map(|id| {
                let mut found = None;
                walk(nodes, id, id, false, |e| {
                    found = Some(e);
                    false
                });
                if found.is_some() {
                    if let Some(n) = g.pel.get_mut(&id) {
                        n.delivery_time = now;
                        n.delivery_count = n.delivery_count.wrapping_add(1);
                    }
                }
                (id, found)
            })
            .collect()
    }

    /// XSETID's change: the last ID, and optionally entries-added and the max deleted ID.
    pub fn set_last_id(
        &mut self,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) {
        self.last_id = id;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(m) = max_deleted {
            self.max_deleted = m;
        }
    }
}

/// Visit the live entries with IDs in `start..=end`, ascending (or descending with
/// `rev`), until `f` returns false.
fn walk<'a>(
    nodes: &'a BTreeMap<StreamId, Listpack>,
    start: StreamId,
    end: StreamId,
    rev: bool,
    mut f: impl FnMut(EntryRef<'a>) -> bool,
) {
    if start > end {
        return;
    }
    if !rev {
        let from = nodes
            .range(..=start)
            .next_back()
            .map_or(StreamId::MIN, |(k, _)| *k);
        for (key, lp) in nodes.range(from..) {
            let m = node::master(lp);
            let mut e = node::first_entry(lp, *key, &m);
            while let Some(at) = e {
                if at.id >= start
                    && !at.deleted()
                    && (at.id > end || !f(EntryRef::new(lp, &m, &at)))
                {
                    return;
                }
                e = node::next_entry(lp, *key, &m, &at);
            }
        }
    } else {
        for (key, lp) in nodes.range(..=end).rev() {
            let m = node::master(lp);
            let mut e = node::last_entry(lp, *key, &m);
            while let Some(at) = e {
                if at.id <= end
                    && !at.deleted()
                    && (at.id < start || !f(EntryRef::new(lp, &m, &at)))
                {
                    return;
                }
                e = node::prev_entry(lp, *key, &m, &at);
            }
        }
    }
}

/// Rax nodes under the vertex shared by `keys` (sorted, distinct, 16 bytes) at `depth`;
/// `starts` says the vertex begins a node (the root, or a child of a branching vertex).
fn rax_count(keys: &[[u8; 16]], depth: usize, starts: bool) -> usize {
    if depth == 16 || keys.is_empty() {
        return usize::from(depth == 16 || starts);
    }
    let mut groups = Vec::new();
    let mut from = 0;
    for i in 1..=keys.len() {
        if i == keys.len() || keys[i][depth] != keys[from][depth] {
            groups.push(&keys[from..i]);
            from = i;
        }
    }
    let branching = groups.len() > 1;
    usize::from(starts || branching)
        + groups
            .into_iter()
            .map(|g| rax_count(g, depth + 1, branching))
            .sum::<usize>()
}

#[cfg(test)]
mod tests;
