//! The registry of connected clients, shared by all workers for CLIENT LIST/KILL/INFO,
//! plus the two pieces of server-wide client state: MONITOR subscribers and CLIENT PAUSE.
//!
//! A connection's worker owns its socket and buffers; what other threads may read or ask
//! for lives in [`ClientInfo`]: atomics and small locks touched only when a client's
//! state changes, never a lock on the command path of other clients.

use crate::net::mailbox::Mailbox;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};
use std::sync::Arc;

/// Client flag bits (CLIENT LIST `flags=`), set by the owning worker or its commands.
pub mod flag {
    pub const MONITOR: u32 = 1 << 0;
    pub const PUBSUB: u32 = 1 << 1;
    pub const MULTI: u32 = 1 << 2;
    /// Waiting: a CLIENT PAUSE postponed its command.
    pub const BLOCKED: u32 = 1 << 3;
    pub const CLOSE_AFTER_REPLY: u32 = 1 << 4;
    pub const UNIX: u32 = 1 << 5;
    pub const NO_EVICT: u32 = 1 << 6;
    /// Output is waiting for the socket to become writable (`events=rw`).
    pub const WANT_WRITE: u32 = 1 << 7;
    /// Not reading (output backpressure or half-closed): `events=` lacks `r`.
    pub const NO_READ: u32 = 1 << 8;
    /// CLIENT TRACKING ON (`t`), and its modes.
    pub const TRACKING: u32 = 1 << 9;
    /// The redirect client went away (`R`).
    pub const TRACKING_BROKEN_REDIR: u32 = 1 << 10;
    pub const TRACKING_BCAST: u32 = 1 << 11;
    pub const TRACKING_OPTIN: u32 = 1 << 12;
    pub const TRACKING_OPTOUT: u32 = 1 << 13;
    /// CLIENT CACHING YES (OPTIN) / NO (OPTOUT) for the next command.
    pub const TRACKING_CACHING: u32 = 1 << 14;
    pub const TRACKING_NOLOOP: u32 = 1 << 15;
    /// Left the registry (CLIENT KILL, client eviction, its connection closing): no
    /// longer found by id, as after Redis's freeClient, even while its worker has yet to
    /// close it. Never shown.
    pub const UNREGISTERED: u32 = 1 << 16;
    /// A replica's link, served by its replication thread (`S`).
    pub const REPLICA: u32 = 1 << 17;
    /// A replica's link to its master, running the master's stream (`M`).
    pub const MASTER: u32 = 1 << 18;
}

/// Size Redis's reply buffer reports as one block (`obl` / `oll` in CLIENT LIST).
const REPLY_CHUNK: u64 = 16 * 1024;

/// What the rest of the server may see of one client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub worker: usize,
    /// The connection's token on its worker, and the worker's mailbox.
    pub token: usize,
    pub mailbox: Arc<Mailbox>,
    pub created_ms: i64,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<String>,
    pub db: AtomicUsize,
    pub last_interaction_ms: AtomicI64,
    /// Id + 1 in the command table of the last command run (0: none yet).
    pub last_cmd: AtomicUsize,
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    /// Argument bytes of the command now running (0 between commands).
    pub argv_mem: AtomicU64,
    /// Unsent reply bytes.
    pub obuf: AtomicU64,
    /// Reply buffer capacity and the largest reply backlog seen lately.
    pub rbuf_size: AtomicU64,
    pub rbuf_peak: AtomicU64,
    /// Memory the connection's buffers hold.
    pub tot_mem: AtomicU64,
    pub resp: AtomicU64,
    /// Set by CLIENT KILL (or shutdown): the owning worker closes the connection.
    pub kill: AtomicBool,
    /// The ACL user's name (CLIENT LIST `user=`, CLIENT KILL USER).
    pub user: Mutex<Vec<u8>>,
    pub is_unix: bool,
    /// [`flag`] bits.
    pub flags: AtomicU32,
    /// Commands queued by MULTI (CLIENT LIST `multi=`).
    pub multi_len: AtomicU64,
    /// CLIENT LIST multi-mem (set by `ClientState::queue`, cleared by `end_transaction`).
    pub multi_mem: AtomicU64,
    /// MONITOR lines waiting for this client's worker, and whether it was told.
    pub feed: Mutex<Vec<u8>>,
    pub feed_notified: AtomicBool,
    /// Subscriptions and messages waiting for this client's worker.
    pub pubsub: crate::pubsub::ClientPubSub,
    /// CLIENT TRACKING's redirection and prefixes.
    pub tracking: crate::tracking::ClientTracking,
    /// Unix seconds since which output has been past the class's soft limit (0: not).
    pub obuf_soft_since: AtomicI64,
}

/// How a connection is identified when it is created.
pub struct ClientAddr {
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub is_unix: bool,
}

impl ClientInfo {
    /// Redis's islocalClient: a Unix socket, or a TCP peer at 127.0.0.1 or ::1.
    pub fn is_local(&self) -> bool {
        if self.is_unix {
            return true;
        }
        let host = self
            .addr
            .rsplit_once(':')
            .map_or(self.addr.as_str(), |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "127.0.0.1" || host == "::1"
    }

    pub fn new(id: u64, a: ClientAddr, worker: usize, token: usize, mailbox: Arc<Mailbox>) -> Self {
        // The wall clock: a worker registering a new connection may not have begun a batch
        // since it was last woken (its batch "now" can be minutes old).
        let now = engine::wall_ms();
        ClientInfo {
            id,
            addr: a.addr,
            laddr: a.laddr,
            fd: a.fd,
            worker,
            token,
            mailbox,
            created_ms: now,
            name: Mutex::new(Vec::new()),
            lib_name: Mutex::new(String::new()),
            db: AtomicUsize::new(0),
            last_interaction_ms: AtomicI64::new(now),
            last_cmd: AtomicUsize::new(0),
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            argv_mem: AtomicU64::new(0),
            obuf: AtomicU64::new(0),
            rbuf_size: AtomicU64::new(0),
            rbuf_peak: AtomicU64::new(0),
            tot_mem: AtomicU64::new(0),
            resp: AtomicU64::new(2),
            kill: AtomicBool::new(false),
            user: Mutex::new(b"default".to_vec()),
            is_unix: a.is_unix,
            flags: AtomicU32::new(if a.is_unix { flag::UNIX } else { 0 }),
            multi_len: AtomicU64::new(0),
            multi_mem: AtomicU64::new(0),
            feed: Mutex::new(Vec::new()),
            feed_notified: AtomicBool::new(false),
            pubsub: Default::default(),
            tracking: Default::default(),
            obuf_soft_since: AtomicI64::new(0),
        }
    }

    pub fn has(&self, f: u32) -> bool {
        self.flags.load(Relaxed) & f != 0
    }

    pub fn set_flag(&self, f: u32, on: bool) {
        if on {
            self.flags.fetch_or(f, Relaxed);
        } else {
            self.flags.fetch_and(!f, Relaxed);
        }
    }

    pub fn is_monitor(&self) -> bool {
        self.has(flag::MONITOR)
    }

    /// Redis's client type (getClientType): a MONITOR client counts as normal, as in
    /// Redis.
    pub fn client_type(&self) -> ClientType {
        if self.has(flag::MASTER) {
            ClientType::Master
        } else if self.has(flag::REPLICA) {
            ClientType::Replica
        } else if self.has(flag::PUBSUB) {
            ClientType::Pubsub
        } else {
            ClientType::Normal
        }
    }

    /// Ask the owning worker to close this client.
    pub fn request_kill(&self) {
        self.kill.store(true, Relaxed);
        self.mailbox.notify(self.token);
    }

    /// Flag letters as CLIENT LIST shows them, in Redis's order.
    fn flag_letters(&self) -> String {
        let f = self.flags.load(Relaxed);
        let mut s = String::new();
        for (bit, c) in [
            (flag::MONITOR, 'O'),
            (flag::REPLICA, 'S'),
            (flag::MASTER, 'M'),
            (flag::PUBSUB, 'P'),
            (flag::MULTI, 'x'),
            (flag::BLOCKED, 'b'),
            (flag::TRACKING, 't'),
            (flag::TRACKING_BROKEN_REDIR, 'R'),
            (flag::TRACKING_BCAST, 'B'),
            (flag::CLOSE_AFTER_REPLY, 'c'),
            (flag::UNIX, 'U'),
            (flag::NO_EVICT, 'e'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
        if s.is_empty() {
            s.push('N');
        }
        s
    }

    /// The client's memory (CLIENT LIST tot-mem, what maxmemory-clients weighs, INFO's
    /// mem_clients_normal): its connection as last published by its worker, plus its
    /// pub/sub state read now (messages queued for it arrive from other threads).
    pub fn memory(&self) -> u64 {
        self.tot_mem.load(Relaxed) + self.pubsub.memory()
    }

    /// Publish the connection's buffer memory (`tot_mem`), keeping `sum` (its worker's
    /// `clients_mem`) equal to the sum over the worker's connections.
    pub fn set_conn_mem(&self, n: u64, sum: &AtomicU64) {
        let old = self.tot_mem.swap(n, Relaxed);
        if old != n {
            sum.fetch_add(n.wrapping_sub(old), Relaxed);
        }
    }

    /// One line of CLIENT LIST / CLIENT INFO, with Redis 7.0's fields in Redis's order.
    /// `cmd_name` resolves a command id to its full name.
    pub fn describe(&self, now_ms: i64, cmd_name: impl Fn(usize) -> String) -> String {
        let name = String::from_utf8_lossy(&self.name.lock()).into_owned();
        // Redis subtracts whole seconds of its cached unix time.
        let age = (now_ms / 1000 - self.created_ms / 1000).max(0);
        let idle = (now_ms / 1000 - self.last_interaction_ms.load(Relaxed) / 1000).max(0);
        let pending = self.obuf.load(Relaxed);
        let obl = pending.min(REPLY_CHUNK);
        let omem = pending - obl;
        let oll = omem.div_ceil(REPLY_CHUNK);
        let f = self.flags.load(Relaxed);
        let mut events = String::new();
        if f & flag::NO_READ == 0 {
            events.push('r');
        }
        if f & flag::WANT_WRITE != 0 {
            events.push('w');
        }
        let cmd = match self.last_cmd.load(Relaxed) {
            0 => "NULL".to_string(),
            id => cmd_name(id - 1),
        };
        let multi = if f & flag::MULTI != 0 {
            self.multi_len.load(Relaxed) as i64
        } else {
            -1
        };
        let (sub, psub, ssub) = self.pubsub.counts();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            name,
            age,
            idle,
            self.flag_letters(),
            self.db.load(Relaxed),
            sub,
            psub,
            ssub,
            multi,
            self.qbuf.load(Relaxed),
            self.qbuf_free.load(Relaxed),
            self.argv_mem.load(Relaxed),
            self.multi_mem.load(Relaxed),
            self.rbuf_size.load(Relaxed),
            self.rbuf_peak.load(Relaxed),
            obl,
            oll,
            omem,
            self.memory(),
            events,
            cmd,
            String::from_utf8_lossy(&self.user.lock()),
            crate::tracking::redirect_shown(self),
            self.resp.load(Relaxed),
        )
    }
}

/// Redis's client classes (CLIENT LIST TYPE, CLIENT KILL TYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

impl ClientType {
    /// Redis's getClientTypeByName.
    /// Redis's getClientTypeByName: the name is read as a C string (up to a NUL).
    pub fn parse(name: &[u8]) -> Option<ClientType> {
        let lower = crate::cmd::args::c_str(name).to_ascii_lowercase();
        match lower.as_slice() {
            b"normal" => Some(ClientType::Normal),
            b"slave" | b"replica" => Some(ClientType::Replica),
            b"pubsub" => Some(ClientType::Pubsub),
            b"master" => Some(ClientType::Master),
            _ => None,
        }
    }
}

#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    pub monitors: Monitors,
    pub pause: Pause,
    /// Every worker's mailbox (to wake them all when clients are unpaused).
    workers: RwLock<Vec<Arc<Mailbox>>>,
}

impl ClientRegistry {
    pub fn add(&self, c: Arc<ClientInfo>) {
        self.clients.lock().insert(c.id, c);
    }

    pub fn remove(&self, id: u64) -> Option<Arc<ClientInfo>> {
        let c = self.clients.lock().remove(&id);
        if let Some(c) = &c {
            c.set_flag(flag::UNREGISTERED, true);
        }
        c
    }

    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of all clients, ordered by id.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }

    pub fn add_worker(&self, mailbox: Arc<Mailbox>) {
        self.workers.write().push(mailbox);
    }

    pub fn wake_all_workers(&self) {
        for w in self.workers.read().iter() {
            w.wake();
        }
    }

    /// Close `c` from another client's command (CLIENT KILL): it leaves the registry
    /// now, and its worker closes the socket.
    pub fn kill(&self, c: &ClientInfo) {
        self.remove(c.id);
        c.request_kill();
    }
}

/// MONITOR subscribers. The command path only reads `count` unless someone monitors.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    list: RwLock<Vec<Arc<ClientInfo>>>,
}

impl Monitors {
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub fn add(&self, c: Arc<ClientInfo>) {
        let mut l = self.list.write();
        l.push(c);
        self.count.store(l.len(), Relaxed);
    }

    pub fn remove(&self, id: u64) {
        let mut l = self.list.write();
        l.retain(|c| c.id != id);
        self.count.store(l.len(), Relaxed);
    }

    /// Queue `line` for every monitor and tell each one's worker (once per batch).
    pub fn feed(&self, line: &[u8]) {
        for m in self.list.read().iter() {
            m.feed.lock().extend_from_slice(line);
            if !m.feed_notified.swap(true, Relaxed) {
                m.mailbox.notify(m.token);
            }
        }
    }
}

/// CLIENT PAUSE state: what is paused and until when, plus the write pause of a FAILOVER
/// under way (Redis's PAUSE_DURING_FAILOVER purpose: CLIENT UNPAUSE leaves it alone).
/// Connections check it per command with two relaxed loads; a paused connection keeps its
/// command queued and its worker retries it.
#[derive(Default)]
pub struct Pause {
    /// CLIENT PAUSE's [`PauseKind`] as u8 in the low bits (0 = off), and
    /// [`FAILOVER_BIT`] while a failover pauses writes.
    kind: AtomicU8,
    until_ms: AtomicI64,
    /// Bumped on every change, so workers know when to retry paused connections.
    generation: AtomicU64,
    change: Mutex<()>,
}

/// Set in `Pause::kind` while FAILOVER holds writes back (no end time of its own).
const FAILOVER_BIT: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum PauseKind {
    Off = 0,
    Write = 1,
    All = 2,
}

impl Pause {
    /// What is paused now (CLIENT PAUSE's kind is `Off` once its end time has passed).
    #[inline]
    pub fn current(&self, now_ms: i64) -> PauseKind {
        let kind = self.kind.load(Relaxed);
        let client = self.client_kind(kind, now_ms);
        if kind & FAILOVER_BIT != 0 {
            client.max(PauseKind::Write)
        } else {
            client
        }
    }

    #[inline]
    fn client_kind(&self, kind: u8, now_ms: i64) -> PauseKind {
        match kind & !FAILOVER_BIT {
            0 => PauseKind::Off,
            _ if now_ms >= self.until_ms.load(Relaxed) => PauseKind::Off,
            1 => PauseKind::Write,
            _ => PauseKind::All,
        }
    }

    #[inline]
    pub fn maybe_active(&self) -> bool {
        self.kind.load(Relaxed) != 0
    }

    /// When the pause ends (never while a failover holds writes back).
    pub fn until_ms(&self) -> i64 {
        if self.kind.load(Relaxed) & FAILOVER_BIT != 0 {
            return i64::MAX;
        }
        self.until_ms.load(Relaxed)
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Relaxed)
    }

    /// Pause until `end_ms`; a pause already in force keeps the stronger kind and the
    /// later end, as Redis merges them.
    pub fn pause(&self, end_ms: i64, kind: PauseKind) {
        let _g = self.change.lock();
        let now = engine::now_ms();
        let bits = self.kind.load(Relaxed);
        let (kind, end) = match self.client_kind(bits, now) {
            PauseKind::Off => (kind, end_ms),
            cur => (cur.max(kind), end_ms.max(self.until_ms.load(Relaxed))),
        };
        self.until_ms.store(end, Relaxed);
        self.kind.store(kind as u8 | (bits & FAILOVER_BIT), Relaxed);
        self.generation.fetch_add(1, Relaxed);
    }

    /// CLIENT UNPAUSE: ends CLIENT PAUSE's pause (a failover's stays).
    pub fn unpause(&self) {
        let _g = self.change.lock();
        self.kind.fetch_and(FAILOVER_BIT, Relaxed);
        self.generation.fetch_add(1, Relaxed);
    }

    /// Hold writes back while a failover waits for its replica (on), or no longer (off).
    pub fn failover(&self, on: bool) {
        let _g = self.change.lock();
        if on {
            self.kind.fetch_or(FAILOVER_BIT, Relaxed);
        } else {
            self.kind.fetch_and(!FAILOVER_BIT, Relaxed);
        }
        self.generation.fetch_add(1, Relaxed);
    }
}
