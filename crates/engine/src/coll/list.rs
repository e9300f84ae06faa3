//! The list type: Redis 7.0's quicklist (a chain of listpack nodes, optionally
//! LZF-compressed away from the ends). `OBJECT ENCODING` is always `quicklist` in 7.0.
//!
//! The node-fill rules, node splits and merges and the compression of inner nodes follow
//! quicklist.c step by step, so that the nodes (and so a DUMP) hold the same bytes as
//! Redis's after the same commands. Nodes are kept in a `VecDeque` (O(1) at both ends);
//! a node is addressed by its index, which the port adjusts where quicklist.c follows
//! pointers.

mod compress;
mod node;
#[cfg(test)]
mod tests;

use super::listpack::{Item, Listpack};
use super::Limits;
use crate::mem;
use node::{Data, Node};
use std::collections::VecDeque;

pub use node::NodeRef;

/// Size limits of a node for fill -1..-5 (quicklist.c `optimization_level`).
const OPTIMIZATION_LEVEL: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// The largest node when the fill counts entries (`SIZE_SAFETY_LIMIT`).
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Added to an element's length to estimate what it adds to a node.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// `quicklistSetFill`'s clamp (16 fill bits on 64-bit builds).
const FILL_MAX: i64 = (1 << 15) - 1;
/// `quicklistSetCompressDepth`'s clamp.
const COMPRESS_MAX: i64 = (1 << 16) - 1;

#[derive(Clone, Debug, PartialEq)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    /// `list-max-listpack-size` when the list was created (clamped as quicklist.c does).
    fill: i32,
    /// `list-compress-depth` when the list was created.
    compress: u32,
}

impl Default for List {
    fn default() -> Self {
        List::with_options(-2, 0)
    }
}

impl List {
    /// A list with Redis's default options (fill -2, no compression).
    pub fn new() -> List {
        List::default()
    }

    /// A list with the given `list-max-listpack-size` and `list-compress-depth`
    /// (quicklistSetOptions clamps them).
    pub fn with_options(fill: i64, compress: i64) -> List {
        List {
            nodes: VecDeque::new(),
            len: 0,
            fill: fill.clamp(-5, FILL_MAX) as i32,
            compress: compress.clamp(0, COMPRESS_MAX) as u32,
        }
    }

    /// A new list as Redis creates one: with the server's current options.
    pub fn from_limits(l: &Limits) -> List {
        List::with_options(l.list_max_listpack_size, l.list_compress_depth)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of quicklist nodes.
    /// Bytes held beyond the `List` itself: the node array, and the nodes' buffers
    /// estimated from the first `samples` nodes (objectComputeSize's quicklist walk).
    pub fn footprint(&self, samples: usize) -> usize {
        mem::vec::<Node>(self.nodes.capacity())
            + mem::sampled(
                self.nodes.iter().map(Node::footprint),
                self.nodes.len(),
                samples,
            )
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The quicklist nodes, head to tail, as RDB writes them.
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> {
        self.nodes.iter().map(|n| match &n.data {
            Data::Raw(lp) => NodeRef::Packed(lp.as_bytes()),
            Data::Plain(v) => NodeRef::Plain(v),
            Data::Lzf(blob) => NodeRef::Lzf(blob, n.sz as usize, n.plain),
        })
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// `list-max-listpack-size` and `list-compress-depth` as the list keeps them.
    pub fn options(&self) -> (i32, u32) {
        (self.fill, self.compress)
    }

    /// The nodes' bytes before compression (DEBUG OBJECT's `ql_uncompressed_size`).
    pub fn uncompressed_size(&self) -> usize {
        self.nodes()
            .map(|n| match n {
                NodeRef::Packed(b) | NodeRef::Plain(b) => b.len(),
                NodeRef::Lzf(_, sz, _) => sz,
            })
            .sum()
    }

    // ------------------------------------------------------------ node rules

    fn size_meets_optimization(&self, sz: usize) -> bool {
        if self.fill >= 0 {
            return false;
        }
        let offset = (-self.fill - 1) as usize;
        offset < OPTIMIZATION_LEVEL.len() && sz <= OPTIMIZATION_LEVEL[offset]
    }

    /// _quicklistNodeAllowInsert: may an element of `sz` bytes join node `i`?
    fn allow_insert(&self, i: usize, sz: usize) -> bool {
        let Some(node) = self.nodes.get(i).filter(|n| !n.plain) else {
            return false;
        };
        let new_sz = node.sz as usize + sz + SIZE_ESTIMATE_OVERHEAD;
        if self.size_meets_optimization(new_sz) {
            true
        } else if new_sz > SIZE_SAFETY_LIMIT {
            false
        } else {
            (node.count as i64) < i64::from(self.fill)
        }
    }

    /// _quicklistNodeAllowMerge for nodes `a` and `b`.
    fn allow_merge(&self, a: usize, b: usize) -> bool {
        let (Some(a), Some(b)) = (self.nodes.get(a), self.nodes.get(b)) else {
            return false;
        };
        if a.plain || b.plain {
            return false;
        }
        // Redis computes this in an unsigned int.
        let merge_sz = (a.sz.wrapping_add(b.sz)).wrapping_sub(11) as usize;
        if self.size_meets_optimization(merge_sz) {
            true
        } else if merge_sz > SIZE_SAFETY_LIMIT {
            false
        } else {
            i64::from(a.count) + i64::from(b.count) <= i64::from(self.fill)
        }
    }

    /// __quicklistInsertNode: `new` goes at index `at`; `old` is the neighbour's index
    /// after the insert.
    fn insert_node(&mut self, at: usize, new: Node, old: Option<usize>) {
        if self.nodes.capacity() == 0 {
            // Most lists have one node: no room for more until needed.
            self.nodes.reserve_exact(1);
        }
        self.len += new.count as usize;
        self.nodes.insert(at, new);
        if let Some(o) = old {
            self.compress(o);
        }
        self.compress(at);
    }

    /// __quicklistDelNode.
    fn del_node(&mut self, i: usize) {
        if let Some(n) = self.nodes.remove(i) {
            self.len -= n.count as usize;
        }
        self.compress_around(None);
    }

    // ------------------------------------------------------------ push / pop

    /// LPUSH/RPUSH one element (quicklistPushHead / quicklistPushTail).
    pub fn push(&mut self, v: &[u8], left: bool) {
        let i = if left {
            0
        } else {
            self.nodes.len().wrapping_sub(1)
        };
        if !self.nodes.is_empty() && self.allow_insert(i, v.len()) {
            let node = &mut self.nodes[i];
            let lp = node.lp_mut();
            if left {
                lp.push_front(v);
            } else {
                lp.push_back(v);
            }
            node.update();
            self.len += 1;
        } else if self.nodes.is_empty() {
            self.insert_node(0, Node::with(v), None);
        } else if left {
            self.insert_node(0, Node::with(v), Some(1));
        } else {
            let at = self.nodes.len();
            self.insert_node(at, Node::with(v), Some(at - 1));
        }
    }

    /// Pop one element from the head or tail (quicklistPop).
    pub fn pop(&mut self, left: bool) -> Option<Vec<u8>> {
        if self.nodes.is_empty() {
            return None;
        }
        let i = if left { 0 } else { self.nodes.len() - 1 };
        if self.nodes[i].plain {
            let v = self.nodes[i].lp().iter().next().map(|it| it.to_vec());
            self.del_node(i);
            return v;
        }
        let node = &mut self.nodes[i];
        let lp = node.lp_mut();
        let at = if left { lp.first() } else { lp.last() }?;
        let v = lp.get(at).to_vec();
        lp.delete(at);
        node.update();
        self.len -= 1;
        if node.count == 0 {
            self.del_node(i);
        }
        Some(v)
    }

    // ------------------------------------------------------------ reading

    /// (node, offset in node) of element `index` (negative counts from the tail).
    fn locate(&self, index: i64) -> Option<(usize, usize)> {
        let len = self.len as i64;
        let i = if index < 0 {
            len.checked_add(index)?
        } else {
            index
        };
        if i < 0 || i >= len {
            return None;
        }
        let i = i as usize;
        if i <= (self.len - 1) / 2 {
            let mut acc = 0;
            for (n, node) in self.nodes.iter().enumerate() {
                if acc + node.count as usize > i {
                    return Some((n, i - acc));
                }
                acc += node.count as usize;
            }
        } else {
            let mut acc = self.len;
            for (n, node) in self.nodes.iter().enumerate().rev() {
                acc -= node.count as usize;
                if acc <= i {
                    return Some((n, i - acc));
                }
            }
        }
        None
    }

    /// The element at `index` (LINDEX).
    pub fn get(&self, index: i64) -> Option<Vec<u8>> {
        let (n, off) = self.locate(index)?;
        let lp = self.nodes[n].lp();
        let at = lp.seek(off as i64)?;
        Some(lp.get(at).to_vec())
    }

    /// Visit elements from index `start` (0-based from the head, in range) towards the
    /// tail (`forward`) or the head, while `f` returns true.
    pub fn for_each_from(&self, start: usize, forward: bool, mut f: impl FnMut(Item<'_>) -> bool) {
        let Some((mut n, off)) = self.locate(start as i64) else {
            return;
        };
        let mut first = Some(off);
        while walk(&self.nodes[n].lp(), first.take(), forward, &mut f) {
            match self.step(n, forward) {
                Some(next) => n = next,
                None => return,
            }
        }
    }

    /// The node after `n` in the walking direction.
    fn step(&self, n: usize, forward: bool) -> Option<usize> {
        if forward {
            (n + 1 < self.nodes.len()).then_some(n + 1)
        } else {
            n.checked_sub(1)
        }
    }

    /// [`List::get`] as Redis's LINDEX runs it: with compression on, the node read is
    /// decompressed for the read and compressed again as quicklist.c's iterator release
    /// does (which compresses an inner node left raw by an earlier insert).
    pub fn get_visit(&mut self, index: i64) -> Option<Vec<u8>> {
        if self.compress == 0 {
            return self.get(index);
        }
        let (n, off) = self.locate(index)?;
        self.decompress_for_use(n);
        let v = {
            let lp = self.nodes[n].lp();
            lp.seek(off as i64).map(|at| lp.get(at).to_vec())
        };
        self.compress(n);
        v
    }

    /// [`List::for_each_from`] as Redis's list iterator runs (LRANGE, LPOS, the counted
    /// pops' reply): with compression on, every node visited is decompressed for use and
    /// compressed again when the iterator leaves it or is released, as quicklist.c does.
    pub fn visit(&mut self, start: usize, forward: bool, mut f: impl FnMut(Item<'_>) -> bool) {
        if self.compress == 0 {
            return self.for_each_from(start, forward, f);
        }
        let Some((mut n, off)) = self.locate(start as i64) else {
            return;
        };
        let mut first = Some(off);
        loop {
            self.decompress_for_use(n);
            let more = walk(&self.nodes[n].lp(), first.take(), forward, &mut f);
            self.compress(n);
            match self.step(n, forward).filter(|_| more) {
                Some(next) => n = next,
                None => return,
            }
        }
    }

    /// Every element, head to tail.
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len);
        if self.len > 0 {
            self.for_each_from(0, true, |it| {
                out.push(it.to_vec());
                true
            });
        }
        out
    }

    // ------------------------------------------------------------ editing

    /// LSET (quicklistReplaceAtIndex): false when `index` is out of range.
    pub fn set(&mut self, index: i64, v: &[u8]) -> bool {
        let Some((n, off)) = self.locate(index) else {
            return false;
        };
        self.decompress_for_use(n);
        if self.nodes[n].plain {
            // quicklistReplaceEntry: the new element goes after the plain node, which goes.
            self.insert_at(n, 0, 0, true, v);
            self.del_node(n);
            return true;
        }
        let node = &mut self.nodes[n];
        let lp = node.lp_mut();
        let Some(at) = lp.seek(off as i64) else {
            return false;
        };
        lp.replace(at, v);
        node.update();
        self.compress(n);
        true
    }

    /// LINSERT: insert `v` before or after the first element equal to `pivot`; false
    /// when there is none.
    pub fn insert(&mut self, pivot: &[u8], after: bool, v: &[u8]) -> bool {
        let mut n = 0;
        while n < self.nodes.len() {
            self.decompress_for_use(n);
            let found = {
                let lp = self.nodes[n].lp();
                let mut at = lp.first();
                let mut off = 0usize;
                let mut hit = None;
                while let Some(p) = at {
                    if lp.get(p).eq_bytes(pivot) {
                        hit = Some((off, p));
                        break;
                    }
                    off += 1;
                    at = lp.next(p);
                }
                hit
            };
            if let Some((off, pos)) = found {
                self.insert_at(n, off, pos, after, v);
                return true;
            }
            self.compress(n);
            n += 1;
        }
        false
    }

    /// _quicklistInsert: `v` before/after the element at offset `off` (position `pos`)
    /// of node `n`.
    fn insert_at(&mut self, n: usize, off: usize, pos: usize, after: bool, v: &[u8]) {
        let sz = v.len();
        let count = self.nodes[n].count as usize;
        let full = !self.allow_insert(n, sz);
        let at_tail = after && off + 1 == count;
        let avail_next = at_tail && self.allow_insert(n + 1, sz);
        let at_head = !after && off == 0;
        let avail_prev = at_head && n > 0 && self.allow_insert(n - 1, sz);
        if !full {
            self.decompress_for_use(n);
            let node = &mut self.nodes[n];
            let lp = node.lp_mut();
            let at = if after {
                lp.next(pos).unwrap_or(lp.end())
            } else {
                pos
            };
            lp.insert(at, v);
            node.update();
            self.len += 1;
            self.recompress_only(n);
        } else if at_tail && avail_next {
            self.decompress_for_use(n + 1);
            let node = &mut self.nodes[n + 1];
            node.lp_mut().push_front(v);
            node.update();
            self.len += 1;
            self.recompress_only(n + 1);
            self.recompress_only(n);
        } else if at_head && avail_prev {
            self.decompress_for_use(n - 1);
            let node = &mut self.nodes[n - 1];
            node.lp_mut().push_back(v);
            node.update();
            self.len += 1;
            self.recompress_only(n - 1);
            self.recompress_only(n);
        } else if at_tail || at_head {
            if after {
                self.insert_node(n + 1, Node::with(v), Some(n));
            } else {
                self.insert_node(n, Node::with(v), Some(n + 1));
            }
        } else {
            self.decompress_for_use(n);
            let mut new = self.split(n, off, after);
            let lp = new.lp_mut();
            if after {
                lp.push_front(v);
            } else {
                lp.push_back(v);
            }
            new.update();
            let center = if after {
                self.insert_node(n + 1, new, Some(n));
                n
            } else {
                self.insert_node(n, new, Some(n + 1));
                n + 1
            };
            self.merge_around(center);
        }
    }

    /// _quicklistSplitNode: with `after`, node `n` keeps [0, off] and the returned node
    /// holds the rest; without, the returned node holds [0, off) and `n` the rest.
    fn split(&mut self, n: usize, off: usize, after: bool) -> Node {
        let node = &mut self.nodes[n];
        let lp = node.lp_mut();
        let mut other = lp.clone();
        let (keep_from, keep_n, other_from, other_n) = if after {
            (off + 1, usize::MAX, 0, off + 1)
        } else {
            (0, off, off, usize::MAX)
        };
        if let Some(at) = lp.seek(keep_from as i64) {
            lp.delete_range(at, keep_n);
        }
        if let Some(at) = other.seek(other_from as i64) {
            other.delete_range(at, other_n);
        }
        node.update();
        let moved = other.len();
        self.len -= moved;
        // insert_node adds the new node's elements back.
        Node::of(other)
    }

    /// _quicklistMergeNodes around node `center`.
    fn merge_around(&mut self, center: usize) {
        let mut c = center;
        if c >= 2 && self.allow_merge(c - 1, c - 2) {
            self.merge(c - 2);
            c -= 1;
        }
        if self.allow_merge(c + 1, c + 2) {
            self.merge(c + 1);
        }
        let target = if c >= 1 && self.allow_merge(c, c - 1) {
            self.merge(c - 1);
            c - 1
        } else {
            c
        };
        if self.allow_merge(target, target + 1) {
            self.merge(target);
        }
    }

    /// _quicklistListpackMerge of nodes `a` and `a + 1` into one at `a`.
    fn merge(&mut self, a: usize) {
        self.decompress_node(a);
        self.decompress_node(a + 1);
        let (left, right) = (&self.nodes[a], &self.nodes[a + 1]);
        // lpMerge keeps the larger listpack (the left one on a tie): its node stays.
        let keep_recompress = if left.sz >= right.sz {
            left.recompress
        } else {
            right.recompress
        };
        let merged = concat(&left.lp(), &right.lp());
        let mut node = Node::of(merged);
        node.recompress = keep_recompress;
        self.nodes[a] = node;
        // The other node goes with no elements of its own (its count moved).
        self.nodes.remove(a + 1);
        self.compress_around(None);
        self.compress(a);
    }

    /// LREM: remove up to `count` elements equal to `v` (all for 0; from the tail when
    /// negative); returns how many went.
    pub fn remove(&mut self, v: &[u8], count: i64) -> usize {
        let forward = count >= 0;
        let limit = count.unsigned_abs() as usize;
        let mut removed = 0;
        if self.nodes.is_empty() {
            return 0;
        }
        let mut n = if forward { 0 } else { self.nodes.len() - 1 };
        loop {
            self.decompress_for_use(n);
            let mut gone = false;
            let mut done = false;
            if self.nodes[n].plain {
                // quicklistDelIndex deletes a plain node whole.
                if self.nodes[n]
                    .lp()
                    .iter()
                    .next()
                    .is_some_and(|it| it.eq_bytes(v))
                {
                    removed += 1;
                    gone = true;
                    done = limit != 0 && removed == limit;
                }
            } else {
                let node = &mut self.nodes[n];
                let lp = node.lp_mut();
                let mut at = if forward { lp.first() } else { lp.last() };
                while let Some(p) = at {
                    if lp.get(p).eq_bytes(v) {
                        let next = lp.delete(p);
                        removed += 1;
                        at = if forward { next } else { lp.prev(p) };
                        if lp.is_empty() {
                            gone = true;
                        }
                        if limit != 0 && removed == limit {
                            done = true;
                            break;
                        }
                    } else {
                        at = if forward { lp.next(p) } else { lp.prev(p) };
                    }
                }
                let before = node.count as usize;
                node.update();
                self.len -= before - node.count as usize;
            }
            if gone {
                self.del_node(n);
                // Redis's iterator moves to the neighbour (which it compresses on release).
                if forward {
                    if n >= self.nodes.len() {
                        return removed;
                    }
                    if done {
                        self.compress(n);
                        return removed;
                    }
                } else {
                    if n == 0 {
                        return removed;
                    }
                    n -= 1;
                    if done {
                        self.compress(n);
                        return removed;
                    }
                }
                continue;
            }
            self.compress(n);
            if done {
                return removed;
            }
            if forward {
                n += 1;
                if n >= self.nodes.len() {
                    return removed;
                }
            } else {
                if n == 0 {
                    return removed;
                }
                n -= 1;
            }
        }
    }

    /// quicklistDelRange: delete `count` elements from index `start` (negative from the
    /// tail), as LTRIM and the counted pops do.
    pub fn del_range(&mut self, start: i64, count: usize) {
        if count == 0 {
            return;
        }
        let total = self.len as i64;
        let mut extent = count as i64;
        if start >= 0 && extent > total - start {
            extent = total - start;
        } else if start < 0 && extent > start.saturating_neg() {
            extent = start.saturating_neg();
        }
        let Some((mut n, off)) = self.locate(start) else {
            return;
        };
        // Redis keeps a negative offset (from the node's tail) when `start` is negative.
        let mut offset: i64 = if start < 0 {
            off as i64 - i64::from(self.nodes[n].count)
        } else {
            off as i64
        };
        while extent > 0 && n < self.nodes.len() {
            let node_count = i64::from(self.nodes[n].count);
            let entire = offset == 0 && extent >= node_count;
            let del = if entire {
                node_count
            } else if offset >= 0 && extent + offset >= node_count {
                node_count - offset
            } else if offset < 0 {
                (-offset).min(extent)
            } else {
                extent
            };
            if entire || self.nodes[n].plain {
                self.del_node(n);
            } else {
                self.decompress_for_use(n);
                let node = &mut self.nodes[n];
                let lp = node.lp_mut();
                if let Some(at) = lp.seek(offset) {
                    lp.delete_range(at, del as usize);
                }
                node.update();
                self.len -= del as usize;
                if node.count == 0 {
                    self.del_node(n);
                } else {
                    self.recompress_only(n);
                    n += 1;
                }
            }
            extent -= del;
            offset = 0;
        }
    }

    /// Append a plain node as loaded from RDB (quicklistAppendPlainNode).
    pub fn append_plain(&mut self, v: Box<[u8]>) {
        let at = self.nodes.len();
        let old = at.checked_sub(1);
        self.insert_node(at, Node::plain(v), old);
    }

    /// Append a whole node as loaded from RDB (quicklistAppendListpack).
    pub fn append_node(&mut self, lp: Listpack) {
        let at = self.nodes.len();
        let old = at.checked_sub(1);
        self.insert_node(at, Node::of(lp), old);
    }
}

/// Call `f` on a node's elements from offset `first` (or from its first / last element),
/// in the walking direction; false when `f` asked to stop.
fn walk(
    lp: &Listpack,
    first: Option<usize>,
    forward: bool,
    f: &mut impl FnMut(Item<'_>) -> bool,
) -> bool {
    let mut at = match first {
        Some(o) => lp.seek(o as i64),
        None if forward => lp.first(),
        None => lp.last(),
    };
    while let Some(p) = at {
        if !f(lp.get(p)) {
            return false;
        }
        at = if forward { lp.next(p) } else { lp.prev(p) };
    }
    true
}

/// Two listpacks' elements in one (lpMerge's result).
fn concat(a: &Listpack, b: &Listpack) -> Listpack {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let mut buf = Vec::with_capacity(ab.len() + bb.len() - 7);
    buf.extend_from_slice(&ab[..ab.len() - 1]);
    buf.extend_from_slice(&bb[6..]);
    let total = buf.len() as u32;
    buf[0..4].copy_from_slice(&total.to_le_bytes());
    let count = a.len() + b.len();
    let c = if count >= 65535 {
        65535u16
    } else {
        count as u16
    };
    buf[4..6].copy_from_slice(&c.to_le_bytes());
    Listpack::from_bytes(buf).unwrap_or_else(|| {
        let mut lp = a.clone();
        for it in b.iter() {
            lp.push_back(&it.to_vec());
        }
        lp
    })
}
