//! Heavy commands off the workers: a command whose estimated cost ([`cost`]) reaches
//! `offload-threshold` runs on a pool of background threads (niced below the workers),
//! while its worker goes on serving every other connection.
//!
//! The seam is unchanged: the pool thread runs the command through the dispatcher's own
//! path (`dispatch::run_offloaded`: the same lock plan, holding only the command's shards;
//! the same handler, effects, statistics, blocked-client service), so WATCH,
//! notifications, propagation and blocked clients see its writes like any other.
//!
//! Order: the dispatcher estimates with the command's shards held, releases them and
//! hands the command here, leaving [`Reply`] in the client's state. Like a blocked client,
//! the connection runs nothing more (its pipelined commands wait behind it) until the
//! reply is there: the pool thread finishes the `Reply` and posts the connection's token
//! to its worker's mailbox, and the worker appends the reply and resumes the pipeline.
//! Replies therefore leave in the order the commands came, as in Redis.

pub mod cost;

use crate::clients::ClientInfo;
use crate::cmd::{ClientState, ReplyMode};
use crate::server::Server;
use parking_lot::{Condvar, Mutex};
use resp::{Proto, ReplyBuf};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};

/// The reply of an offloaded command, filled by the pool thread.
pub struct Reply {
    bytes: Mutex<Option<Vec<u8>>>,
    /// CLIENT REPLY OFF/SKIP was in force when the command was read: drop it.
    silent: bool,
    /// Close the connection once the reply is written (a WAIT unblocked because this
    /// server turned replica).
    pub close_after_reply: std::sync::atomic::AtomicBool,
    /// The command put something into the replication stream: the client's next WAIT
    /// waits for it (`ClientState::wrote`, which the pool's stand-in client set).
    wrote: AtomicBool,
}

impl Reply {
    /// A reply another thread will fill (an offloaded command's, WAIT's); `silent`: CLIENT
    /// REPLY OFF/SKIP was in force when the command was read.
    pub fn waiting(silent: bool) -> Arc<Reply> {
        Arc::new(Reply {
            bytes: Mutex::new(None),
            silent,
            close_after_reply: std::sync::atomic::AtomicBool::new(false),
            wrote: AtomicBool::new(false),
        })
    }

    /// Did the command write to the replication stream? (Read with the reply.)
    pub fn wrote(&self) -> bool {
        self.wrote.load(Relaxed)
    }

    /// The reply is ready (the worker then sends it, and runs what came after).
    pub fn fill(&self, bytes: Vec<u8>) {
        *self.bytes.lock() = Some(bytes);
    }

    /// Worker side: the reply bytes once the command has run (`Some(empty)` when
    /// silenced), else `None`.
    pub fn take(&self) -> Option<Vec<u8>> {
        let mut b = self.bytes.lock().take()?;
        if self.silent {
            b.clear();
        }
        Some(b)
    }
}

/// One command handed to the pool.
struct Job {
    argv: Vec<Vec<u8>>,
    db: usize,
    id: u64,
    worker: usize,
    proto: Proto,
    info: Arc<ClientInfo>,
    /// The client's ACL user (scripts check their commands against it).
    user: Option<Arc<crate::acl::UserSlot>>,
    reply: Arc<Reply>,
}

/// The pool: a queue and its threads, started on first use.
#[derive(Default)]
pub struct Pool {
    /// The server, for the pool's threads (set at start; without it nothing offloads).
    this: OnceLock<Weak<Server>>,
    queue: Mutex<VecDeque<Job>>,
    ready: Condvar,
    started: OnceLock<()>,
    /// Threads started, commands run on the pool so far, and queued or running now
    /// (INFO threads).
    pub threads: AtomicU64,
    pub total: AtomicU64,
    pub pending: AtomicU64,
}

impl Pool {
    /// Remember the server (called once at start).
    pub fn attach(&self, srv: Weak<Server>) {
        let _ = self.this.set(srv);
    }

    fn start(&self, srv: &Server) {
        self.started.get_or_init(|| {
            let n = match srv.config.get_i64("offload-threads") {
                n if n > 0 => n as usize,
                _ => srv.stats.workers.len().max(1),
            };
            for i in 0..n {
                let Some(this) = self.this.get().cloned() else {
                    return;
                };
                let spawned = std::thread::Builder::new()
                    .name(format!("skein-offload-{i}"))
                    .spawn(move || pool_thread(this));
                if spawned.is_ok() {
                    self.threads.fetch_add(1, Relaxed);
                }
            }
        });
    }

    fn push(&self, job: Job) {
        self.pending.fetch_add(1, Relaxed);
        self.queue.lock().push_back(job);
        self.ready.notify_one();
    }
}

/// Should this command run on the pool? Its shards are held in `keys` (read only).
#[inline]
pub fn wanted(
    srv: &Server,
    cmd: &crate::cmd::table::CommandDef,
    argv: &[&[u8]],
    keys: &mut engine::Locked,
) -> bool {
    if !cost::may_cost(srv, cmd) || srv.offload.this.get().is_none() {
        return false;
    }
    // MIGRATE's blocking network I/O never runs on a worker.
    if cost::waits_on_network(srv, cmd) {
        return true;
    }
    let threshold = srv.config.hot.offload_threshold.load(Relaxed);
    if threshold <= 0 {
        return false;
    }
    // A bug in an estimate must not take the worker down: such a command runs inline.
    let estimate = || cost::estimate(srv, cmd, argv, keys);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(estimate))
        .is_ok_and(|cost| cost >= threshold as u64)
}

/// Can this command wait for its shards on the pool instead of its worker? Only commands
/// that touch keys and nothing of their client's state (which the pool does not have):
/// not WATCH, EXEC, scripts, blocking commands, SHUTDOWN, DEBUG but for its digests.
/// Of the commands that walk a database a shard at a time, only those that write nothing
/// and can run again from the start when a walk stops at a busy shard: KEYS and DEBUG
/// DIGEST (SCAN and RANDOMKEY never wait out a busy shard; DBSIZE does not lock).
pub fn may_wait_there(cmd: &crate::cmd::table::CommandDef, argv: &[&[u8]]) -> bool {
    use crate::cmd::table::LockRule;
    match cmd.lock {
        LockRule::Keys
        | LockRule::WholeDb
        | LockRule::AllDbs
        | LockRule::CrossDb
        | LockRule::AllArgs
        | LockRule::GeoStore
        | LockRule::Sort => !cmd.flags.blocking && cmd.name != "watch",
        LockRule::WalkDb => cmd.name == "keys",
        LockRule::DebugObject => {
            let sub = argv.get(1).map_or(&b""[..], |a| a);
            (sub.eq_ignore_ascii_case(b"digest") && argv.len() == 2)
                || sub.eq_ignore_ascii_case(b"digest-value")
        }
        _ => false,
    }
}

impl Pool {
    /// Is a command queued on the pool or running there?
    pub fn busy(&self) -> bool {
        self.pending.load(Relaxed) > 0
    }
}

/// Hand the command to the pool; the client waits for its [`Reply`].
pub fn submit(srv: &Server, client: &mut ClientState, out: &ReplyBuf, argv: &[&[u8]]) {
    let silent = matches!(client.reply_mode, ReplyMode::Off | ReplyMode::Skipping);
    let reply = Reply::waiting(silent);
    client.offloaded = Some(reply.clone());
    let pool = &srv.offload;
    pool.start(srv);
    pool.push(Job {
        argv: argv.iter().map(|a| a.to_vec()).collect(),
        db: client.db,
        id: client.id,
        worker: client.worker,
        proto: out.proto,
        info: client.info.clone(),
        user: client.user.clone(),
        reply,
    });
}

fn pool_thread(this: Weak<Server>) {
    // The nice value this thread runs at (`offload-nice`; the workers run at 0).
    let mut nice = None;
    loop {
        let Some(srv) = this.upgrade() else {
            return;
        };
        let job = {
            let mut q = srv.offload.queue.lock();
            loop {
                if let Some(job) = q.pop_front() {
                    break job;
                }
                if srv.is_shutting_down() {
                    return;
                }
                srv.offload
                    .ready
                    .wait_for(&mut q, std::time::Duration::from_millis(100));
            }
        };
        renice(&srv, &mut nice);
        run(&srv, job);
    }
}

/// Apply `offload-nice` to the calling pool thread when it differs from `applied`, the
/// value this thread last applied (so CONFIG SET reaches threads already running, before
/// their next command). A value the OS refuses (a lower one without the privilege to
/// raise a priority) is logged once and leaves the thread as it was.
fn renice(srv: &Server, applied: &mut Option<i64>) {
    let want = srv.config.hot.offload_nice.load(Relaxed);
    if *applied == Some(want) {
        return;
    }
    *applied = Some(want);
    // SAFETY: setpriority takes plain integers; with PRIO_PROCESS and who = 0 Linux applies
    // the nice value to the calling thread only.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, want as libc::c_int) };
    if rc != 0 {
        crate::log::warning(&format!(
            "Failed to set the offload pool's nice value to {want}: {}",
            std::io::Error::last_os_error()
        ));
    }
}

/// Run one job as its client would have on its worker, then wake the worker.
fn run(srv: &Server, job: Job) {
    let mut client = ClientState::detached(job.id, job.db, job.worker, job.info.clone());
    client.user = job.user;
    let mut out = ReplyBuf::new(job.proto);
    let argv: smallvec::SmallVec<[&[u8]; 8]> = job.argv.iter().map(|a| a.as_slice()).collect();
    engine::begin_batch();
    crate::dispatch::run_offloaded(srv, &mut client, &mut out, &argv);
    job.reply.wrote.store(client.wrote, Relaxed);
    job.reply.fill(out.out);
    srv.offload.pending.fetch_sub(1, Relaxed);
    srv.offload.total.fetch_add(1, Relaxed);
    job.info.mailbox.notify(job.info.token);
}
