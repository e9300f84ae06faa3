//! The large sorted-set encoding: Redis's skiplist with spans (ranks in O(log n)), kept in
//! an arena of nodes addressed by `u32` (no per-node pointers, freed slots reused), plus a
//! hash index of node numbers keyed by the member bytes the node owns (each member stored
//! once). Order: score, then member bytes (memcmp), as Redis's zslInsert.

use super::chunked::Chunked;
use super::zset_index::MemberIndex;
use std::hash::BuildHasher;

const MAX_LEVEL: usize = 32;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

#[derive(Clone, Copy, Debug, Default)]
struct Level {
    fwd: u32,
    span: u32,
}

#[derive(Clone, Debug)]
struct Node {
    member: Box<[u8]>,
    score: f64,
    backward: u32,
    /// Levels 0 and 1 (most nodes have no others) in the node itself; levels 2 and up
    /// in the level arena from `lvl`; `height` levels in all.
    low: [Level; INLINE],
    lvl: u32,
    height: u8,
}

/// Levels kept in the node itself.
const INLINE: usize = 2;
/// Nodes and levels per chunk of their arenas.
const CHUNK_BITS: u32 = 12;

/// A stack of freed arena indexes.
type FreeList = Chunked<u32, CHUNK_BITS>;

/// Is (s1, m1) ordered before (s2, m2)?
#[inline]
fn before(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && m1 < m2)
}

#[derive(Clone)]
pub struct SkipList {
    nodes: Chunked<Node, CHUNK_BITS>,
    /// Freed node slots, for reuse (chunked as the arenas are: a long run of removals
    /// never copies the whole list to grow it).
    free: FreeList,
    /// Every node's levels, each node's contiguous; freed blocks kept by height.
    levels: Chunked<Level, CHUNK_BITS>,
    free_levels: Vec<FreeList>,
    tail: u32,
    level: usize,
    len: usize,
    index: MemberIndex,
    hasher: foldhash::fast::FixedState,
    rng: u64,
}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(m, s)| (String::from_utf8_lossy(m), s)))
            .finish()
    }
}

impl PartialEq for SkipList {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    pub fn new() -> SkipList {
        let head = Node {
            member: Box::default(),
            score: 0.0,
            backward: NIL,
            low: [Level { fwd: NIL, span: 0 }; INLINE],
            lvl: 0,
            height: MAX_LEVEL as u8,
        };
        SkipList {
            nodes: Chunked::of(head, 1),
            free: FreeList::new(),
            levels: Chunked::of(Level { fwd: NIL, span: 0 }, MAX_LEVEL - INLINE),
            free_levels: vec![FreeList::new(); MAX_LEVEL + 1],
            tail: NIL,
            level: 1,
            len: 0,
            index: MemberIndex::new(),
            hasher: foldhash::fast::FixedState::with_seed(seed()),
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Nodes allocated, live or free (the arena keeps what removals freed, for reuse):
    /// what dropping this skiplist takes apart, which may be far more than `len`.
    pub fn allocated_nodes(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    fn lv(&self, x: u32, i: usize) -> Level {
        let n = &self.nodes[x as usize];
        if i < INLINE {
            n.low[i]
        } else {
            self.levels[n.lvl as usize + i - INLINE]
        }
    }

    #[inline]
    fn lv_mut(&mut self, x: u32, i: usize) -> &mut Level {
        let n = &mut self.nodes[x as usize];
        if i < INLINE {
            return &mut n.low[i];
        }
        let at = n.lvl as usize + i - INLINE;
        &mut self.levels[at]
    }

    /// The arena block for the levels past the inline ones of a node `h` high (reused
    /// from a freed node of that height when there is one).
    fn alloc_levels(&mut self, h: usize) -> u32 {
        if h <= INLINE {
            return 0;
        }
        match self.free_levels[h].pop() {
            Some(at) => at,
            None => self.levels.push_n(Level::default(), h - INLINE) as u32,
        }
    }

    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
            // Redis: (random() & 0xFFFF) < 0.25 * 0xFFFF, sixteen bits at a time.
            if (r & 0xFFFF) < 0x3FFF && level < MAX_LEVEL {
                level += 1;
                self.rng = self.rng.rotate_left(16);
            } else {
                return level;
            }
        }
    }

    /// The 32 hash bits the index keeps for a member.
    fn tag(&self, member: &[u8]) -> u32 {
        self.hasher.hash_one(member) as u32
    }

    fn find_node(&self, member: &[u8]) -> Option<u32> {
        self.index.find(self.tag(member), |i| {
            &*self.nodes[i as usize].member == member
        })
    }

    /// The member's score, if present.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find_node(member).map(|i| self.nodes[i as usize].score)
    }

    fn fwd(&self, x: u32, i: usize) -> u32 {
        self.lv(x, i).fwd
    }

    /// Insert a member known to be absent.
    pub fn insert(&mut self, member: Box<[u8]>, score: f64) {
        let lvl = self.random_level();
        let node = Node {
            member,
            score,
            backward: NIL,
            low: [Level::default(); INLINE],
            lvl: self.alloc_levels(lvl),
            height: lvl as u8,
        };
        let n = match self.free.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => self.nodes.push_n(node, 1) as u32,
        };
        self.link(n);
        let t = self.tag(&self.nodes[n as usize].member);
        self.index.insert(t, n);
    }

    /// A list of `pairs` already in order (score, then member bytes) and distinct: each
    /// goes after the last, linked from the last node of each of its levels, with no walk
    /// from the head (a stored ZUNION/ZINTER/ZDIFF result, sorted once).
    pub fn from_sorted(pairs: impl IntoIterator<Item = (Box<[u8]>, f64)>) -> SkipList {
        let mut sl = SkipList::new();
        // The last node at each level, and its rank (1-based; the head's is 0).
        let mut last = [HEAD; MAX_LEVEL];
        let mut last_rank = [0u32; MAX_LEVEL];
        for (member, score) in pairs {
            debug_assert!(
                sl.tail == NIL || {
                    let t = &sl.nodes[sl.tail as usize];
                    before(t.score, &t.member, score, &member)
                }
            );
            let lvl = sl.random_level();
            let node = Node {
                member,
                score,
                backward: sl.tail,
                low: [Level { fwd: NIL, span: 0 }; INLINE],
                lvl: sl.alloc_levels(lvl),
                height: lvl as u8,
            };
            let n = sl.nodes.push_n(node, 1) as u32;
            let rank = sl.len as u32 + 1;
            for i in 0..lvl {
                *sl.lv_mut(last[i], i) = Level {
                    fwd: n,
                    span: rank - last_rank[i],
                };
                *sl.lv_mut(n, i) = Level { fwd: NIL, span: 0 };
                last[i] = n;
                last_rank[i] = rank;
            }
            sl.level = sl.level.max(lvl);
            sl.tail = n;
            sl.len += 1;
            let t = sl.tag(&sl.nodes[n as usize].member);
            sl.index.insert(t, n);
        }
        // A level's last node spans to the end of the list (as zslInsert keeps it).
        for i in 0..sl.level {
            sl.lv_mut(last[i], i).span = sl.len as u32 - last_rank[i];
        }
        sl
    }

    /// Link node `n` (member, score and height set; not in the list) in its place, as
    /// zslInsert does.
    fn link(&mut self, n: u32) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let (score, lvl) = (
            self.nodes[n as usize].score,
            self.nodes[n as usize].height as usize,
        );
        {
            let member = &self.nodes[n as usize].member;
            let mut x = HEAD;
            for i in (0..self.level).rev() {
                rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
                loop {
                    let f = self.fwd(x, i);
                    if f != NIL && {
                        let fnode = &self.nodes[f as usize];
                        before(fnode.score, &fnode.member, score, member)
                    } {
                        rank[i] += self.lv(x, i).span;
                        x = f;
                    } else {
                        break;
                    }
                }
                update[i] = x;
            }
        }
        if lvl > self.level {
            for i in self.level..lvl {
                rank[i] = 0;
                update[i] = HEAD;
                self.lv_mut(HEAD, i).span = self.len as u32;
            }
            self.level = lvl;
        }
        self.nodes[n as usize].backward = if update[0] == HEAD { NIL } else { update[0] };
        for i in 0..lvl {
            let u = update[i];
            let ul = self.lv(u, i);
            *self.lv_mut(n, i) = Level {
                fwd: ul.fwd,
                span: ul.span - (rank[0] - rank[i]),
            };
            *self.lv_mut(u, i) = Level {
                fwd: n,
                span: (rank[0] - rank[i]) + 1,
            };
        }
        for (i, &u) in update.iter().enumerate().take(self.level).skip(lvl) {
            self.lv_mut(u, i).span += 1;
        }
        let f0 = self.lv(n, 0).fwd;
        if f0 != NIL {
            self.nodes[f0 as usize].backward = n;
        } else {
            self.tail = n;
        }
        self.len += 1;
    }

    /// The update vector for the node with (score, member).
    fn path_to(&self, score: f64, member: &[u8]) -> [u32; MAX_LEVEL] {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f != NIL && {
                    let n = &self.nodes[f as usize];
                    before(n.score, &n.member, score, member)
                } {
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        update
    }

    /// Take node `x` out of the list (Redis's zslDeleteNode), keeping the node.
    fn unlink_links(&mut self, x: u32, update: &[u32; MAX_LEVEL]) {
        for (i, &u) in update.iter().enumerate().take(self.level) {
            let xl = (i < self.nodes[x as usize].height as usize).then(|| self.lv(x, i));
            let ul = self.lv_mut(u, i);
            match xl {
                Some(xl) if ul.fwd == x => {
                    ul.span = ul.span + xl.span - 1;
                    ul.fwd = xl.fwd;
                }
                _ => ul.span -= 1,
            }
        }
        let f0 = self.lv(x, 0).fwd;
        let back = self.nodes[x as usize].backward;
        if f0 != NIL {
            self.nodes[f0 as usize].backward = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.lv(HEAD, self.level - 1).fwd == NIL {
            self.level -= 1;
        }
        self.len -= 1;
    }

    /// Unlink node `x` (Redis's zslDeleteNode), drop it from the index and free its slot;
    /// returns its member.
    fn unlink(&mut self, x: u32, update: &[u32; MAX_LEVEL]) -> Box<[u8]> {
        self.unlink_links(x, update);
        let node = &mut self.nodes[x as usize];
        let member = std::mem::take(&mut node.member);
        let (lvl, height) = (node.lvl, node.height as usize);
        if height > INLINE {
            self.free_levels[height].push(lvl);
        }
        let t = self.tag(&member);
        self.index.remove(t, x);
        self.free.push(x);
        member
    }

    /// Remove a member; returns its score if it was present.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let x = self.find_node(member)?;
        let score = self.nodes[x as usize].score;
        let update = self.path_to(score, member);
        self.unlink(x, &update);
        Some(score)
    }

    /// Give an existing member a new score (in place when its position does not change).
    pub fn update(&mut self, member: &[u8], score: f64) {
        if let Some(x) = self.find_node(member) {
            self.update_node(x, score);
        }
    }

    /// One lookup of `member`: `decide` gets its score (None if absent) and answers the
    /// score to give it (None: leave it as it is, or do not add it).
    pub fn upsert(&mut self, member: &[u8], decide: impl FnOnce(Option<f64>) -> Option<f64>) {
        match self.find_node(member) {
            Some(x) => {
                let cur = self.nodes[x as usize].score;
                if let Some(s) = decide(Some(cur)) {
                    if s != cur {
                        self.update_node(x, s);
                    }
                }
            }
            None => {
                if let Some(s) = decide(None) {
                    self.insert(member.to_vec().into_boxed_slice(), s);
                }
            }
        }
    }

    /// Give node `x` a new score: in place when its neighbours allow, else re-linked in
    /// its new place, the node (and its index entry) kept, as zslUpdateScore does.
    fn update_node(&mut self, x: u32, score: f64) {
        let n = &self.nodes[x as usize];
        let back_ok = n.backward == NIL || self.nodes[n.backward as usize].score < score;
        let f0 = self.lv(x, 0).fwd;
        let fwd_ok = f0 == NIL || self.nodes[f0 as usize].score > score;
        if back_ok && fwd_ok {
            self.nodes[x as usize].score = score;
            return;
        }
        let update = self.path_to(n.score, &n.member);
        self.unlink_links(x, &update);
        self.nodes[x as usize].score = score;
        self.link(x);
    }

    /// The 0-based rank of a member and its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let score = self.score(member)?;
        let n = self.count_prefix(|s, m| s < score || (s == score && m <= member));
        Some((n - 1, score))
    }

    /// How many elements satisfy `pred`, a predicate true for a prefix of the order.
    pub fn count_prefix(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut rank = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f != NIL && {
                    let n = &self.nodes[f as usize];
                    pred(n.score, &n.member)
                } {
                    rank += self.lv(x, i).span as usize;
                    x = f;
                } else {
                    break;
                }
            }
        }
        rank
    }

    /// The node at 0-based `rank` (< len).
    fn at_rank(&self, rank: usize) -> u32 {
        let target = rank + 1;
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let l = self.lv(x, i);
                if l.fwd != NIL && traversed + l.span as usize <= target {
                    traversed += l.span as usize;
                    x = l.fwd;
                } else {
                    break;
                }
            }
            if traversed == target {
                return x;
            }
        }
        x
    }

    /// The member and score at 0-based `rank` (< len).
    pub fn get(&self, rank: usize) -> (&[u8], f64) {
        let n = &self.nodes[self.at_rank(rank) as usize];
        (&n.member, n.score)
    }

    /// Elements from 0-based rank `start` forwards (or backwards when `rev`), while `f`
    /// returns true.
    pub fn walk(&self, start: usize, rev: bool, mut f: impl FnMut(&[u8], f64) -> bool) {
        if start >= self.len {
            return;
        }
        let mut x = self.at_rank(start);
        while x != NIL {
            let n = &self.nodes[x as usize];
            if !f(&n.member, n.score) {
                return;
            }
            x = if rev { n.backward } else { self.lv(x, 0).fwd };
        }
    }

    /// Remove the elements at 0-based ranks `start..=end`; calls `f` with each removed
    /// member and score.
    pub fn remove_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(Box<[u8]>, f64)) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let l = self.lv(x, i);
                if l.fwd != NIL && traversed + (l.span as usize) < start + 1 {
                    traversed += l.span as usize;
                    x = l.fwd;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        traversed += 1;
        let mut x = self.fwd(x, 0);
        while x != NIL && traversed <= end + 1 {
            let next = self.fwd(x, 0);
            let score = self.nodes[x as usize].score;
            let m = self.unlink(x, &update);
            f(m, score);
            traversed += 1;
            x = next;
        }
    }

    /// Every element in order.
    /// Bytes held beyond the list itself: node and level chunks, free lists, the member
    /// index, and the members' buffers estimated from the first `samples` members.
    pub fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        self.nodes.allocated()
            + self.levels.allocated()
            + self.free.allocated()
            + mem::vec::<FreeList>(self.free_levels.capacity())
            + self
                .free_levels
                .iter()
                .map(FreeList::allocated)
                .sum::<usize>()
            + self.index.footprint()
            + mem::sampled(
                self.iter().map(|(m, _)| mem::vec::<u8>(m.len())),
                self.len,
                samples,
            )
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let mut x = self.lv(HEAD, 0).fwd;
        std::iter::from_fn(move || {
            if x == NIL {
                return None;
            }
            let n = &self.nodes[x as usize];
            x = self.lv(x, 0).fwd;
            Some((&*n.member, n.score))
        })
    }

    /// Every element from the highest to the lowest.
    pub fn iter_rev(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let mut x = self.tail;
        std::iter::from_fn(move || {
            if x == NIL {
                return None;
            }
            let n = &self.nodes[x as usize];
            x = n.backward;
            Some((&*n.member, n.score))
        })
    }

    /// ZSCAN: home slots of the member index in reverse-binary order (dictScan's cursor)
    /// until `count` members are collected or the walk ends (next cursor 0); at most
    /// ten slots per member asked for, so a call costs in proportion to `count`.
    pub fn scan(&self, mut cursor: u64, count: usize) -> (u64, Vec<(Vec<u8>, f64)>) {
        let mut out = Vec::new();
        let mut steps = count.max(1).saturating_mul(10);
        loop {
            cursor = self.index.scan_step(cursor, |i| {
                let n = &self.nodes[i as usize];
                out.push((n.member.to_vec(), n.score));
            });
            steps -= 1;
            if cursor == 0 || out.len() >= count || steps == 0 {
                return (cursor, out);
            }
        }
    }
}

/// The member-hash seed: random per process, the same for every sorted set (ZSCAN cursors).
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| foldhash::fast::RandomState::default().hash_one(0x5eed_u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Copy, PartialEq, PartialOrd)]
    struct Sc(f64);
    impl Eq for Sc {}
    #[allow(clippy::derive_ord_xor_partial_ord)]
    impl Ord for Sc {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            self.0.partial_cmp(&o.0).expect("no NaN")
        }
    }

    fn check(sl: &SkipList, model: &BTreeMap<(Sc, Vec<u8>), ()>) {
        let got: Vec<(Vec<u8>, f64)> = sl.iter().map(|(m, s)| (m.to_vec(), s)).collect();
        let want: Vec<(Vec<u8>, f64)> = model.keys().map(|(s, m)| (m.clone(), s.0)).collect();
        assert_eq!(got, want);
        let back: Vec<(Vec<u8>, f64)> = sl.iter_rev().map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
        for (r, (m, s)) in want.iter().enumerate() {
            assert_eq!(sl.rank(m), Some((r, *s)));
            assert_eq!(sl.get(r), (&m[..], *s));
        }
    }

    proptest::proptest! {
        #[test]
        fn built_sorted_as_inserted(members in proptest::collection::btree_map(0u16..2000, -50i8..50, 0..400)) {
            let mut model: BTreeMap<(Sc, Vec<u8>), ()> = BTreeMap::new();
            for (m, s) in &members {
                model.insert((Sc(f64::from(*s)), format!("m{m}").into_bytes()), ());
            }
            let mut sl = SkipList::from_sorted(
                model.keys().map(|(s, m)| (m.clone().into_boxed_slice(), s.0)),
            );
            check(&sl, &model);
            // Spans and links stay right for what comes after.
            for k in 0..50u16 {
                let m = format!("x{k}").into_bytes();
                let s = f64::from(k % 7) * 10.0 - 30.0;
                sl.insert(m.clone().into_boxed_slice(), s);
                model.insert((Sc(s), m), ());
            }
            if let Some((s, m)) = model.keys().nth(model.len() / 2).cloned() {
                assert_eq!(sl.remove(&m), Some(s.0));
                model.remove(&(s, m));
            }
            check(&sl, &model);
        }

        #[test]
        fn model(ops in proptest::collection::vec((0u8..4, 0u8..40, -5i8..5), 1..300)) {
            let mut sl = SkipList::new();
            let mut model: BTreeMap<(Sc, Vec<u8>), ()> = BTreeMap::new();
            let mut scores: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for (op, m, s) in ops {
                let m = format!("m{m}").into_bytes();
                let s = f64::from(s);
                match op {
                    0 | 1 => {
                        if let Some(old) = scores.insert(m.clone(), s) {
                            model.remove(&(Sc(old), m.clone()));
                            sl.update(&m, s);
                        } else {
                            sl.insert(m.clone().into_boxed_slice(), s);
                        }
                        model.insert((Sc(s), m), ());
                    }
                    2 => {
                        let old = scores.remove(&m);
                        assert_eq!(sl.remove(&m), old);
                        if let Some(old) = old {
                            model.remove(&(Sc(old), m));
                        }
                    }
                    _ => {
                        if !model.is_empty() {
                            let a = (s.abs() as usize) % model.len();
                            let b = (a + 2).min(model.len() - 1);
                            let gone: Vec<_> = model.keys().skip(a).take(b - a + 1).cloned().collect();
                            let mut removed = Vec::new();
                            sl.remove_ranks(a, b, |m, s| removed.push((m.to_vec(), s)));
                            for (s, m) in &gone {
                                model.remove(&(*s, m.clone()));
                                scores.remove(m);
                            }
                            assert_eq!(removed, gone.into_iter().map(|(s, m)| (m, s.0)).collect::<Vec<_>>());
                        }
                    }
                }
                assert_eq!(sl.len(), model.len());
            }
            check(&sl, &model);
            let n = sl.count_prefix(|s, _| s < 0.0);
            assert_eq!(n, model.keys().filter(|(s, _)| s.0 < 0.0).count());
        }
    }
}
