//! The propagation stream: every write, in the form Redis propagates it to the AOF and
//! replicas (absolute expiry times, DEL for expired keys, MULTI/EXEC around a command or
//! transaction that did several), in the order the writes took effect.
//!
//! Order across workers without a global lock on the command path: a write takes a
//! sequence number and appends its record to its own worker's segment, both under that
//! segment's (uncontended) lock, while it still holds its shard locks, so two conflicting
//! writes get sequence numbers in the order they happened. A reader locks every segment,
//! which means no sequence number is taken but not yet appended, and merges the records
//! by sequence number. While nobody reads (no AOF, no replica) writers skip all of it.

use parking_lot::Mutex;
use resp::ReplyBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How a command asks to be propagated (set by its handler; Redis's
/// `rewriteClientCommandVector`, `alsoPropagate`, `forceCommandPropagation`).
#[derive(Default, Debug)]
pub struct PropagateAs {
    /// Propagate these commands instead of the one called.
    pub rewrite: Vec<Vec<Vec<u8>>>,
    /// Propagate even though nothing changed (FLUSHDB of an empty database).
    pub force: bool,
    /// Never propagate the command as called, only the rewrites (Redis's
    /// preventCommandPropagation: XREADGROUP, XCLAIM, XAUTOCLAIM propagate XCLAIMs).
    pub only_rewrites: bool,
    /// Propagate the command as called with these arguments replaced (Redis's
    /// rewriteClientCommandArgument: XADD's generated ID), unless `rewrite` says more.
    pub args: Vec<(usize, Vec<u8>)>,
    /// To the replicas only, not the AOF (PUBLISH: Redis's PROPAGATE_REPL).
    pub replicas_only: bool,
    /// Nothing reads the propagation stream (no AOF, no replica): the builders below
    /// record nothing, so a handler builds no propagated form that would only be dropped
    /// (about 1,100 instructions for an EXPIRE's PEXPIREAT). Set by `dispatch::call`
    /// before each handler.
    pub off: bool,
}

impl PropagateAs {
    /// Is a propagated form wanted? (A handler asks before formatting one.)
    pub fn wanted(&self) -> bool {
        !self.off
    }

    /// Propagate `args` (one command) instead of the command as called.
    pub fn replace(&mut self, args: &[&[u8]]) {
        if self.off {
            return;
        }
        self.rewrite.clear();
        self.also(args);
    }

    /// Propagate `args` as well (after the rewrites so far).
    pub fn also(&mut self, args: &[&[u8]]) {
        if self.off {
            return;
        }
        self.rewrite.push(args.iter().map(|a| a.to_vec()).collect());
    }

    /// Propagate the command as called with argument `index` replaced by `value`.
    pub fn set_arg(&mut self, index: usize, value: Vec<u8>) {
        if self.off {
            return;
        }
        self.args.retain(|(i, _)| *i != index);
        self.args.push((index, value));
    }

    /// Propagate what [`PropagateAs::also`] added, and never the command as called.
    pub fn only_rewrites(&mut self) {
        self.only_rewrites = true;
    }
}

/// One command of a record: its database and its RESP encoding. A database with
/// [`REPLICAS_ONLY`] set marks a command for the replicas alone (PUBLISH).
pub type Op = (usize, Vec<u8>);

/// The bit of an [`Op`]'s database that keeps it out of the AOF.
pub const REPLICAS_ONLY: usize = 1 << (usize::BITS - 1);

struct Record {
    seq: u64,
    ops: Vec<Op>,
}

pub struct Propagation {
    readers: AtomicUsize,
    seq: AtomicU64,
    segments: Box<[Mutex<Vec<Record>>]>,
    /// The database of the last command handed to each reader (for their SELECTs): the
    /// AOF's, and the replicas' (the backlog's).
    reader_db: Mutex<ReaderDbs>,
    /// Bytes the kept records hold (not counted against maxmemory, like Redis's AOF
    /// buffer).
    buffered: AtomicU64,
    /// Once a replica has connected: every byte handed out also goes here, in order.
    pub backlog: crate::repl::backlog::Backlog,
    /// The backlog holds this stream open (attached once, for good).
    backlog_reader: std::sync::atomic::AtomicBool,
    /// The replication feeder's thread, and whether it sleeps until a record comes
    /// (`push` wakes it).
    feeder: std::sync::OnceLock<std::thread::Thread>,
    feeder_parked: std::sync::atomic::AtomicBool,
}

/// The bytes a record of `ops` holds (at the allocator's size classes).
fn record_bytes(ops: &Vec<Op>) -> u64 {
    let class = crate::alloc::size_class;
    ops.iter().map(|(_, b)| class(b.capacity())).sum::<u64>()
        + class(ops.capacity() * std::mem::size_of::<Op>())
}

/// The command a deletion propagates as: UNLINK when the lazy-free `option` (e.g.
/// `lazyfree-lazy-expire`) is on, else DEL.
pub fn deletion(srv: &crate::server::Server, option: &str) -> &'static [u8] {
    if srv.config.get_bool(option) {
        b"UNLINK"
    } else {
        b"DEL"
    }
}

/// A command as a RESP multibulk.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    // Sized once: headers take at most 24 bytes an argument (`$`, 20 digits, CR LF, CR LF).
    let size = 24 + args.iter().map(|a| a.len() + 24).sum::<usize>();
    let mut b = ReplyBuf {
        out: Vec::with_capacity(size),
        ..Default::default()
    };
    b.array(args.len());
    for a in args {
        b.bulk(a);
    }
    b.out
}

impl Propagation {
    /// One segment per writer (each worker, plus one for the other threads).
    pub fn new(writers: usize) -> Propagation {
        Propagation {
            readers: AtomicUsize::new(0),
            seq: AtomicU64::new(0),
            segments: (0..writers.max(1))
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            reader_db: Mutex::new(ReaderDbs::default()),
            buffered: AtomicU64::new(0),
            backlog: Default::default(),
            backlog_reader: Default::default(),
            feeder: Default::default(),
            feeder_parked: Default::default(),
        }
    }

    /// Bytes held by records not taken yet.
    pub fn buffered(&self) -> u64 {
        self.buffered.load(Ordering::Relaxed)
    }

    /// Is anything reading the stream? (Writers skip building records when not.)
    pub fn active(&self) -> bool {
        self.readers.load(Ordering::Relaxed) > 0
    }

    /// Start reading: records are kept from now on.
    pub fn attach(&self) {
        self.readers.fetch_add(1, Ordering::SeqCst);
    }

    /// Stop reading; when the last reader leaves, what was kept is dropped.
    pub fn detach(&self) {
        let before = self
            .readers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if before == Ok(1) {
            for s in self.segments.iter() {
                let mut s = s.lock();
                let bytes: u64 = s.iter().map(|r| record_bytes(&r.ops)).sum::<u64>()
                    + crate::alloc::size_class(s.capacity() * std::mem::size_of::<Record>());
                *s = Vec::new();
                self.buffered.fetch_sub(bytes, Ordering::Relaxed);
            }
            *self.reader_db.lock() = ReaderDbs::default();
        }
    }

    /// Append the commands of one call (`ops`, already encoded, each with its database).
    /// Must be called while the call still holds its shard locks.
    pub fn push(&self, writer: usize, ops: Vec<Op>) {
        if ops.is_empty() || !self.active() {
            return;
        }
        let seg = &self.segments[writer.min(self.segments.len() - 1)];
        let mut seg = seg.lock();
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let (cap, bytes) = (seg.capacity(), record_bytes(&ops));
        seg.push(Record { seq, ops });
        // The segment's own growth counts too (kept until the last reader leaves).
        let grown = crate::alloc::size_class(seg.capacity() * std::mem::size_of::<Record>())
            - crate::alloc::size_class(cap * std::mem::size_of::<Record>());
        // SeqCst, with the flag's load: either the feeder sees this record before it
        // sleeps, or this sees it asleep (park_feeder stores the flag, then loads).
        self.buffered.fetch_add(bytes + grown, Ordering::SeqCst);
        drop(seg);
        if self.feeder_parked.load(Ordering::SeqCst) {
            self.wake_feeder();
        }
    }

    /// The calling thread is the replication feeder.
    pub fn set_feeder(&self) {
        let _ = self.feeder.set(std::thread::current());
    }

    /// Feeder: sleep until a record is pushed or `timeout` passes.
    pub fn park_feeder(&self, timeout: std::time::Duration) {
        self.feeder_parked.store(true, Ordering::SeqCst);
        // A record pushed before the flag was seen set is taken now, not after the nap.
        if self.buffered.load(Ordering::SeqCst) == 0 {
            std::thread::park_timeout(timeout);
        }
        self.feeder_parked.store(false, Ordering::SeqCst);
    }

    /// Wake the feeder if it sleeps (a record came, or a WAIT began).
    pub fn wake_feeder(&self) {
        if self.feeder_parked.swap(false, Ordering::SeqCst) {
            if let Some(t) = self.feeder.get() {
                t.unpark();
            }
        }
    }

    /// The sequence number the next record will take: every record of a write that
    /// finished before this call is below it.
    pub fn next_seq(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// The next record handed out starts with a SELECT (a new AOF file begins).
    pub fn forget_db(&self) {
        self.reader_db.lock().aof = None;
    }

    /// At a replica's snapshot cut, once everything recorded before it was taken: the
    /// backlog (activated with `size` bytes the first time) gets every record from now on,
    /// starting with a SELECT. Returns the stream position of the cut.
    pub fn replicas_from_here(&self, size: u64) -> u64 {
        let mut db = self.reader_db.lock();
        if !self.backlog_reader.swap(true, Ordering::SeqCst) {
            self.attach();
        }
        if !self.backlog.is_active() {
            self.backlog.activate(size);
        }
        db.replicas = None;
        self.backlog.offset()
    }

    /// A replica promoted by FAILOVER, once everything recorded so far was taken: the
    /// backlog starts over at `at` (its old master's offset, so the old master can continue
    /// from there) and gets every record from now on, starting with a SELECT.
    pub fn restart_backlog_at(&self, at: u64, size: u64) {
        let mut db = self.reader_db.lock();
        if !self.backlog_reader.swap(true, Ordering::SeqCst) {
            self.attach();
        }
        self.backlog.restart_at(at, size);
        db.replicas = None;
    }

    /// Free the backlog (repl-backlog-ttl) if `idle` still says so once no replica can
    /// start reading it meanwhile: it stops reading the stream until a replica comes
    /// again. Whether it was freed.
    pub fn free_backlog(&self, idle: impl FnOnce() -> bool) -> bool {
        let reading = {
            let _db = self.reader_db.lock();
            if !idle() {
                return false;
            }
            self.backlog.free();
            self.backlog_reader.swap(false, Ordering::SeqCst)
        };
        // (Not under `reader_db`: the last reader's detach resets it.)
        if reading {
            self.detach();
        }
        true
    }

    /// Bytes for the replicas only (the master's PING), in order with the records.
    pub fn feed_replicas(&self, bytes: &[u8]) {
        let _db = self.reader_db.lock();
        if self.backlog.is_active() {
            self.backlog.append(bytes);
        }
    }

    /// Is the backlog reading the stream (a replica connected once)?
    pub fn feeds_replicas(&self) -> bool {
        self.backlog_reader.load(Ordering::Relaxed)
    }

    /// Everything appended since the last call, in order, as the RESP a replica or the AOF
    /// receives: SELECT when the database changes, MULTI/EXEC around a call of several
    /// commands.
    pub fn take(&self) -> Vec<u8> {
        self.take_through().bytes
    }

    /// [`Propagation::take`], also saying up to which sequence number the records go and
    /// how many calls they hold.
    pub fn take_through(&self) -> Taken {
        let mut guards: Vec<_> = self.segments.iter().map(|s| s.lock()).collect();
        // With every segment held, each sequence number below this one is in a segment.
        let through = self.seq.load(Ordering::SeqCst);
        let mut records: Vec<Record> = guards.iter_mut().flat_map(|g| g.drain(..)).collect();
        // Taken before the segments are let go: a later take's records are encoded (and
        // fed to the backlog) after these.
        let mut dbs = self.reader_db.lock();
        drop(guards);
        let calls = records.len() as u64;
        let bytes: u64 = records.iter().map(|r| record_bytes(&r.ops)).sum();
        self.buffered.fetch_sub(bytes, Ordering::Relaxed);
        records.sort_unstable_by_key(|r| r.seq);
        // Sized once: the records, plus a SELECT and MULTI/EXEC around each at most.
        let size = records
            .iter()
            .map(|r| 64 + r.ops.iter().map(|(_, b)| b.len()).sum::<usize>())
            .sum();
        let aof_db = dbs.aof;
        let out = stream(&records, size, &mut dbs.aof, false);
        if self.backlog.is_active() {
            let replicas_only = records
                .iter()
                .any(|r| r.ops.iter().any(|(d, _)| d & REPLICAS_ONLY != 0));
            if !replicas_only && dbs.replicas == aof_db {
                // The replicas' stream is the AOF's: one encoding for both.
                self.backlog.append(&out);
                dbs.replicas = dbs.aof;
            } else {
                self.backlog
                    .append(&stream(&records, size, &mut dbs.replicas, true));
            }
        }
        drop(dbs);
        Taken {
            bytes: out,
            through,
            calls,
        }
    }
}

/// The database each reader of the stream last got a command of.
#[derive(Default)]
struct ReaderDbs {
    aof: Option<usize>,
    replicas: Option<usize>,
}

/// `records` as one reader receives them (`db`: its SELECT state): SELECT when the
/// database changes, MULTI/EXEC around a call that propagated several commands (counting
/// those for the replicas only, as Redis wraps them); the replicas-only commands only if
/// `replicas`.
fn stream(records: &[Record], size: usize, db: &mut Option<usize>, replicas: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    for r in records {
        let wrap = r.ops.len() > 1;
        let mut opened = false;
        for (op_db, bytes) in &r.ops {
            if op_db & REPLICAS_ONLY != 0 && !replicas {
                continue;
            }
            let op_db = op_db & !REPLICAS_ONLY;
            if *db != Some(op_db) {
                out.extend_from_slice(&encode(&[b"SELECT", op_db.to_string().as_bytes()]));
                *db = Some(op_db);
            }
            if wrap && !opened {
                out.extend_from_slice(&encode(&[b"MULTI"]));
                opened = true;
            }
            out.extend_from_slice(bytes);
        }
        if opened {
            out.extend_from_slice(&encode(&[b"EXEC"]));
        }
    }
    out
}

/// What [`Propagation::take_through`] handed out.
pub struct Taken {
    /// The records as RESP.
    pub bytes: Vec<u8>,
    /// Every record with a sequence number below this is in `bytes` or was taken before.
    pub through: u64,
    /// How many calls' records `bytes` holds.
    pub calls: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_in_sequence_order_with_selects_and_multi() {
        let p = Propagation::new(2);
        p.push(0, vec![(0, encode(&[b"SET", b"a", b"1"]))]);
        assert!(!p.active());
        p.attach();
        p.push(1, vec![(0, encode(&[b"SET", b"a", b"1"]))]);
        p.push(
            0,
            vec![
                (1, encode(&[b"DEL", b"x"])),
                (1, encode(&[b"SET", b"x", b"2"])),
            ],
        );
        p.push(1, vec![(1, encode(&[b"INCR", b"n"]))]);
        let text = String::from_utf8(p.take()).unwrap();
        let words: Vec<&str> = text
            .split("\r\n")
            .filter(|w| !w.starts_with('*') && !w.starts_with('$') && !w.is_empty())
            .collect();
        assert_eq!(
            words,
            [
                "SELECT", "0", "SET", "a", "1", "SELECT", "1", "MULTI", "DEL", "x", "SET", "x",
                "2", "EXEC", "INCR", "n"
            ]
        );
        assert!(p.take().is_empty());
        p.detach();
        assert!(!p.active());
    }

    /// A replicas-only command (PUBLISH) is in the backlog's stream, with its SELECT, and
    /// not in the AOF's; a transaction holding one is wrapped in both.
    #[test]
    fn replicas_only_commands_skip_the_aof() {
        let words = |b: &[u8]| -> Vec<String> {
            String::from_utf8(b.to_vec())
                .unwrap()
                .split("\r\n")
                .filter(|w| !w.starts_with('*') && !w.starts_with('$') && !w.is_empty())
                .map(String::from)
                .collect()
        };
        let p = Propagation::new(1);
        p.replicas_from_here(1 << 20);
        p.push(0, vec![(0, encode(&[b"SET", b"a", b"1"]))]);
        p.push(
            0,
            vec![(2 | REPLICAS_ONLY, encode(&[b"PUBLISH", b"c", b"m"]))],
        );
        p.push(
            0,
            vec![
                (0, encode(&[b"INCR", b"n"])),
                (REPLICAS_ONLY, encode(&[b"PUBLISH", b"c", b"x"])),
            ],
        );
        let from = p.backlog.offset();
        let aof = p.take();
        assert_eq!(
            words(&aof),
            ["SELECT", "0", "SET", "a", "1", "MULTI", "INCR", "n", "EXEC"]
        );
        let total = p.backlog.offset() - from;
        let replicas = p
            .backlog
            .read(9, from, total as usize, std::time::Duration::ZERO);
        assert_eq!(
            words(&replicas.unwrap()),
            [
                "SELECT", "0", "SET", "a", "1", "SELECT", "2", "PUBLISH", "c", "m", "SELECT", "0",
                "MULTI", "INCR", "n", "PUBLISH", "c", "x", "EXEC"
            ]
        );
    }
}
