//! The shards one command holds, and the only way to read or write keys.
//!
//! A [`Plan`] names what a command touches (its keys, hashed once each; a whole database;
//! or every database). [`Keyspace::lock`] takes those shard locks in ascending (db, shard)
//! order and returns a [`Locked`]: reads and writes are different calls on it, and every
//! write records a change event ([`Changes`]) that the server feeds to its consumers while
//! the locks are still held.
//!
//! A `Locked` that holds nothing (a command without keys) may still walk a database: it
//! then locks one shard at a time and releases it before the next, so it never holds two.

use crate::clock::now_ms;
use crate::entry::{Entry, ValueMut};
use crate::event::{Changes, DbChange, Event};
use crate::evict::access;
use crate::expiry::{Expiry, OnExpired};
use crate::keyspace::{Cleared, Keyspace};
use crate::lockstat::LockWaits;
use crate::shard::{hash_key, set_expire_indexed, Expires, Lookup, Shard};
use crate::shard_lock::{ShardGuard, ShardLock};
use crate::ttl_map::TtlBit;
use crate::value::{Value, ValueRef};
use smallvec::SmallVec;

/// What a command holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The shards of its keys (none for a command without keys).
    Keys,
    /// Every shard of one database (FLUSHDB; EXEC of a command that walks a database).
    Db(usize),
    /// Every shard of every database (FLUSHALL, SWAPDB).
    All,
}

/// A key's hash, remembered by the address of the argument it was computed for, so the
/// handler's lookups do not hash again.
#[derive(Clone, Copy, Debug)]
struct KeyHash {
    addr: usize,
    len: usize,
    hash: u64,
}

/// The locks a command needs, worked out before it runs.
#[derive(Clone, Debug)]
pub struct Plan {
    scope: Scope,
    /// (db, shard) of each key, in the order added.
    slots: SmallVec<[(u32, u32); 2]>,
    hashes: SmallVec<[KeyHash; 2]>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            scope: Scope::Keys,
            slots: SmallVec::new(),
            hashes: SmallVec::new(),
        }
    }
}

impl Plan {
    pub fn new() -> Plan {
        Plan::default()
    }

    /// Add a key of database `db` (hashed here, once).
    #[inline]
    pub fn key(&mut self, ks: &Keyspace, db: usize, key: &[u8]) {
        let hash = hash_key(key);
        let shard = ks.db(db).shard_index(hash);
        self.slots.push((db as u32, shard as u32));
        self.hashes.push(KeyHash {
            addr: key.as_ptr() as usize,
            len: key.len(),
            hash,
        });
    }

    /// One shard by index (the expiry cycle).
    pub fn shard(&mut self, db: usize, shard: usize) {
        self.slots.push((db as u32, shard as u32));
    }

    /// Hold every shard of `db` (widening to every database if the plan already needs
    /// another one).
    pub fn whole_db(&mut self, db: usize) {
        self.scope = match self.scope {
            Scope::Keys | Scope::Db(_) if self.only_db(db) => Scope::Db(db),
            _ => Scope::All,
        };
    }

    pub fn all(&mut self) {
        self.scope = Scope::All;
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The (db, shard) of each key added, in the order added.
    pub fn slots(&self) -> &[(u32, u32)] {
        &self.slots
    }

    /// Add another plan's needs (EXEC's union of its commands').
    pub fn merge(&mut self, other: &Plan) {
        self.slots.extend_from_slice(&other.slots);
        self.hashes.extend_from_slice(&other.hashes);
        match other.scope {
            Scope::Keys => {}
            Scope::Db(d) => self.whole_db(d),
            Scope::All => self.all(),
        }
    }

    pub fn clear(&mut self) {
        *self = Plan::default();
    }

    /// Is everything planned so far in `db`?
    fn only_db(&self, db: usize) -> bool {
        let db = db as u32;
        let scope_ok = match self.scope {
            Scope::Db(d) => d as u32 == db,
            Scope::Keys => true,
            Scope::All => false,
        };
        scope_ok && self.slots.iter().all(|(d, _)| *d == db)
    }
}

/// One held shard.
struct Held<'a> {
    db: u32,
    shard: u32,
    guard: ShardGuard<'a>,
}

/// Read lookup flags (Redis's LOOKUP_NOTOUCH, LOOKUP_NOSTATS, LOOKUP_NONOTIFY).
#[derive(Clone, Copy, Debug)]
pub struct Read {
    pub touch: bool,
    pub stats: bool,
    pub notify: bool,
}

impl Read {
    /// lookupKeyRead: refreshes the access time, counts a hit or miss, announces a miss.
    pub const NORMAL: Read = Read {
        touch: true,
        stats: true,
        notify: true,
    };
    /// TYPE, TTL, EXISTS: no access-time update.
    pub const NOTOUCH: Read = Read {
        touch: false,
        stats: true,
        notify: true,
    };
    /// OBJECT: no access-time update, no key-miss event.
    pub const NOTOUCH_NONOTIFY: Read = Read {
        touch: false,
        stats: true,
        notify: false,
    };
}

/// The shards a command holds. See the module documentation.
pub struct Locked<'a> {
    ks: &'a Keyspace,
    db: usize,
    scope: Scope,
    /// Sorted by (db, shard); for `Db`/`All` every shard, indexable directly.
    guards: SmallVec<[Held<'a>; 2]>,
    hashes: SmallVec<[KeyHash; 2]>,
    /// Where the last remembered hash was found (handlers use keys in order).
    cursor: usize,
    now: i64,
    /// What lookups do with keys past their TTL (the dispatcher's choice per command).
    expiry: Expiry,
    /// The command's change buffer, lent by the caller (reused from command to command
    /// without being moved).
    pub changes: &'a mut Changes,
    /// Asked, with the busy shard's (db, shard), each [`WAIT_SLICE`] a walk waits for a
    /// shard another command holds: stop the walk? (None: walks wait until it is free.)
    walk_give_up: Option<&'a GiveUp<'a>>,
    /// The shard a walk stopped at, once `walk_give_up` said so: later walks of this
    /// command do nothing, and its caller discards what the command made of them.
    walk_stopped: Option<(u32, u32)>,
}

impl Drop for Locked<'_> {
    /// Release the shards, then drop the big values freed under them (see
    /// [`crate::release::defer`]).
    #[inline]
    fn drop(&mut self) {
        self.guards.clear();
        crate::release::drain();
    }
}

impl Keyspace {
    /// Take the plan's locks in ascending (db, shard) order. `db` is the database that
    /// key lookups without an explicit one use; `changes` is an empty buffer to record
    /// into (reused between commands).
    ///
    /// The plan's key hashes move into the `Locked` (the plan is left without them).
    #[inline]
    pub fn lock<'a>(&'a self, plan: &mut Plan, db: usize, changes: &'a mut Changes) -> Locked<'a> {
        match self.lock_or(plan, db, changes, &|_, _| false) {
            Some(l) => l,
            None => unreachable!("a wait that never gives up"),
        }
    }

    /// [`Keyspace::lock`], asking `give_up(scope, key slots)` every [`WAIT_SLICE`] while a
    /// shard is busy: `None` (nothing held) once it says so (a busy script holds a shard
    /// the plan needs).
    #[inline]
    pub fn lock_or<'a>(
        &'a self,
        plan: &mut Plan,
        db: usize,
        changes: &'a mut Changes,
        give_up: &GiveUp<'_>,
    ) -> Option<Locked<'a>> {
        let (scope, guards) = self.take_guards(plan, give_up)?;
        Some(Locked {
            ks: self,
            db,
            scope,
            guards,
            hashes: std::mem::take(&mut plan.hashes),
            cursor: 0,
            now: now_ms(),
            expiry: Expiry::DELETE,
            changes,
            walk_give_up: None,
            walk_stopped: None,
        })
    }

    /// The plan's shards, locked in ascending (db, shard) order.
    ///
    /// No thread ever waits for a shard while holding another: several shards are taken
    /// with `try_lock`; at the first busy one, everything taken is released, that shard
    /// is waited for alone (and released), and the round starts again. A script that
    /// reaches keys it did not declare can then take their shards out of order without
    /// waiting (`try_extend`) and only ever waits for a holder that is running, never
    /// for one blocked behind it.
    #[inline]
    fn take_guards<'a>(
        &'a self,
        plan: &mut Plan,
        give_up: &GiveUp<'_>,
    ) -> Option<(Scope, SmallVec<[Held<'a>; 2]>)> {
        let mut scope = plan.scope;
        if let Scope::Db(d) = scope {
            if !plan.only_db(d) {
                scope = Scope::All;
            }
        }
        if scope == Scope::Keys && plan.slots.len() > 1 {
            plan.slots.sort_unstable();
            plan.slots.dedup();
        }
        let slots = &plan.slots;
        let give_up = || give_up(scope, slots);
        if scope == Scope::Keys && plan.slots.len() == 1 {
            let (d, s) = plan.slots[0];
            let mut guards = SmallVec::new();
            guards.push(Held {
                db: d,
                shard: s,
                guard: acquire(
                    &self.db(d as usize).shards[s as usize],
                    &give_up,
                    &self.lock_waits,
                )?,
            });
            return Some((scope, guards));
        }
        loop {
            let mut guards: SmallVec<[Held<'a>; 2]> = SmallVec::new();
            let mut busy = None;
            each_shard(self, scope, &plan.slots, |d, s| {
                match self.db(d as usize).shards[s as usize].try_lock() {
                    Some(guard) => guards.push(Held {
                        db: d,
                        shard: s,
                        guard,
                    }),
                    None => busy = Some((d, s)),
                }
                busy.is_none()
            });
            let Some((d, s)) = busy else {
                return Some((scope, guards));
            };
            drop(guards);
            drop(acquire(
                &self.db(d as usize).shards[s as usize],
                &give_up,
                &self.lock_waits,
            )?);
        }
    }

    /// The shard of one key of `db`: what [`Keyspace::lock`] does for a one-key plan,
    /// without building the plan (the common single-key command's fast path).
    #[inline]
    pub fn lock_key<'a>(&'a self, db: usize, key: &[u8], changes: &'a mut Changes) -> Locked<'a> {
        match self.lock_key_or(db, key, changes, &|_, _| false) {
            Some(l) => l,
            None => unreachable!("a wait that never gives up"),
        }
    }

    /// [`Keyspace::lock_key`], giving up as [`Keyspace::lock_or`] does.
    #[inline]
    pub fn lock_key_or<'a>(
        &'a self,
        db: usize,
        key: &[u8],
        changes: &'a mut Changes,
        give_up: &GiveUp<'_>,
    ) -> Option<Locked<'a>> {
        let hash = hash_key(key);
        let d = self.db(db);
        let shard = d.shard_index(hash);
        let mut guards: SmallVec<[Held<'a>; 2]> = SmallVec::new();
        guards.push(Held {
            db: db as u32,
            shard: shard as u32,
            guard: acquire(
                &d.shards[shard],
                &|| give_up(Scope::Keys, &[(db as u32, shard as u32)]),
                &self.lock_waits,
            )?,
        });
        let mut hashes = SmallVec::new();
        hashes.push(KeyHash {
            addr: key.as_ptr() as usize,
            len: key.len(),
            hash,
        });
        Some(Locked {
            ks: self,
            db,
            scope: Scope::Keys,
            guards,
            hashes,
            cursor: 0,
            now: now_ms(),
            expiry: Expiry::DELETE,
            changes,
            walk_give_up: None,
            walk_stopped: None,
        })
    }

    /// Nothing held (yet): walks lock one shard at a time; keys cannot be reached.
    pub fn unlocked<'a>(&'a self, db: usize, changes: &'a mut Changes) -> Locked<'a> {
        Locked {
            ks: self,
            db,
            scope: Scope::Keys,
            guards: SmallVec::new(),
            hashes: SmallVec::new(),
            cursor: 0,
            now: now_ms(),
            expiry: Expiry::DELETE,
            changes,
            walk_give_up: None,
            walk_stopped: None,
        }
    }
}

/// Asked while a shard stays busy, with the plan's scope and key slots (db, shard):
/// give the wait up?
pub type GiveUp<'f> = dyn Fn(Scope, &[(u32, u32)]) -> bool + 'f;

/// How long a wait for a busy shard lasts before asking whether to give up.
pub const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

/// How long a walk waits for a shard another command holds.
#[derive(Clone, Copy)]
enum Wait<'f> {
    /// Until it is free.
    Always,
    /// One [`WAIT_SLICE`].
    Slice,
    /// Until it is free, or until the function, asked every [`WAIT_SLICE`], says to stop.
    Asking(&'f dyn Fn() -> bool),
    /// Not at all.
    Never,
}

/// Lock `m`, asking `give_up` every [`WAIT_SLICE`] while it is busy; a wait (taken or
/// given up) is counted in `waits`.
#[inline]
fn acquire<'a>(
    m: &'a ShardLock,
    give_up: &dyn Fn() -> bool,
    waits: &LockWaits,
) -> Option<ShardGuard<'a>> {
    if let Some(g) = m.try_lock() {
        return Some(g);
    }
    wait_for(m, give_up, waits)
}

/// [`acquire`]'s wait, out of line so the uncontended path stays small and inlined.
#[cold]
#[inline(never)]
fn wait_for<'a>(
    m: &'a ShardLock,
    give_up: &dyn Fn() -> bool,
    waits: &LockWaits,
) -> Option<ShardGuard<'a>> {
    let since = std::time::Instant::now();
    loop {
        if let Some(g) = m.try_lock_for(WAIT_SLICE) {
            waits.record(since);
            return Some(g);
        }
        if give_up() {
            waits.record(since);
            return None;
        }
    }
}

/// Call `f(db, shard)` for each shard a plan of `scope` (with these key `slots`) needs,
/// in ascending order, until it returns false.
fn each_shard(
    ks: &Keyspace,
    scope: Scope,
    slots: &[(u32, u32)],
    mut f: impl FnMut(u32, u32) -> bool,
) {
    let dbs = match scope {
        Scope::Keys => {
            for &(d, s) in slots {
                if !f(d, s) {
                    return;
                }
            }
            return;
        }
        Scope::Db(d) => d..d + 1,
        Scope::All => 0..ks.len(),
    };
    for d in dbs {
        for s in 0..ks.db(d).shard_count() {
            if !f(d as u32, s as u32) {
                return;
            }
        }
    }
}

/// The held shard `(db, index)`, if held. A caller that modifies a key of it first calls
/// [`Keyspace::copy_on_write_key`] (or [`Keyspace::copy_on_write_removed`]) for that key,
/// for a snapshot in progress (copy-on-write).
#[inline]
fn held<'g>(
    guards: &'g mut [Held<'_>],
    scope: Scope,
    per_db: usize,
    db: usize,
    index: usize,
) -> Option<&'g mut Shard> {
    let pos = match scope {
        Scope::Db(d) if d == db => Some(index),
        Scope::All => Some(db * per_db + index),
        Scope::Db(_) => None,
        Scope::Keys => guards
            .binary_search_by(|h| (h.db, h.shard).cmp(&(db as u32, index as u32)))
            .ok(),
    }?;
    Some(&mut *guards.get_mut(pos)?.guard)
}

impl<'a> Locked<'a> {
    /// The database key lookups use.
    pub fn db(&self) -> usize {
        self.db
    }

    /// Switch the database key lookups use (SELECT inside EXEC).
    pub fn set_db(&mut self, db: usize) {
        self.db = db;
    }

    pub fn keyspace(&self) -> &'a Keyspace {
        self.ks
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The time this command runs at (fixed when the locks were taken).
    pub fn now(&self) -> i64 {
        self.now
    }

    /// How this command's lookups treat keys past their TTL (default: deleted).
    #[inline]
    pub fn set_expiry(&mut self, expiry: Expiry) {
        self.expiry = expiry;
    }

    pub fn expiry(&self) -> Expiry {
        self.expiry
    }

    /// The (db, shard) pairs held, in order.
    pub fn held_shards(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.guards.iter().map(|h| (h.db, h.shard))
    }

    /// Does this hold every shard `plan` needs?
    pub fn covers(&mut self, plan: &Plan) -> bool {
        let mut covered = true;
        self.each_need(plan, |this, db, shard| {
            covered = this.position(db, shard).is_ok();
            covered
        });
        covered
    }

    /// Take, without waiting, the shards `plan` needs that are not held yet (a script
    /// reaching a key it did not declare). Never blocks, so taking shards out of
    /// (db, shard) order cannot deadlock; nothing is released before the command ends
    /// (two-phase locking), so the command stays serializable. Returns false when a
    /// shard is busy (what was taken stays held).
    pub fn try_extend(&mut self, plan: &Plan) -> bool {
        let mut ok = true;
        self.each_need(plan, |this, db, shard| {
            let Err(at) = this.position(db, shard) else {
                return true;
            };
            match this.ks.db(db as usize).shards[shard as usize].try_lock() {
                Some(guard) => {
                    // Guards are sorted by (db, shard) in every scope: reading them as
                    // `Keys` (binary search) stays valid while shards are added.
                    this.scope = Scope::Keys;
                    this.guards.insert(at, Held { db, shard, guard });
                    true
                }
                None => {
                    ok = false;
                    false
                }
            }
        });
        self.normalize_scope();
        ok
    }

    /// Release everything held and take `plan`'s shards in (db, shard) order (a script
    /// restarting under a wider lock). What was recorded stays in the change buffer.
    pub fn relock(&mut self, plan: &mut Plan) {
        let taken = self.relock_or(plan, &|_, _| false);
        debug_assert!(taken, "a wait that never gives up");
    }

    /// [`Locked::relock`], asking `give_up` between waits for a busy shard: false when it
    /// gave up, holding nothing then.
    pub fn relock_or(&mut self, plan: &mut Plan, give_up: &GiveUp<'_>) -> bool {
        self.guards.clear();
        self.hashes.clear();
        self.cursor = 0;
        let Some((scope, guards)) = self.ks.take_guards(plan, give_up) else {
            self.scope = Scope::Keys;
            return false;
        };
        self.scope = scope;
        self.guards = guards;
        self.hashes = std::mem::take(&mut plan.hashes);
        true
    }

    /// Where shard (db, shard) is among the held guards (`Err`: where it would go).
    fn position(&self, db: u32, shard: u32) -> Result<usize, usize> {
        self.guards
            .binary_search_by(|h| (h.db, h.shard).cmp(&(db, shard)))
    }

    /// Call `f(self, db, shard)` for each shard `plan` needs, until it returns false.
    fn each_need(&mut self, plan: &Plan, mut f: impl FnMut(&mut Self, u32, u32) -> bool) {
        let mut needs: SmallVec<[(u32, u32); 8]> = SmallVec::new();
        let scope = match plan.scope {
            Scope::Db(d) if !plan.only_db(d) => Scope::All,
            s => s,
        };
        each_shard(self.ks, scope, &plan.slots, |d, s| {
            needs.push((d, s));
            true
        });
        for (d, s) in needs {
            if !f(self, d, s) {
                return;
            }
        }
    }

    /// After shards were added: every shard of one database, or of all, held in order
    /// is indexable directly again.
    fn normalize_scope(&mut self) {
        if self.scope != Scope::Keys {
            return;
        }
        let total: usize = (0..self.ks.len())
            .map(|d| self.ks.db(d).shard_count())
            .sum();
        if self.guards.len() == total {
            self.scope = Scope::All;
            return;
        }
        if let (Some(first), Some(last)) = (self.guards.first(), self.guards.last()) {
            let d = first.db as usize;
            if first.db == last.db && self.guards.len() == self.ks.db(d).shard_count() {
                self.scope = Scope::Db(d);
            }
        }
    }

    /// Release the locks (the lent change buffer holds what was recorded).
    #[inline]
    pub fn release(self) {}

    #[inline]
    fn hash(&mut self, key: &[u8]) -> u64 {
        let (addr, len) = (key.as_ptr() as usize, key.len());
        let n = self.hashes.len();
        for i in 0..n {
            let j = (self.cursor + i) % n;
            let k = self.hashes[j];
            if k.addr == addr && k.len == len {
                self.cursor = j + 1;
                return k.hash;
            }
        }
        hash_key(key)
    }

    /// The held shard for `key` (hash `h`) of database `db`, about to be modified there
    /// (a snapshot in progress gets the key's value first), its TTL bit, and the change
    /// buffer.
    ///
    /// Panics if the shard is not held: a command touched a key its plan did not name, a
    /// bug the dispatcher turns into an error reply.
    #[inline]
    fn shard_for(
        &mut self,
        db: usize,
        h: u64,
        key: &[u8],
    ) -> (&mut Shard, TtlBit<'a>, &mut Changes) {
        let ks = self.ks;
        let d = ks.db(db);
        let index = d.shard_index(h);
        let per_db = d.shard_count();
        match held(&mut self.guards, self.scope, per_db, db, index) {
            Some(s) => {
                ks.copy_on_write_key(db, index, s, h, key);
                (s, d.ttl_bit(index), &mut *self.changes)
            }
            None => panic!("key of db {db} shard {index} used without its lock"),
        }
    }

    /// Run `f` on shard `index` of `db` (and its TTL bit): the held one, or (when nothing
    /// is held) locked for the length of `f` only.
    /// `f` calls [`Keyspace::copy_on_write_removed`] for each key it deletes.
    fn with_shard<R>(
        &mut self,
        db: usize,
        index: usize,
        f: impl FnOnce(&mut Shard, TtlBit<'a>, &mut Changes) -> R,
    ) -> R {
        match self.shard_then(db, index, Wait::Always, f) {
            Some(r) => r,
            None => unreachable!("a shard waited for is always taken"),
        }
    }

    /// Does this command hold shard `index` of `db`?
    fn holds_shard(&mut self, db: usize, index: usize) -> bool {
        let per_db = self.ks.db(db).shard_count();
        held(&mut self.guards, self.scope, per_db, db, index).is_some()
    }

    /// `f` on shard `index` of `db`: the held one, or locked as `wait` says (None: not
    /// taken). Walks that may stop early or skip a shard (`Wait::Slice`, `Wait::Never`,
    /// `Wait::Asking`) need not wait out a long command on the offload pool.
    fn shard_then<R>(
        &mut self,
        db: usize,
        index: usize,
        wait: Wait<'_>,
        f: impl FnOnce(&mut Shard, TtlBit<'a>, &mut Changes) -> R,
    ) -> Option<R> {
        let ks = self.ks;
        let d = ks.db(db);
        let per_db = d.shard_count();
        if let Some(s) = held(&mut self.guards, self.scope, per_db, db, index) {
            return Some(f(s, d.ttl_bit(index), &mut *self.changes));
        }
        // Waiting for a shard while holding others could deadlock; a try cannot.
        assert!(
            matches!(wait, Wait::Never) || self.guards.is_empty(),
            "walking db {db} while holding other shards"
        );
        let m = &d.shards[index];
        let mut g = match wait {
            Wait::Always => m.lock_counted(&ks.lock_waits),
            Wait::Slice => acquire(m, &|| true, &ks.lock_waits)?,
            Wait::Asking(give_up) => acquire(m, give_up, &ks.lock_waits)?,
            Wait::Never => m.try_lock()?,
        };
        Some(f(&mut g, d.ttl_bit(index), &mut *self.changes))
    }

    // ---- reads ----

    /// lookupKeyRead on the current database.
    #[inline]
    pub fn get(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup_read(self.db, key, Read::NORMAL, false)
            .map(|e| &*e)
    }

    /// A read lookup with Redis's flags, on database `db`. The entry may be modified in
    /// place (a cache PFCOUNT keeps): a snapshot in progress takes the shard first.
    #[inline]
    pub fn read_in(&mut self, db: usize, key: &[u8], how: Read) -> Option<&mut Entry> {
        self.lookup_read(db, key, how, true)
    }

    /// The shard of a read that only looks (`get`, `read`): a snapshot in progress takes
    /// it first only when the lookup changes what it would save, deleting an expired key
    /// or touching an access time it saves (IDLE/FREQ). Other reads leave the shard to
    /// the saver: a GET does not write out a shard of keys.
    fn shard_for_look(
        &mut self,
        db: usize,
        h: u64,
        key: &[u8],
        touch: bool,
    ) -> (&mut Shard, TtlBit<'a>, &mut Changes) {
        let ks = self.ks;
        let d = ks.db(db);
        let (index, per_db) = (d.shard_index(h), d.shard_count());
        let Some(shard) = held(&mut self.guards, self.scope, per_db, db, index) else {
            panic!("key of db {db} shard {index} used without its lock");
        };
        let now = self.now;
        if ks.snapshot_on()
            && (shard.peek(h, key).is_some_and(|e| e.is_expired(now))
                || (touch && ks.snapshot_saves_access()))
        {
            ks.copy_on_write_key(db, index, shard, h, key);
        }
        (shard, d.ttl_bit(index), &mut *self.changes)
    }

    /// lookupKeyRead; `modify`: the caller may change the entry it gets.
    #[inline]
    fn lookup_read(
        &mut self,
        db: usize,
        key: &[u8],
        how: Read,
        modify: bool,
    ) -> Option<&mut Entry> {
        let h = self.hash(key);
        let (now, on) = (self.now, self.expiry.read);
        let (shard, bit, changes) = if modify {
            self.shard_for(db, h, key)
        } else {
            self.shard_for_look(db, h, key, how.touch)
        };
        let found = match shard.lookup(h, key, now, bit, on) {
            Lookup::Live(e, _) => {
                if how.touch {
                    e.touch();
                }
                Some(e)
            }
            Lookup::Expired(e) => {
                changes.record(db, key, Event::EXPIRED);
                crate::release::release(e, crate::release::Why::Expired);
                None
            }
            Lookup::Missing => None,
        };
        match &found {
            Some(_) if how.stats => changes.hits += 1,
            None => {
                if how.notify {
                    changes.record(db, key, Event::KEY_MISS);
                }
                if how.stats {
                    changes.misses += 1;
                }
            }
            _ => {}
        }
        found
    }

    /// A read with flags on the current database.
    pub fn read(&mut self, key: &[u8], how: Read) -> Option<&Entry> {
        self.lookup_read(self.db, key, how, false).map(|e| &*e)
    }

    /// The entry as it is, expired or not, without statistics or access-time update
    /// (introspection: DEBUG OBJECT, MEMORY USAGE).
    pub fn peek(&mut self, key: &[u8]) -> Option<&Entry> {
        self.peek_in(self.db, key)
    }

    /// [`Locked::peek`] for an estimate: `None` when the key's shard is not held (no
    /// panic), and a read that never makes a running snapshot copy the shard.
    pub fn peek_if_held(&mut self, key: &[u8]) -> Option<&Entry> {
        let h = self.hash(key);
        let d = self.ks.db(self.db);
        let (index, per_db) = (d.shard_index(h), d.shard_count());
        held(&mut self.guards, self.scope, per_db, self.db, index)?.peek(h, key)
    }

    pub fn peek_in(&mut self, db: usize, key: &[u8]) -> Option<&Entry> {
        let h = self.hash(key);
        let (shard, _, _) = self.shard_for(db, h, key);
        shard.peek(h, key)
    }

    // ---- writes ----

    /// lookupKeyWrite on database `db`: deletes the key if its TTL has passed (recording
    /// `expired`) and says whether it exists.
    pub fn exists_for_write_in(&mut self, db: usize, key: &[u8]) -> bool {
        self.modify_in(db, key, Event::NONE).is_some()
    }

    pub fn exists_for_write(&mut self, key: &[u8]) -> bool {
        self.exists_for_write_in(self.db, key)
    }

    /// The live entry for modification in place; `event` is recorded (once) if it is
    /// modified.
    #[inline]
    pub fn modify(&mut self, key: &[u8], event: Event) -> Option<EntryMut<'_>> {
        self.modify_in(self.db, key, event)
    }

    #[inline]
    pub fn modify_in(&mut self, db: usize, key: &[u8], event: Event) -> Option<EntryMut<'_>> {
        let h = self.hash(key);
        let (now, on) = (self.now, self.expiry.write);
        let (shard, bit, changes) = self.shard_for(db, h, key);
        match shard.lookup(h, key, now, bit, on) {
            Lookup::Live(entry, expires) => {
                entry.touch();
                Some(EntryMut {
                    entry,
                    expires,
                    bit,
                    changes,
                    db,
                    event,
                    changed: false,
                })
            }
            Lookup::Expired(e) => {
                changes.record(db, key, Event::EXPIRED);
                crate::release::release(e, crate::release::Why::Expired);
                None
            }
            Lookup::Missing => None,
        }
    }

    /// Store `value` under `key` (replacing any value and TTL it had): Redis's setKey.
    /// Records `new` if the key is created, then `event`.
    pub fn insert<'v>(
        &mut self,
        key: &[u8],
        value: impl Into<ValueRef<'v>>,
        expire_at: i64,
        event: Event,
    ) {
        let entry = Entry::new(key, value, expire_at, self.set_key_field(key));
        self.insert_entry_in(self.db, key, entry, event);
    }

    /// Store an owned value (a collection built by the command moves in without a copy)
    /// under `key`, replacing any value and TTL: records `new` if the key is created, then
    /// `event`.
    pub fn insert_value(&mut self, key: &[u8], value: Value, expire_at: i64, event: Event) {
        let entry = Entry::from_value(key, value, expire_at, self.set_key_field(key));
        self.insert_entry_in(self.db, key, entry, event);
    }

    /// The access field of a value stored by setKey: a new key's, except that under LFU
    /// an overwritten key keeps its counter, touched (lookupKeyWrite, then dbOverwrite
    /// keeping the old object's field).
    fn set_key_field(&mut self, key: &[u8]) -> u32 {
        if access::lfu() {
            let (now, keep) = (self.now, self.expiry.write == OnExpired::Keep);
            if let Some(old) = self.peek(key).filter(|e| keep || !e.is_expired(now)) {
                return access::touched(old.lru());
            }
        }
        access::fresh()
    }

    /// Put a whole entry in database `db` under `key`, which must be its key (RENAME,
    /// MOVE, COPY, RESTORE), replacing any; records `new` if the key is created, then
    /// `event`.
    #[inline]
    pub fn insert_entry_in(&mut self, db: usize, key: &[u8], entry: Entry, event: Event) {
        debug_assert_eq!(key, entry.key());
        let h = self.hash(key);
        let (now, keep) = (self.now, self.expiry.write == OnExpired::Keep);
        let (shard, bit, changes) = self.shard_for(db, h, key);
        match shard.insert_entry(h, entry, bit) {
            Some(old) if keep || !old.is_expired(now) => {
                crate::release::release(old, crate::release::Why::Overwritten);
            }
            Some(old) => {
                // lookupKeyWrite would have deleted it first.
                changes.record(db, key, Event::EXPIRED);
                changes.record(db, key, Event::NEW);
                crate::release::release(old, crate::release::Why::Expired);
            }
            None => changes.record(db, key, Event::NEW),
        }
        changes.record(db, key, event);
    }

    /// Delete `key` (a key past its TTL counts as absent and is recorded `expired`).
    pub fn remove(&mut self, key: &[u8], event: Event) -> Option<Entry> {
        self.remove_in(self.db, key, event)
    }

    pub fn remove_in(&mut self, db: usize, key: &[u8], event: Event) -> Option<Entry> {
        let h = self.hash(key);
        let (now, keep) = (self.now, self.expiry.write == OnExpired::Keep);
        let (shard, bit, changes) = self.shard_for(db, h, key);
        let e = shard.remove(h, key, bit)?;
        if !keep && e.is_expired(now) {
            changes.record(db, key, Event::EXPIRED);
            crate::release::release(e, crate::release::Why::Expired);
            return None;
        }
        changes.record(db, key, event);
        Some(e)
    }

    /// Set or clear the TTL of an existing key; false if it does not exist.
    pub fn set_expire(&mut self, key: &[u8], expire_at: i64, event: Event) -> bool {
        match self.modify(key, event) {
            Some(mut e) => {
                e.set_expire(expire_at);
                true
            }
            None => false,
        }
    }

    /// Record `event` for `key` of the current database (after a write made with
    /// [`Event::NONE`], to announce events in Redis's order).
    pub fn notify(&mut self, key: &[u8], event: Event) {
        self.changes.record(self.db, key, event);
    }

    pub fn notify_in(&mut self, db: usize, key: &[u8], event: Event) {
        self.changes.record(db, key, event);
    }

    /// Add to the dirty counter beyond the events' own count.
    pub fn add_dirty(&mut self, n: u64) {
        self.changes.extra_dirty += n;
    }

    /// Empty database `db` (its shards must be held); returns what was removed so the
    /// caller can free it where it likes.
    pub fn flush_db(&mut self, db: usize) -> Cleared {
        let per_db = self.ks.db(db).shard_count();
        let mut out = Vec::with_capacity(per_db);
        let mut removed = 0u64;
        let ks = self.ks;
        for i in 0..per_db {
            let shard = held(&mut self.guards, self.scope, per_db, db, i)
                .expect("FLUSHDB holds every shard of its database");
            let t = shard.take_all(ks.db(db).ttl_bit(i));
            removed += t.len() as u64;
            // A snapshot that has not taken this shard takes the removed table itself
            // (written out and freed by the saver): no serialization here.
            if let Some(t) = ks.hand_to_snapshot(db, i, t) {
                out.push(t);
            }
        }
        self.changes.extra_dirty += removed;
        self.changes.db_changes.push(DbChange::Flushed(db));
        out
    }

    /// Swap the contents of databases `a` and `b` (every shard must be held).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        assert_eq!(self.scope, Scope::All, "SWAPDB holds every database");
        if a == b {
            return;
        }
        let per_db = self.ks.db(0).shard_count();
        self.ks.snapshot_swap_dbs(a, b);
        let (lo, hi) = (a.min(b), a.max(b));
        let (first, second) = self.guards.split_at_mut(hi * per_db);
        let (lo_db, hi_db) = (self.ks.db(lo), self.ks.db(hi));
        for i in 0..per_db {
            first[lo * per_db + i].guard.swap(
                &mut second[i].guard,
                lo_db.ttl_bit(i),
                hi_db.ttl_bit(i),
            );
        }
        self.changes.db_changes.push(DbChange::Swapped(a, b));
    }

    // ---- walks over a database ----

    pub fn shard_count(&self, db: usize) -> usize {
        self.ks.db(db).shard_count()
    }

    /// Visit the shards of `db` in order, read-only, until `visit` returns false. A shard
    /// another command holds is waited for, unless [`Locked::give_up_walks`] was asked
    /// and says to stop: then this walk, and every later one, stops there
    /// ([`Locked::walk_stopped`]).
    pub fn walk_in(&mut self, db: usize, mut visit: impl FnMut(&Shard) -> bool) {
        if self.walk_stopped.is_some() {
            return;
        }
        let give_up = self.walk_give_up;
        for i in 0..self.shard_count(db) {
            let slot = [(db as u32, i as u32)];
            let ask = give_up.map(|f| move || f(Scope::Keys, &slot));
            let wait = match &ask {
                Some(ask) => Wait::Asking(ask),
                None => Wait::Always,
            };
            match self.shard_then(db, i, wait, |s, _, _| visit(s)) {
                Some(true) => {}
                Some(false) => break,
                None => {
                    self.walk_stopped = Some(slot[0]);
                    break;
                }
            }
        }
    }

    /// Let walks ([`Locked::walk_in`]) stop at a shard another command holds when
    /// `give_up`, asked every [`WAIT_SLICE`] with that shard as the only key slot, says
    /// so: for a command that can be run again from the start elsewhere (KEYS, DEBUG
    /// DIGEST handed to the offload pool).
    pub fn give_up_walks(&mut self, give_up: &'a GiveUp<'a>) {
        self.walk_give_up = Some(give_up);
    }

    /// The (db, shard) a walk stopped at (see [`Locked::give_up_walks`]): what the
    /// command replied is partial and must be discarded.
    pub fn walk_stopped(&self) -> Option<(u32, u32)> {
        self.walk_stopped
    }

    /// Shard `index` of `db`'s (keys, keys with a TTL): read from the shard when this
    /// command holds it, else as its last lock holder left them, without waiting for a
    /// shard another command holds (see [`crate::shard_lock`]).
    fn counts(&mut self, db: usize, index: usize) -> (usize, usize) {
        let d = self.ks.db(db);
        let per_db = d.shard_count();
        if let Some(s) = held(&mut self.guards, self.scope, per_db, db, index) {
            return (s.len(), s.expires_len());
        }
        let f = d.shard_figures(index);
        (f.keys, f.expires)
    }

    /// Number of keys in `db` (expired-but-not-yet-collected keys included, as in Redis).
    /// Never waits for a shard: see [`Locked::counts`].
    pub fn len_in(&mut self, db: usize) -> usize {
        (0..self.shard_count(db))
            .map(|i| self.counts(db, i).0)
            .sum()
    }

    /// Number of keys with a TTL in `db`. Never waits for a shard.
    pub fn expires_len_in(&mut self, db: usize) -> usize {
        (0..self.shard_count(db))
            .map(|i| self.counts(db, i).1)
            .sum()
    }

    /// Visit the shards of `db` this command holds or can take at once, in order, until
    /// `visit` returns false; shards another command holds are skipped (for estimates,
    /// such as INFO's avg_ttl, that must not wait on a long command).
    pub fn walk_free_in(&mut self, db: usize, mut visit: impl FnMut(&Shard) -> bool) {
        for i in 0..self.shard_count(db) {
            if self.shard_then(db, i, Wait::Never, |s, _, _| visit(s)) == Some(false) {
                break;
            }
        }
    }

    /// Visit every entry of `db`, expired ones included, a shard at a time.
    pub fn for_each_in(&mut self, db: usize, mut visit: impl FnMut(&Entry)) {
        self.walk_in(db, |s| {
            s.iter().for_each(&mut visit);
            true
        });
    }

    /// One SCAN step over `db`. The cursor is `shard << 48 | position`, where keys of a
    /// shard are visited in the order of the low 48 bits of their hash: a key that stays
    /// in the database for the whole iteration is returned (its hash never changes),
    /// whatever resizing happens meanwhile. Keys found past their TTL are deleted (and
    /// recorded `expired`) instead of visited. Returns the next cursor (0 when done).
    pub fn scan_in(
        &mut self,
        db: usize,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&Entry),
    ) -> u64 {
        const POS_BITS: u32 = 48;
        const POS_MASK: u64 = (1 << POS_BITS) - 1;
        let shards = self.shard_count(db);
        let mut shard = (cursor >> POS_BITS) as usize;
        let mut pos = cursor & POS_MASK;
        let mut returned = 0usize;
        let count = count.max(1);
        let (now, on) = (self.now, self.expiry.read);
        while shard < shards {
            let ks = self.ks;
            let scan = |s: &mut Shard, bit: TtlBit, changes: &mut Changes| {
                let mut cands: Vec<(u64, u64, Vec<u8>)> = s
                    .iter()
                    .map(|e| (hash_key(e.key()), e))
                    .filter(|(h, _)| h & POS_MASK >= pos)
                    .map(|(h, e)| (h & POS_MASK, h, e.key().to_vec()))
                    .collect();
                let want = count - returned;
                let mut end = cands.len();
                let mut next = None;
                if cands.len() > want {
                    cands.sort_unstable_by_key(|c| c.0);
                    // Never split keys sharing a position across two calls.
                    let cut_pos = cands[want - 1].0;
                    end = cands.partition_point(|c| c.0 <= cut_pos);
                    next = Some(cut_pos);
                }
                for (_, h, key) in &cands[..end] {
                    match s.lookup(*h, key, now, bit, on) {
                        Lookup::Live(e, _) => visit(e),
                        Lookup::Expired(e) => {
                            ks.copy_on_write_removed(db, shard, *h, &e);
                            changes.record(db, key, Event::EXPIRED);
                            crate::release::release(e, crate::release::Why::Expired);
                        }
                        Lookup::Missing => {}
                    }
                }
                (end, next)
            };
            // A shard another command holds ends this call early, at that shard (SCAN may
            // return fewer than COUNT, even none, with a cursor to go on from), unless the
            // cursor would read 0, "done": then it is waited for.
            let wait = if shard == 0 && pos == 0 {
                Wait::Always
            } else {
                Wait::Slice
            };
            let Some(done) = self.shard_then(db, shard, wait, scan) else {
                break;
            };
            match done {
                (_, Some(cut_pos)) => {
                    if cut_pos == POS_MASK {
                        shard += 1;
                        pos = 0;
                    } else {
                        pos = cut_pos + 1;
                    }
                    break;
                }
                (n, None) => {
                    returned += n;
                    shard += 1;
                    pos = 0;
                    if returned >= count {
                        break;
                    }
                }
            }
        }
        if shard >= shards {
            0
        } else {
            ((shard as u64) << POS_BITS) | pos
        }
    }

    /// A random live key of `db` (RANDOMKEY), deleting expired keys it comes across.
    pub fn random_key_in(&mut self, db: usize) -> Option<Vec<u8>> {
        let n = self.shard_count(db);
        let start = rand::random::<usize>() % n;
        // Every shard from a random one on, so a sparse keyspace still finds its keys.
        // Shards empty by their published counts are passed over without their locks, and
        // a shard another command holds is waited for only if no other one has a key.
        let mut busy = None;
        for i in (0..n).map(|a| (start + a) % n) {
            if self.ks.db(db).shard_figures(i).keys == 0 && !self.holds_shard(db, i) {
                continue;
            }
            match self.random_key_of(db, i, Wait::Never) {
                Some(Some(key)) => return Some(key),
                Some(None) => {}
                None => {
                    busy.get_or_insert(i);
                }
            }
        }
        self.random_key_of(db, busy?, Wait::Always).flatten()
    }

    /// A random live key of shard `index` of `db`, deleting expired keys it comes across
    /// (outer None: the shard was busy and `wait` did not wait for it).
    fn random_key_of(
        &mut self,
        db: usize,
        index: usize,
        wait: Wait<'_>,
    ) -> Option<Option<Vec<u8>>> {
        let (ks, now, on) = (self.ks, self.now, self.expiry.read);
        self.shard_then(db, index, wait, |s, bit, changes| {
            for _ in 0..100 {
                let key = s.random_key()?.key().to_vec();
                let h = hash_key(&key);
                match s.lookup(h, &key, now, bit, on) {
                    Lookup::Live(..) => return Some(key),
                    Lookup::Expired(e) => {
                        ks.copy_on_write_removed(db, index, h, &e);
                        changes.record(db, &key, Event::EXPIRED);
                        crate::release::release(e, crate::release::Why::Expired);
                    }
                    // Past its TTL and hidden (a replica's): another try.
                    Lookup::Missing => {}
                }
            }
            None
        })
    }

    /// One step of the active expiry cycle on held shard `index` of `db`: check up to `max`
    /// keys with a TTL where the shard's sweep stopped and delete (recording `expired`) the
    /// ones past it. Returns (checked, expired, whether the sweep reached the end).
    pub fn expire_sample(&mut self, db: usize, index: usize, max: usize) -> (usize, usize, bool) {
        let now = now_ms();
        let ks = self.ks;
        self.with_shard(db, index, |s, bit, changes| {
            s.expire_sample(max, now, bit, |h, e| {
                ks.copy_on_write_removed(db, index, h, &e);
                changes.record(db, e.key(), Event::EXPIRED)
            })
        })
    }
}

/// A live key held for modification. The event given to [`Locked::modify`] is recorded
/// when this is dropped, if anything was modified.
pub struct EntryMut<'l> {
    entry: &'l mut Entry,
    expires: &'l mut Expires,
    /// The shard's TTL bit, for `expires`.
    bit: TtlBit<'l>,
    changes: &'l mut Changes,
    db: usize,
    event: Event,
    changed: bool,
}

impl EntryMut<'_> {
    pub fn entry(&self) -> &Entry {
        self.entry
    }

    pub fn value(&self) -> ValueRef<'_> {
        self.entry.value()
    }

    pub fn expire_at(&self) -> i64 {
        self.entry.expire_at()
    }

    /// Replace the value (the key keeps its TTL).
    pub fn set_value<'v>(&mut self, v: impl Into<ValueRef<'v>>) {
        self.changed = true;
        if matches!(self.entry.value(), ValueRef::Str(_)) {
            return self.entry.set_value(v);
        }
        // A collection overwritten (SET over a set): it leaves through `release`
        // (lazyfree-lazy-server-del) instead of being dropped here.
        let e = &*self.entry;
        let new = Entry::new(e.key(), v, e.expire_at(), e.lru());
        let old = std::mem::replace(&mut *self.entry, new);
        crate::release::release(old, crate::release::Why::Overwritten);
    }

    /// The value for modification in place, NOT counted as a change: a collection
    /// command calls [`EntryMut::mark_changed`] when it did change something (SADD of
    /// members already there, LREM finding nothing... are no change in Redis).
    pub fn value_mut(&mut self) -> ValueMut<'_> {
        self.entry.value_mut()
    }

    /// The string's bytes for in-place modification (the value becomes `raw`). Only for
    /// strings.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        self.changed = true;
        self.entry.make_raw()
    }

    /// The string's bytes for modification in place without counting it as a change: the
    /// caller calls [`EntryMut::mark_changed`] if it did change them (SETBIT, BITFIELD
    /// writing the bits already there are no change in Redis). Only for strings.
    pub fn make_raw_unmarked(&mut self) -> &mut Vec<u8> {
        self.entry.make_raw()
    }

    /// Count what was done through [`EntryMut::make_raw_unmarked`] as a change.
    pub fn mark_changed(&mut self) {
        self.changed = true;
    }

    /// Set or clear the TTL.
    pub fn set_expire(&mut self, expire_at: i64) {
        self.changed = true;
        set_expire_indexed(self.entry, self.expires, self.bit, expire_at);
    }

    /// Record this event instead of the one given at lookup (a command whose event
    /// depends on what it did).
    pub fn set_event(&mut self, event: Event) {
        self.event = event;
    }
}

impl Drop for EntryMut<'_> {
    fn drop(&mut self) {
        if self.changed {
            self.changes.record(self.db, self.entry.key(), self.event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::StrRef;
    use crate::NO_EXPIRE;
    use std::collections::HashSet;

    fn ks() -> Keyspace {
        Keyspace::new(2, 8)
    }

    fn locked_keys<'a>(
        ks: &'a Keyspace,
        db: usize,
        keys: &[&[u8]],
        changes: &'a mut Changes,
    ) -> Locked<'a> {
        let mut p = Plan::new();
        for k in keys {
            p.key(ks, db, k);
        }
        ks.lock(&mut p, db, changes)
    }

    /// Every shard of every database held.
    fn locked_all<'a>(ks: &'a Keyspace, changes: &'a mut Changes) -> Locked<'a> {
        let mut p = Plan::new();
        p.all();
        ks.lock(&mut p, 0, changes)
    }

    fn names(c: &Changes) -> Vec<(String, &'static str)> {
        c.items()
            .iter()
            .map(|x| (String::from_utf8_lossy(c.key(x)).into_owned(), x.event.name))
            .collect()
    }

    #[test]
    fn writes_record_events_reads_count() {
        let ks = ks();
        let mut c = Changes::default();
        let mut l = locked_keys(&ks, 0, &[b"a", b"b"], &mut c);
        l.insert(b"a", StrRef::encode(b"1"), NO_EXPIRE, Event::string("set"));
        l.insert(b"a", StrRef::encode(b"2"), NO_EXPIRE, Event::string("set"));
        assert!(l.get(b"a").is_some());
        assert!(l.get(b"b").is_none());
        {
            let mut e = l.modify(b"a", Event::string("incrby")).unwrap();
            e.set_value(StrRef::Int(3));
        }
        // Looked up for write but not modified: nothing recorded.
        drop(l.modify(b"a", Event::string("append")));
        assert!(l.remove(b"b", Event::DEL).is_none());
        assert!(l.remove(b"a", Event::DEL).is_some());
        l.release();
        assert_eq!(
            names(&c),
            vec![
                ("a".into(), "new"),
                ("a".into(), "set"),
                ("a".into(), "set"),
                ("b".into(), "keymiss"),
                ("a".into(), "incrby"),
                ("a".into(), "del"),
            ]
        );
        assert_eq!((c.hits, c.misses, c.dirty()), (1, 1, 4));
    }

    #[test]
    fn lazy_expiry_is_recorded() {
        let ks = ks();
        let mut c = Changes::default();
        let mut l = locked_keys(&ks, 0, &[b"t"], &mut c);
        l.insert(b"t", StrRef::encode(b"v"), 1, Event::string("set"));
        assert!(l.get(b"t").is_none());
        l.release();
        assert_eq!(
            names(&c)[2..],
            [("t".into(), "expired"), ("t".into(), "keymiss")]
        );
        assert_eq!(c.expired(), 1);
    }

    /// A key of `db` in another shard than `of`.
    fn other_shard_key(ks: &Keyspace, of: &[u8]) -> String {
        let d = ks.db(0);
        (0..)
            .map(|i| format!("k{i}"))
            .find(|k| d.shard_index(hash_key(k.as_bytes())) != d.shard_index(hash_key(of)))
            .unwrap()
    }

    #[test]
    fn try_extend_takes_free_shards_and_refuses_busy_ones() {
        let ks = Keyspace::new(2, 64);
        let other = other_shard_key(&ks, b"a");
        let mut c = Changes::default();
        let mut l = locked_keys(&ks, 0, &[b"a"], &mut c);
        let mut p = Plan::new();
        p.key(&ks, 0, other.as_bytes());
        assert!(!l.covers(&p));
        assert!(l.try_extend(&p));
        assert!(l.covers(&p));
        assert!(l.get(other.as_bytes()).is_none());
        // A shard held by someone else is refused, not waited for.
        let third = (0..)
            .map(|i| format!("x{i}"))
            .find(|k| {
                let mut q = Plan::new();
                q.key(&ks, 0, k.as_bytes());
                !l.covers(&q)
            })
            .unwrap();
        let mut c2 = Changes::default();
        let busy = locked_keys(&ks, 0, &[third.as_bytes()], &mut c2);
        let mut q = Plan::new();
        q.key(&ks, 0, third.as_bytes());
        assert!(!l.try_extend(&q));
        drop(busy);
        // The whole database, then every database: indexable directly again.
        let mut w = Plan::new();
        w.whole_db(0);
        assert!(l.try_extend(&w));
        assert_eq!(l.scope(), Scope::Db(0));
        assert!(l.get(third.as_bytes()).is_none());
        let mut all = Plan::new();
        all.all();
        assert!(l.try_extend(&all));
        assert_eq!(l.scope(), Scope::All);
        l.swap_dbs(0, 1);
    }

    #[test]
    fn relock_releases_and_takes_the_wider_plan() {
        let ks = Keyspace::new(1, 64);
        let other = other_shard_key(&ks, b"a");
        let mut c = Changes::default();
        let mut l = locked_keys(&ks, 0, &[b"a"], &mut c);
        l.insert(b"a", StrRef::encode(b"1"), NO_EXPIRE, Event::string("set"));
        let mut w = Plan::new();
        w.whole_db(0);
        l.relock(&mut w);
        assert_eq!(l.scope(), Scope::Db(0));
        assert!(l.get(other.as_bytes()).is_none());
        assert!(l.get(b"a").is_some());
        l.release();
        assert_eq!(c.dirty(), 1);
    }

    #[test]
    fn relock_or_gives_up_on_a_busy_shard_holding_nothing() {
        let ks = Keyspace::new(1, 64);
        let other = other_shard_key(&ks, b"a");
        let (mut c1, mut c2) = (Changes::default(), Changes::default());
        let holder = locked_keys(&ks, 0, &[b"a"], &mut c1);
        let mut l = locked_keys(&ks, 0, &[other.as_bytes()], &mut c2);
        let mut w = Plan::new();
        w.whole_db(0);
        let asked = std::cell::Cell::new(0);
        let give_up = |_: Scope, _: &[(u32, u32)]| {
            asked.set(asked.get() + 1);
            true
        };
        assert!(!l.relock_or(&mut w, &give_up));
        assert!(asked.get() > 0);
        assert_eq!(l.held_shards().count(), 0);
        drop(holder);
        let mut w = Plan::new();
        w.whole_db(0);
        assert!(l.relock_or(&mut w, &give_up));
        assert_eq!(l.scope(), Scope::Db(0));
    }

    #[test]
    #[should_panic(expected = "without its lock")]
    fn unplanned_key_panics() {
        let ks = Keyspace::new(1, 1024);
        let mut c = Changes::default();
        let mut l = locked_keys(&ks, 0, &[b"a"], &mut c);
        l.get(other_shard_key(&ks, b"a").as_bytes());
    }

    /// Keys k0..k{n-1} in db 0.
    fn fill(ks: &Keyspace, n: usize) {
        let mut p = Plan::new();
        p.whole_db(0);
        let mut c = Changes::default();
        let mut l = ks.lock(&mut p, 0, &mut c);
        for i in 0..n {
            let k = format!("k{i}");
            l.insert(k.as_bytes(), StrRef::encode(b"v"), NO_EXPIRE, Event::NONE);
        }
    }

    #[test]
    fn scan_visits_every_key_once() {
        let ks = ks();
        fill(&ks, 1000);
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            let mut c = Changes::default();
            let mut l = ks.unlocked(0, &mut c);
            cursor = l.scan_in(0, cursor, 10, |e| {
                assert!(seen.insert(e.key().to_vec()), "duplicate");
            });
            drop(l);
            // Keys added during the iteration do not disturb it.
            let k = format!("new{cursor}");
            let mut l = locked_keys(&ks, 0, &[k.as_bytes()], &mut c);
            l.insert(k.as_bytes(), StrRef::encode(b"v"), NO_EXPIRE, Event::NONE);
            drop(l);
            if cursor == 0 {
                break;
            }
        }
        for i in 0..1000 {
            assert!(seen.contains(format!("k{i}").as_bytes()));
        }
    }

    #[test]
    fn walks_do_not_wait_for_a_held_shard() {
        let ks = ks();
        fill(&ks, 200);
        // Another command holds shard 3 (of 8).
        let busy = ks.db(0).read_shard(3);
        let in_busy = busy.len();
        assert!(in_busy > 0);
        let mut c = Changes::default();
        let mut l = ks.unlocked(0, &mut c);
        // Counts come from the published figures.
        assert_eq!(l.len_in(0), 200);
        // SCAN stops at the held shard with a cursor pointing there.
        let mut seen = HashSet::new();
        let cursor = l.scan_in(0, 0, 1000, |e| {
            seen.insert(e.key().to_vec());
        });
        assert_eq!(cursor >> 48, 3);
        assert_eq!(
            seen.len(),
            200 - in_busy
                - (4..8)
                    .map(|i| ks.db(0).shard_figures(i).keys)
                    .sum::<usize>()
        );
        // RANDOMKEY finds a key in another shard.
        for _ in 0..20 {
            let k = l.random_key_in(0).expect("a key");
            assert!(busy.peek(hash_key(&k), &k).is_none());
        }
        drop(l);
        drop(busy);
        // Once released, the scan goes on from there and ends.
        let mut l = ks.unlocked(0, &mut c);
        let mut cursor = cursor;
        while cursor != 0 {
            cursor = l.scan_in(0, cursor, 1000, |e| {
                assert!(seen.insert(e.key().to_vec()), "duplicate");
            });
        }
        assert_eq!(seen.len(), 200);
    }

    #[test]
    fn a_walk_told_to_give_up_stops_at_a_held_shard_for_good() {
        let ks = ks();
        fill(&ks, 200);
        let busy = ks.db(0).read_shard(3);
        let asked = std::cell::RefCell::new(Vec::new());
        let give_up = |scope: Scope, slots: &[(u32, u32)]| {
            asked.borrow_mut().push((scope, slots.to_vec()));
            true
        };
        let mut c = Changes::default();
        let mut l = ks.unlocked(0, &mut c);
        l.give_up_walks(&give_up);
        let mut visited = Vec::new();
        l.walk_in(0, |s| {
            visited.push(s.len());
            true
        });
        // Shards 0..3 visited, then one wait slice at shard 3 and the answer.
        assert_eq!(visited.len(), 3);
        assert_eq!(l.walk_stopped(), Some((0, 3)));
        assert_eq!(*asked.borrow(), vec![(Scope::Keys, vec![(0, 3)])]);
        // Later walks of the command do nothing, even once the shard is free.
        drop(busy);
        l.for_each_in(1, |_| panic!("walked after stopping"));
        l.walk_in(0, |_| panic!("walked after stopping"));
        drop(l);
        // Without it, a walk waits and sees every shard.
        let mut l = ks.unlocked(0, &mut c);
        let mut n = 0;
        l.for_each_in(0, |_| n += 1);
        assert_eq!((n, l.walk_stopped()), (200, None));
    }

    #[test]
    fn flush_and_swap() {
        let ks = ks();
        let mut c = Changes::default();
        let mut l = locked_all(&ks, &mut c);
        l.insert(b"x", StrRef::encode(b"v"), NO_EXPIRE, Event::NONE);
        l.swap_dbs(0, 1);
        assert_eq!((l.len_in(0), l.len_in(1)), (0, 1));
        let cleared = l.flush_db(1);
        assert_eq!(cleared.iter().map(|t| t.len()).sum::<usize>(), 1);
        assert_eq!(l.len_in(1), 0);
        assert_eq!(
            l.changes.db_changes,
            vec![DbChange::Swapped(0, 1), DbChange::Flushed(1)]
        );
    }

    /// Every path that changes a shard's TTL index hands it its own bit: the databases'
    /// maps say exactly which shards hold keys with a TTL.
    #[test]
    fn ttl_bits_follow_every_write_path() {
        let ks = ks();
        let mut c = Changes::default();
        let mut l = locked_all(&ks, &mut c);
        let check = |l: &mut Locked| {
            for db in 0..2 {
                let mut i = 0;
                l.walk_in(db, |s| {
                    let bit = ks.db(db).shard_has_expires(i);
                    assert_eq!(bit, s.expires_len() > 0, "db {db} shard {i}");
                    i += 1;
                    true
                });
            }
        };
        let later = l.now() + 100_000;
        let key = |i: usize| format!("k{i}").into_bytes();
        for i in 0..40 {
            let at = if i % 2 == 0 { later } else { NO_EXPIRE };
            l.insert(&key(i), StrRef::encode(b"v"), at, Event::NONE);
        }
        check(&mut l);
        assert!(ks.db(0).has_expires() && !ks.db(1).has_expires());
        for i in 0..40 {
            let at = if i % 4 == 0 { NO_EXPIRE } else { later };
            l.set_expire(&key(i), at, Event::NONE);
        }
        check(&mut l);
        for i in 0..20 {
            l.remove(&key(i), Event::DEL);
        }
        check(&mut l);
        for i in 20..40 {
            l.insert(&key(i), StrRef::encode(b"v"), 1, Event::NONE);
        }
        check(&mut l);
        for i in 20..30 {
            assert!(l.get(&key(i)).is_none());
        }
        check(&mut l);
        l.swap_dbs(0, 1);
        check(&mut l);
        assert!(!ks.db(0).has_expires() && ks.db(1).has_expires());
        l.set_db(1);
        assert_eq!(l.random_key_in(1), None); // only expired keys there
        check(&mut l);
        for i in 0..40 {
            l.insert(&key(i), StrRef::encode(b"v"), 1, Event::NONE);
        }
        assert_eq!(l.scan_in(1, 0, 1_000, |_| {}), 0);
        check(&mut l);
        assert!(!ks.db(1).has_expires());
        for i in 0..40 {
            l.insert(&key(i), StrRef::encode(b"v"), 1, Event::NONE);
        }
        check(&mut l);
        for i in 0..l.shard_count(1) {
            l.expire_sample(1, i, 100);
        }
        check(&mut l);
        assert!(!ks.db(1).has_expires());
        for db in 0..2 {
            l.set_db(db);
            for i in 0..40 {
                l.insert(&key(i), StrRef::encode(b"v"), later, Event::NONE);
            }
        }
        check(&mut l);
        l.flush_db(0);
        check(&mut l);
        assert!(!ks.db(0).has_expires() && ks.db(1).has_expires());
        l.flush_db(1);
        assert!(!ks.db(1).has_expires());
    }

    #[test]
    fn plan_widens() {
        let ks = ks();
        let mut p = Plan::new();
        p.key(&ks, 0, b"a");
        p.whole_db(0);
        assert_eq!(p.scope(), Scope::Db(0));
        p.key(&ks, 1, b"a");
        let mut c = Changes::default();
        let l = ks.lock(&mut p, 0, &mut c);
        assert_eq!(l.scope(), Scope::All);
        drop(l);
        let mut q = Plan::new();
        q.whole_db(1);
        p.merge(&q);
        assert_eq!(p.scope(), Scope::All);
    }
}
