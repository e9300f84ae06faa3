//! The append-only file: Redis 7.0's multi-part AOF (a base file, RDB or commands, and
//! incremental files of commands, listed by a manifest in `appenddirname`), written from
//! the propagation stream (`crate::propagate`): what the AOF holds is exactly what a
//! replica would receive, SELECTs and MULTI/EXEC included.
//!
//! **Writing.** Every write's record enters the stream while its shard locks are held.
//! Before a worker sends the replies of a batch of commands, [`before_reply`] makes sure
//! every record made so far is written to the file (`appendfsync everysec|no`) or written
//! and fsynced (`always`). Whoever comes first takes every record waiting (all workers'),
//! writes them in one write(2) and, with `always`, one fdatasync: the others find their
//! records already covered (group commit across connections and workers). With
//! `everysec` the `skein-aof` thread fsyncs once a second on a handle of its own, so no
//! writer waits for the disk; it also writes records nobody waits for (active expiry).
//!
//! Lock order: shards, then the writer's state ([`Aof::inner`]), then the stream's
//! segments.

pub mod commands;
pub mod load;
pub mod manifest;
pub mod rewrite;

use crate::config::value::strerror;
use crate::log;
use crate::server::Server;
use manifest::Manifest;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

/// aof_state.
pub const OFF: u8 = 0;
pub const ON: u8 = 1;
/// Turned on at run time, waiting for the first rewrite to end.
pub const WAIT_REWRITE: u8 = 2;

/// appendfsync.
const FSYNC_NO: u8 = 0;
const FSYNC_ALWAYS: u8 = 1;
const FSYNC_EVERYSEC: u8 = 2;

/// The file being appended to, and what is known about it.
pub struct Inner {
    file: Option<File>,
    /// The file written before the last cut, not yet fsynced (`always` fsyncs it first).
    retiring: Option<File>,
    pub manifest: Manifest,
    /// Bytes in the incremental file being written, and up to where it is fsynced.
    incr_size: u64,
    fsync_offset: u64,
    /// Taken from the stream but not yet written (after a failed write).
    pending: Vec<u8>,
    /// The second of the last `#TS:` annotation.
    ts: i64,
    /// When the last write error was logged (one line per 30 seconds).
    last_error_log: i64,
}

impl Inner {
    /// Bytes taken from the stream and not yet written (aof_buffer_length).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

/// What Redis counts as its AOF buffer (MEMORY STATS `aof.buffer`, INFO `mem_aof_buffer`,
/// left out of what eviction weighs): while the AOF is on, the propagation stream's
/// records not yet taken by the AOF thread and the buffer of bytes taken but not yet
/// written; 0 when it is off.
pub fn buffer_bytes(srv: &crate::server::Server) -> u64 {
    let aof = &srv.persist.aof;
    if !aof.is_on() {
        return 0;
    }
    let pending = aof.inner.lock().pending.capacity();
    srv.propagation.buffered() + engine::mem::vec::<u8>(pending) as u64
}

pub struct Aof {
    state: AtomicU8,
    policy: AtomicU8,
    pub inner: Mutex<Inner>,
    /// Every record with a sequence number below this is written (and below `synced`,
    /// fsynced).
    written: AtomicU64,
    synced: AtomicU64,
    /// aof_current_size, aof_base_size (aof_rewrite_base_size).
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    pub last_write_ok: AtomicBool,
    /// The last write error's text (for -MISCONF).
    pub write_error: Mutex<String>,
    /// Unix time of the last fsync.
    last_fsync: AtomicI64,
    /// Skein's: calls written, fsyncs, and calls made durable by `always` fsyncs.
    pub calls_written: AtomicU64,
    pub fsyncs: AtomicU64,
    /// The running `skein-aof` thread's generation (a new one retires the old).
    generation: AtomicU64,
    pub rw: rewrite::State,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            state: AtomicU8::new(OFF),
            policy: AtomicU8::new(FSYNC_EVERYSEC),
            inner: Mutex::new(Inner {
                file: None,
                retiring: None,
                manifest: Manifest::default(),
                incr_size: 0,
                fsync_offset: 0,
                pending: Vec::new(),
                ts: 0,
                last_error_log: 0,
            }),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            last_write_ok: AtomicBool::new(true),
            write_error: Mutex::new(String::new()),
            last_fsync: AtomicI64::new(0),
            calls_written: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            rw: rewrite::State::default(),
        }
    }
}

/// `appenddirname`/`name`.
pub fn path(srv: &Server, name: &str) -> PathBuf {
    Path::new(&srv.config.get("appenddirname")).join(name)
}

fn fsync_policy(srv: &Server) -> u8 {
    match srv.config.get("appendfsync").as_str() {
        "always" => FSYNC_ALWAYS,
        "no" => FSYNC_NO,
        _ => FSYNC_EVERYSEC,
    }
}

impl Aof {
    pub fn state(&self) -> u8 {
        self.state.load(Relaxed)
    }

    /// Is anything being appended (on, or waiting for its first rewrite)?
    pub fn is_on(&self) -> bool {
        self.state() != OFF
    }
}

/// CONFIG SET appendfsync: takes effect for the next reply.
pub fn config_changed(srv: &Server) {
    srv.persist.aof.policy.store(fsync_policy(srv), Relaxed);
}

/// Does the AOF hold every write made so far (written, or with `appendfsync always`
/// fsynced)? True when it is off.
pub fn covered(srv: &Server) -> bool {
    let aof = &srv.persist.aof;
    if aof.state() == OFF {
        return true;
    }
    let always = aof.policy.load(Relaxed) == FSYNC_ALWAYS;
    let done = if always { &aof.synced } else { &aof.written };
    done.load(Relaxed) >= srv.propagation.next_seq()
}

/// Before a worker sends replies: every record made so far is written (and, with
/// `appendfsync always`, fsynced). Whoever takes the writer's mutex first writes every
/// worker's records; the others then find theirs covered.
pub fn before_reply(srv: &Server) {
    if covered(srv) {
        return;
    }
    let aof = &srv.persist.aof;
    let mut inner = aof.inner.lock();
    if covered(srv) {
        return;
    }
    let always = aof.policy.load(Relaxed) == FSYNC_ALWAYS;
    flush(srv, &mut inner, always);
}

/// Hand every record made so far on (the replication feeder, every millisecond): to the
/// AOF when it is on, whose take feeds the replication backlog too, else straight to the
/// backlog.
pub fn drain(srv: &Server) {
    let aof = &srv.persist.aof;
    let mut inner = aof.inner.lock();
    if aof.state() != OFF {
        flush(srv, &mut inner, false);
    } else {
        srv.propagation.take();
    }
}

fn open_append(p: &Path) -> std::io::Result<File> {
    OpenOptions::new().append(true).create(true).open(p)
}

/// flushAppendOnlyFile: write what the stream holds; with `fsync`, fdatasync the file.
pub fn flush(srv: &Server, inner: &mut Inner, fsync: bool) {
    let aof = &srv.persist.aof;
    let taken = srv.propagation.take_through();
    if !taken.bytes.is_empty() {
        if srv.config.get_bool("aof-timestamp-enabled") {
            let now = super::unix_secs();
            if now > inner.ts {
                inner.ts = now;
                inner
                    .pending
                    .extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
            }
        }
        if inner.pending.is_empty() {
            inner.pending = taken.bytes;
        } else {
            inner.pending.extend_from_slice(&taken.bytes);
        }
    }
    let Some(file) = inner.file.as_mut() else {
        return;
    };
    if !inner.pending.is_empty() {
        match file.write_all(&inner.pending) {
            Ok(()) => {
                let n = inner.pending.len() as u64;
                inner.incr_size += n;
                aof.current_size.fetch_add(n, Relaxed);
                inner.pending.clear();
                if inner.pending.capacity() > 64 * 1024 {
                    inner.pending = Vec::new();
                }
                if !aof.last_write_ok.swap(true, Relaxed) {
                    log::warning("AOF write error looks solved, Redis can write again.");
                }
            }
            Err(e) => {
                write_failed(srv, inner, &e);
                return;
            }
        }
    }
    aof.calls_written.fetch_add(taken.calls, Relaxed);
    aof.written.fetch_max(taken.through, Relaxed);
    if fsync {
        if let Some(old) = inner.retiring.take() {
            fsync_or_exit(&old);
        }
        if inner.fsync_offset != inner.incr_size {
            if let Some(f) = inner.file.as_ref() {
                fsync_or_exit(f);
            }
            inner.fsync_offset = inner.incr_size;
            aof.fsyncs.fetch_add(1, Relaxed);
            aof.last_fsync.store(super::unix_secs(), Relaxed);
        }
        aof.synced.fetch_max(taken.through, Relaxed);
    }
}

/// `always`: a failed fsync cannot be recovered from (the replies are about to leave).
fn fsync_or_exit(f: &File) {
    if let Err(e) = f.sync_data() {
        log::warning(&format!(
            "Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...",
            strerror(&e)
        ));
        std::process::exit(1);
    }
}

/// A failed write: with `always`, exit (Redis cannot take back replies it owes); else
/// keep the bytes for the next try, undo a short write, and refuse writes meanwhile.
fn write_failed(srv: &Server, inner: &mut Inner, e: &std::io::Error) {
    let aof = &srv.persist.aof;
    let now = super::unix_secs();
    if now - inner.last_error_log > 30 {
        inner.last_error_log = now;
        log::warning(&format!("Error writing to the AOF file: {}", strerror(e)));
    }
    if let Some(f) = inner.file.as_ref() {
        // A short write leaves part of the bytes: cut them off again.
        let _ = f.set_len(inner.incr_size);
    }
    if aof.policy.load(Relaxed) == FSYNC_ALWAYS {
        log::warning(
            "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...",
        );
        std::process::exit(1);
    }
    aof.last_write_ok.store(false, Relaxed);
    *aof.write_error.lock() = strerror(e);
}

/// aofOpenIfNeededOnServerStart: with `appendonly yes`, after loading: create the
/// directory, a base file if the AOF has no file at all, open the last incremental file
/// (or a new one), write the manifest, and start appending. Exits on failure as Redis
/// does.
pub fn open_on_start(srv: &Server) {
    if !srv.config.get_bool("appendonly") {
        return;
    }
    let aof = &srv.persist.aof;
    let dir = srv.config.get("appenddirname");
    let filename = srv.config.get("appendfilename");
    if create_dir(srv).is_err() {
        std::process::exit(1);
    }
    // The base is written with every shard held, before the writer's mutex (lock order).
    let mut am = std::mem::take(&mut aof.inner.lock().manifest);
    let had_incr = !am.incr.is_empty();
    let created_base = am.base.is_none() && !had_incr;
    if created_base {
        let rdb = srv.config.get_bool("aof-use-rdb-preamble");
        let base = am.new_base(&filename, rdb);
        let base_path = path(srv, &base);
        if rewrite::write_base_now(srv, &base_path, rdb).is_err() {
            std::process::exit(1);
        }
        // Redis counts a base it creates at start-up in neither aof_base_size nor
        // aof_current_size (until the files are loaded again).
        log::notice(&format!("Creating AOF base file {base} on server start"));
    }
    let name = am.last_incr(&filename);
    let p = path(srv, &name);
    let file = match open_append(&p) {
        Ok(f) => f,
        Err(e) => {
            log::warning(&format!(
                "Can't open the append-only file {name}: {}",
                strerror(&e)
            ));
            std::process::exit(1);
        }
    };
    if manifest::persist(&dir, &filename, &am).is_err() {
        std::process::exit(1);
    }
    let mut inner = aof.inner.lock();
    inner.manifest = am;
    let size = file_size(&p);
    inner.incr_size = size;
    inner.fsync_offset = size;
    inner.file = Some(file);
    let counted = if created_base {
        size
    } else {
        total_size(srv, &inner.manifest)
    };
    aof.current_size.store(counted, Relaxed);
    start_appending(srv, &mut inner, ON);
    drop(inner);
    if had_incr {
        log::notice(&format!("Opening AOF incr file {name} on server start"));
    } else {
        log::notice(&format!("Creating AOF incr file {name} on server start"));
    }
}

/// Read the stream from now on (records made before are not wanted) and start the
/// `skein-aof` thread. Called with `inner` held and, when turning the AOF on at run
/// time, with every shard held (the cut).
pub fn start_appending(srv: &Server, inner: &mut Inner, state: u8) {
    let aof = &srv.persist.aof;
    // Read before attaching: a record made from now on is at or above it, so none is
    // taken for written before it is.
    let next = srv.propagation.next_seq();
    if aof.state() == OFF {
        if srv.propagation.feeds_replicas() {
            // Records made before the cut are the replicas' alone: hand them over now,
            // or the first write to the file would take them too.
            srv.propagation.take();
        }
        srv.propagation.attach();
    }
    srv.propagation.forget_db();
    aof.written.fetch_max(next, Relaxed);
    aof.synced.fetch_max(next, Relaxed);
    aof.policy.store(fsync_policy(srv), Relaxed);
    aof.last_fsync.store(super::unix_secs(), Relaxed);
    inner.ts = 0;
    aof.state.store(state, Relaxed);
    spawn_thread(srv);
}

/// stopAppendOnly (CONFIG SET appendonly no): write and fsync what is left, close the
/// file, stop reading the stream.
pub fn stop(srv: &Server) {
    let aof = &srv.persist.aof;
    rewrite::abandon(srv);
    let mut inner = aof.inner.lock();
    if aof.state() == OFF {
        return;
    }
    flush(srv, &mut inner, false);
    if let Some(f) = inner.file.take() {
        if let Err(e) = f.sync_data() {
            log::warning(&format!("Fail to fsync the AOF file: {}", strerror(&e)));
        }
    }
    inner.retiring = None;
    inner.pending.clear();
    inner.incr_size = 0;
    inner.fsync_offset = 0;
    aof.state.store(OFF, Relaxed);
    aof.generation.fetch_add(1, Relaxed);
    srv.propagation.detach();
}

/// On the way out (SHUTDOWN, SIGTERM): write what is left and fsync
/// ("Calling fsync() on the AOF file.").
pub fn on_shutdown(srv: &Server) {
    let aof = &srv.persist.aof;
    if aof.state() == OFF {
        return;
    }
    rewrite::abandon(srv);
    let mut inner = aof.inner.lock();
    flush(srv, &mut inner, false);
    log::notice("Calling fsync() on the AOF file.");
    if let Some(f) = inner.file.as_ref() {
        let _ = f.sync_data();
    }
}

/// The `skein-aof` thread: every 100 ms writes the records nobody waited for, fsyncs
/// once a second with `everysec`, refreshes the cached `appendfsync`.
fn spawn_thread(srv: &Server) {
    let aof = &srv.persist.aof;
    let generation = aof.generation.fetch_add(1, Relaxed) + 1;
    let Some(this) = srv.persist.server() else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("skein-aof".into())
        .spawn(move || {
            let srv = &*this;
            let aof = &srv.persist.aof;
            while aof.generation.load(Relaxed) == generation && !srv.is_shutting_down() {
                std::thread::sleep(Duration::from_millis(100));
                tick(srv);
            }
        });
}

fn tick(srv: &Server) {
    let aof = &srv.persist.aof;
    if aof.state() == OFF {
        return;
    }
    let policy = fsync_policy(srv);
    aof.policy.store(policy, Relaxed);
    let handle = {
        let mut inner = aof.inner.lock();
        flush(srv, &mut inner, policy == FSYNC_ALWAYS);
        let now = super::unix_secs();
        let due = policy == FSYNC_EVERYSEC
            && now > aof.last_fsync.load(Relaxed)
            && inner.fsync_offset != inner.incr_size;
        if due {
            aof.last_fsync.store(now, Relaxed);
            let retiring = inner.retiring.take();
            let offset = inner.incr_size;
            inner
                .file
                .as_ref()
                .and_then(|f| f.try_clone().ok())
                .map(|f| (f, retiring, offset))
        } else {
            None
        }
    };
    // The fsync itself runs without the writer's lock: writers go on meanwhile.
    if let Some((f, retiring, offset)) = handle {
        if let Some(old) = retiring {
            let _ = old.sync_data();
        }
        match f.sync_data() {
            Ok(()) => {
                aof.fsyncs.fetch_add(1, Relaxed);
                let mut inner = aof.inner.lock();
                inner.fsync_offset = inner.fsync_offset.max(offset).min(inner.incr_size);
            }
            Err(e) => log::warning(&format!("Fail to fsync the AOF file: {}", strerror(&e))),
        }
    }
}

/// dirCreateIfMissing of `appenddirname`, with Redis's line on failure.
pub fn create_dir(srv: &Server) -> Result<(), crate::persist::save::SaveFailed> {
    let dir = srv.config.get("appenddirname");
    std::fs::create_dir_all(&dir).map_err(|e| {
        log::warning(&format!(
            "Can't open or create append-only dir {dir}: {}",
            strerror(&e)
        ));
        crate::persist::save::SaveFailed
    })
}

/// A file's size, 0 if it cannot be read.
pub fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// The base and incremental files' sizes together.
pub fn total_size(srv: &Server, am: &Manifest) -> u64 {
    am.base
        .iter()
        .chain(&am.incr)
        .map(|f| file_size(&path(srv, &f.name)))
        .sum()
}
