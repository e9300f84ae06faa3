//! One node of a stream: a listpack in Redis's stream layout (t_stream.c), so that the
//! node's bytes are what Redis's DUMP and RDB hold.
//!
//! ```text
//! master entry: [count][deleted][num-fields][field 1]...[field N][0]
//! each entry:   [flags][ms-diff][seq-diff][num-fields][field 1][value 1]...[lp-count]
//!               or, flagged SAMEFIELDS (the master's fields): [flags][ms-diff][seq-diff]
//!               [value 1]...[value N][lp-count]
//! ```
//!
//! IDs are stored as differences from the node's master ID (its key in the stream), in
//! two's complement as Redis's int64 casts leave them. `lp-count` is the number of
//! elements before it in the entry, so the node can be walked backwards.

use super::id::StreamId;
use crate::coll::listpack::{Item, Listpack};

pub const FLAG_DELETED: i64 = 1;
pub const FLAG_SAMEFIELDS: i64 = 2;

/// The integer at `at` (0 for a string or a missing position: never the case in a node
/// that passed [`validate`]).
pub fn int_at(lp: &Listpack, at: Option<usize>) -> i64 {
    at.and_then(|p| lp.get(p).as_int()).unwrap_or(0)
}

/// Step `n` elements forward.
fn skip(lp: &Listpack, mut at: Option<usize>, n: u64) -> Option<usize> {
    for _ in 0..n {
        at = lp.next(at?);
    }
    at
}

/// Step `n` elements back.
fn back(lp: &Listpack, mut at: Option<usize>, n: u64) -> Option<usize> {
    for _ in 0..n {
        at = lp.prev(at?);
    }
    at
}

/// The master entry of a node.
#[derive(Clone, Copy, Debug)]
pub struct Master {
    /// Live entries.
    pub count: i64,
    /// Entries flagged deleted.
    pub deleted: i64,
    pub nfields: u64,
    /// Position of the first master field (None when it has none).
    pub fields_at: Option<usize>,
    /// Position of the zero that ends the master entry.
    pub end_at: Option<usize>,
}

pub fn master(lp: &Listpack) -> Master {
    let count_at = lp.first();
    let deleted_at = count_at.and_then(|p| lp.next(p));
    let nfields_at = deleted_at.and_then(|p| lp.next(p));
    let nfields = int_at(lp, nfields_at).max(0) as u64;
    let first = nfields_at.and_then(|p| lp.next(p));
    Master {
        count: int_at(lp, count_at),
        deleted: int_at(lp, deleted_at),
        nfields,
        fields_at: if nfields > 0 { first } else { None },
        end_at: skip(lp, first, nfields),
    }
}

/// One entry of a node, located.
#[derive(Clone, Copy, Debug)]
pub struct At {
    pub flags_at: usize,
    pub flags: i64,
    pub id: StreamId,
    pub nfields: u64,
    /// Position of the first field (or first value, with SAMEFIELDS).
    pub data_at: Option<usize>,
    /// Position of the entry's lp-count.
    pub count_at: Option<usize>,
}

impl At {
    pub fn deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }

    pub fn same_fields(&self) -> bool {
        self.flags & FLAG_SAMEFIELDS != 0
    }
}

/// Decode the entry whose flags are at `flags_at`.
pub fn entry_at(lp: &Listpack, key: StreamId, m: &Master, flags_at: usize) -> At {
    let flags = int_at(lp, Some(flags_at));
    let ms_at = lp.next(flags_at);
    let seq_at = ms_at.and_then(|p| lp.next(p));
    let id = StreamId::new(
        key.ms.wrapping_add(int_at(lp, ms_at) as u64),
        key.seq.wrapping_add(int_at(lp, seq_at) as u64),
    );
    let after = seq_at.and_then(|p| lp.next(p));
    let (nfields, data_at, elems) = if flags & FLAG_SAMEFIELDS != 0 {
        (m.nfields, after, m.nfields)
    } else {
        let n = int_at(lp, after).max(0) as u64;
        (n, after.and_then(|p| lp.next(p)), n.saturating_mul(2))
    };
    let count_at = skip(lp, data_at, elems);
    At {
        flags_at,
        flags,
        id,
        nfields,
        data_at: if nfields > 0 { data_at } else { None },
        count_at,
    }
}

/// The first entry of a node (deleted ones included).
pub fn first_entry(lp: &Listpack, key: StreamId, m: &Master) -> Option<At> {
    let at = lp.next(m.end_at?)?;
    Some(entry_at(lp, key, m, at))
}

/// The entry after `e`.
pub fn next_entry(lp: &Listpack, key: StreamId, m: &Master, e: &At) -> Option<At> {
    let at = lp.next(e.count_at?)?;
    Some(entry_at(lp, key, m, at))
}

/// The entry whose lp-count is at `count_at` (None when that is the master's zero).
fn entry_ending(lp: &Listpack, key: StreamId, m: &Master, count_at: usize) -> Option<At> {
    let n = int_at(lp, Some(count_at));
    if n <= 0 {
        return None;
    }
    let flags_at = back(lp, Some(count_at), n as u64)?;
    Some(entry_at(lp, key, m, flags_at))
}

/// The last entry of a node.
pub fn last_entry(lp: &Listpack, key: StreamId, m: &Master) -> Option<At> {
    entry_ending(lp, key, m, lp.last()?)
}

/// The entry before `e`.
pub fn prev_entry(lp: &Listpack, key: StreamId, m: &Master, e: &At) -> Option<At> {
    entry_ending(lp, key, m, lp.prev(e.flags_at)?)
}

/// A stream entry read in place: its ID and its field/value pairs.
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    lp: &'a Listpack,
    master_fields: Option<usize>,
    data_at: Option<usize>,
    nfields: u64,
    same: bool,
}

impl<'a> EntryRef<'a> {
    pub fn new(lp: &'a Listpack, m: &Master, e: &At) -> EntryRef<'a> {
        EntryRef {
            id: e.id,
            lp,
            master_fields: m.fields_at,
            data_at: e.data_at,
            nfields: e.nfields,
            same: e.same_fields(),
        }
    }

    pub fn len(&self) -> usize {
        self.nfields as usize
    }

    pub fn is_empty(&self) -> bool {
        self.nfields == 0
    }

    /// The field/value pairs, in order.
    pub fn fields(&self) -> Fields<'a> {
        Fields {
            lp: self.lp,
            master: if self.same { self.master_fields } else { None },
            at: self.data_at,
            left: self.nfields,
            same: self.same,
        }
    }
}

/// Iterator over an entry's field/value pairs.
pub struct Fields<'a> {
    lp: &'a Listpack,
    master: Option<usize>,
    at: Option<usize>,
    left: u64,
    same: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (Item<'a>, Item<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let field = if self.same {
            let p = self.master?;
            self.master = self.lp.next(p);
            self.lp.get(p)
        } else {
            let p = self.at?;
            self.at = self.lp.next(p);
            self.lp.get(p)
        };
        let p = self.at?;
        self.at = self.lp.next(p);
        Some((field, self.lp.get(p)))
    }
}

/// A new node holding one entry (`pairs` = field, value, field, value...), with room for
/// `prealloc` bytes so that the entries that follow append without reallocating (Redis
/// preallocates the same, STREAM_LISTPACK_MAX_PRE_ALLOCATE, and shrinks a node it closes).
pub fn new_node(id: StreamId, pairs: &[&[u8]], prealloc: usize) -> Listpack {
    let n = (pairs.len() / 2) as i64;
    let mut lp = Listpack::with_capacity(prealloc);
    lp.insert_int(lp.end(), 1);
    lp.insert_int(lp.end(), 0);
    lp.insert_int(lp.end(), n);
    for f in pairs.iter().step_by(2) {
        lp.insert(lp.end(), f);
    }
    lp.insert_int(lp.end(), 0);
    push_entry(&mut lp, id, id, pairs, true);
    lp
}

/// Append an entry to the node whose master ID is `key` (its count already updated).
pub fn push_entry(lp: &mut Listpack, key: StreamId, id: StreamId, pairs: &[&[u8]], same: bool) {
    let n = (pairs.len() / 2) as i64;
    let flags = if same { FLAG_SAMEFIELDS } else { 0 };
    let head = [
        Item::Int(flags),
        Item::Int(id.ms.wrapping_sub(key.ms) as i64),
        Item::Int(id.seq.wrapping_sub(key.seq) as i64),
        Item::Int(n),
    ];
    let head = &head[..if same { 3 } else { 4 }];
    // With SAMEFIELDS only the values (every second argument) are stored.
    let step = if same { 2 } else { 1 };
    let data = pairs
        .iter()
        .skip(step - 1)
        .step_by(step)
        .map(|b| Item::Str(b));
    let lp_count = n + 3 + if same { 0 } else { n + 1 };
    lp.extend(
        head.iter()
            .copied()
            .chain(data)
            .chain(std::iter::once(Item::Int(lp_count))),
    );
}

/// Does the master entry list exactly these fields (the entry can be SAMEFIELDS)?
pub fn same_fields(lp: &Listpack, m: &Master, pairs: &[&[u8]]) -> bool {
    if m.nfields != (pairs.len() / 2) as u64 {
        return false;
    }
    let mut at = m.fields_at;
    for f in pairs.iter().step_by(2) {
        match at {
            Some(p) if lp.get(p).eq_bytes(f) => at = lp.next(p),
            _ => return false,
        }
    }
    true
}

/// Rewrite the master's live and deleted counts.
pub fn set_counts(lp: &mut Listpack, count: i64, deleted: i64) {
    let Some(at) = lp.first() else { return };
    lp.replace_int(at, count);
    if let Some(at) = lp.next(at) {
        lp.replace_int(at, deleted);
    }
}

/// Flag the entry at `flags_at` deleted (the flags stay one byte: positions do not move).
pub fn mark_deleted(lp: &mut Listpack, e: &At) {
    lp.replace_int(e.flags_at, e.flags | FLAG_DELETED);
}

/// Redis's deep check of a node loaded from a payload (streamValidateListpackIntegrity,
/// on a listpack already checked element by element): the master entry, then
/// count + deleted entries, each with its lp-count right, and nothing after them.
pub fn validate(lp: &Listpack) -> bool {
    let items: Vec<Item<'_>> = lp.iter().collect();
    let mut i = 0usize;
    let int = |i: &mut usize| -> Option<i64> {
        let v = items.get(*i)?.as_int()?;
        *i += 1;
        Some(v)
    };
    let Some(count) = int(&mut i) else {
        return false;
    };
    let Some(deleted) = int(&mut i) else {
        return false;
    };
    let Some(master_fields) = int(&mut i) else {
        return false;
    };
    if master_fields < 0 {
        return false;
    }
    i = match i.checked_add(master_fields as usize) {
        Some(n) if n <= items.len() => n,
        _ => return false,
    };
    if int(&mut i) != Some(0) {
        return false;
    }
    let Some(mut entries) = count.checked_add(deleted).filter(|&n| n >= 0) else {
        return false;
    };
    // (Skein also wants the flags to agree with the counts, which Redis does not check.)
    let mut flagged = 0i64;
    while entries > 0 {
        entries -= 1;
        let Some(flags) = int(&mut i) else {
            return false;
        };
        if flags & FLAG_DELETED != 0 {
            flagged += 1;
        }
        if int(&mut i).is_none() || int(&mut i).is_none() {
            return false;
        }
        let mut fields = master_fields;
        let mut extra = 3i64;
        if flags & FLAG_SAMEFIELDS == 0 {
            let Some(n) = int(&mut i) else { return false };
            if n < 0 {
                return false;
            }
            fields = n;
            i = match i.checked_add(n as usize) {
                Some(n) if n <= items.len() => n,
                _ => return false,
            };
            extra += fields + 1;
        }
        i = match i.checked_add(fields as usize) {
            Some(n) if n <= items.len() => n,
            _ => return false,
        };
        if int(&mut i) != Some(fields + extra) {
            return false;
        }
    }
    i == items.len() && flagged == deleted
}
