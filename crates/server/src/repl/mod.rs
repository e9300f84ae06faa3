//! Replication, the master's side: Redis 7.0 replicas (and anything speaking PSYNC) sync
//! from Skein.
//!
//! A replica's connection starts as any client's (REPLCONF, then PSYNC or SYNC on its
//! worker); the worker then hands the socket to a thread of its own ([`serve`]), which
//! answers +CONTINUE (from the backlog) or +FULLRESYNC, sends a point-in-time snapshot
//! (the fork-less snapshot BGSAVE uses, streamed straight to the socket with Redis's
//! `$EOF:` framing when the replica can read it, through a file otherwise), then the
//! replication stream from the snapshot's cut on, and reads the replica's REPLCONF ACKs.
//!
//! The stream is the propagation stream (`crate::propagate`), which also feeds the AOF:
//! once a replica has connected, every record taken from it is also appended to the
//! [`backlog::Backlog`], in order, and the feeder thread takes records every millisecond
//! (through the AOF when it is on, so each record is taken once). Replicas read the
//! backlog at their own pace.

pub mod backlog;
pub mod failover;
pub mod link;
mod master_client;
mod replica;
mod sync_progress;

pub use replica::{serve, Request};

use crate::clients::ClientInfo;
use crate::offload::Reply;
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

/// A replica's state as INFO names it.
pub const WAIT_BGSAVE: u8 = 0;
pub const SEND_BULK: u8 = 1;
pub const ONLINE: u8 = 2;

/// One connected replica.
pub struct Replica {
    pub id: u64,
    pub ip: String,
    /// The port it listens on (REPLCONF listening-port).
    pub port: u16,
    pub state: AtomicU8,
    /// The stream position it acknowledged, and when (unix seconds).
    pub ack: AtomicU64,
    pub ack_secs: AtomicI64,
    /// Its connection is gone (its reader saw EOF, or a write failed).
    pub gone: AtomicBool,
    /// Its connection's client (CLIENT LIST's flag S), if it came from a worker.
    pub client: Option<Arc<ClientInfo>>,
}

impl Replica {
    /// Streaming, and its link not gone.
    pub fn online(&self) -> bool {
        self.state.load(Relaxed) == ONLINE && !self.gone.load(Relaxed)
    }

    /// Gone, or its client killed (CLIENT KILL): its thread drops the link.
    pub fn dropped(&self) -> bool {
        self.gone.load(Relaxed) || self.client.as_ref().is_some_and(|c| c.kill.load(Relaxed))
    }
}

#[derive(Default)]
pub struct Repl {
    replicas: Mutex<Vec<Arc<Replica>>>,
    next_id: AtomicU64,
    /// Replicas' snapshots installed now (they hold the keyspace's one snapshot slot).
    syncing: AtomicU64,
    /// Clients blocked in WAIT.
    waits: Mutex<Vec<Wait>>,
    /// The master this server follows (REPLICAOF), if any.
    pub link: link::Link,
    /// FAILOVER's state, on the master's side.
    pub failover: failover::Failover,
    /// INFO stats sync_full, sync_partial_ok, sync_partial_err (replicas served).
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// master_replid2 and second_repl_offset: the old master's ID, and the first offset it
    /// may not continue from, once a failover promoted this server (None: zeros and -1).
    pub replid2: Mutex<Option<(String, u64)>>,
    /// Unix seconds since when no replica is connected (repl_no_slaves_since; 0: not
    /// yet known, taken as the feeder's start).
    no_replicas_since: AtomicI64,
    feeder: std::sync::OnceLock<()>,
}

impl Repl {
    fn add(&self, ip: String, port: u16, client: Option<Arc<ClientInfo>>) -> Arc<Replica> {
        let r = Arc::new(Replica {
            id: self.next_id.fetch_add(1, Relaxed),
            ip,
            port,
            state: AtomicU8::new(WAIT_BGSAVE),
            ack: AtomicU64::new(0),
            ack_secs: AtomicI64::new(crate::persist::unix_secs()),
            gone: AtomicBool::new(false),
            client,
        });
        self.replicas.lock().push(r.clone());
        r
    }

    /// The replica and its client leave their lists.
    fn remove(&self, srv: &Server, id: u64) {
        let mut client = None;
        self.replicas.lock().retain(|r| {
            if r.id == id {
                client = r.client.as_ref().map(|c| c.id);
            }
            r.id != id
        });
        if let Some(c) = client {
            srv.clients.remove(c);
        }
        if self.replicas.lock().is_empty() {
            self.no_replicas_since
                .store(crate::persist::unix_secs(), Relaxed);
        }
    }

    /// Is a replica's snapshot being sent (a BGSAVE must wait, as for Redis's RDB child
    /// for replication)?
    pub fn syncing(&self) -> bool {
        self.syncing.load(Relaxed) > 0
    }

    /// CONFIG RESETSTAT: the sync counters start again from zero.
    pub fn reset_sync_stats(&self) {
        for c in [
            &self.sync_full,
            &self.sync_partial_ok,
            &self.sync_partial_err,
        ] {
            c.store(0, Relaxed);
        }
    }

    /// May a PSYNC with `id` and first byte `offset` continue under the old master's ID
    /// (psync_offset <= second_replid_offset, as Redis checks)?
    pub fn continues_replid2(&self, id: &[u8], offset: u64) -> bool {
        self.replid2
            .lock()
            .as_ref()
            .is_some_and(|(old, upto)| old.as_bytes() == id && offset <= *upto)
    }

    /// Drop every replica's link (CLIENT KILL TYPE replica); returns how many.
    pub fn disconnect_all(&self) -> usize {
        let replicas = self.replicas.lock();
        for r in replicas.iter() {
            r.gone.store(true, Relaxed);
        }
        replicas.len()
    }

    /// The connected replicas, in the order they connected.
    pub fn replicas(&self) -> Vec<Arc<Replica>> {
        self.replicas.lock().clone()
    }
}

/// A client blocked in WAIT: its reply once `want` replicas acknowledged `target`, or at
/// its deadline (0: none) with how many did.
struct Wait {
    target: u64,
    want: u64,
    deadline_ms: i64,
    reply: Arc<Reply>,
    info: Arc<ClientInfo>,
}

impl Repl {
    /// Online replicas that acknowledged stream position `target` (replicationCountAcksByOffset).
    pub fn acked(&self, target: u64) -> u64 {
        self.replicas
            .lock()
            .iter()
            .filter(|r| r.online() && r.ack.load(Relaxed) >= target)
            .count() as u64
    }

    /// Answer the WAITs whose replicas acknowledged enough, or whose deadline passed; drop
    /// those whose client left. Returns whether clients still wait.
    fn check_waits(&self) -> bool {
        let mut waits = self.waits.lock();
        if waits.is_empty() {
            return false;
        }
        let now = engine::wall_ms();
        waits.retain(|w| {
            if w.info.has(crate::clients::flag::UNREGISTERED) {
                return false;
            }
            let acked = self.acked(w.target);
            if acked < w.want && (w.deadline_ms == 0 || now < w.deadline_ms) {
                return true;
            }
            w.reply.fill(format!(":{acked}\r\n").into_bytes());
            w.info.mailbox.notify(w.info.token);
            false
        });
        !waits.is_empty()
    }
}

impl Repl {
    /// Clients blocked in WAIT (INFO's blocked_clients counts them, as Redis does).
    pub fn waiting(&self) -> usize {
        self.waits.lock().len()
    }

    /// This server turned replica: WAIT's clients get Redis's -UNBLOCKED error now, and
    /// their connections close once it is written.
    pub fn unblock_waits(&self) {
        for w in self.waits.lock().drain(..) {
            w.reply.close_after_reply.store(true, Relaxed);
            w.reply.fill(
                b"-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"
                    .to_vec(),
            );
            w.info.mailbox.notify(w.info.token);
        }
    }
}

/// What a command's lookups do with keys past their TTL, on a replica or while clients
/// are paused (the dispatcher asks only then; a master not paused deletes them). As
/// Redis's expireIfNeeded: a replica's master stream finds every key live; while clients
/// are paused keys are only hidden (the dataset stays as it is); a read-only replica
/// hides them (the master's DEL deletes them); a writable one deletes them before a write.
#[cold]
pub fn expiry_off_master(srv: &Server, client_id: u64) -> engine::Expiry {
    let replica = srv.repl.link.is_replica();
    if replica && client_id == link::MASTER_CLIENT_ID {
        engine::Expiry::KEEP
    } else if srv.clients.pause.current(engine::now_ms()) != crate::clients::PauseKind::Off {
        engine::Expiry::HIDE
    } else if !replica {
        engine::Expiry::DELETE
    } else if srv.config.hot.replica_read_only.load(Relaxed) {
        engine::Expiry::HIDE
    } else {
        engine::Expiry::HIDE_READS
    }
}

/// checkGoodReplicasStatus: may writes go on? Not while `min-replicas-to-write` is set and
/// fewer online replicas acknowledged within `min-replicas-max-lag` seconds (a replica
/// never refuses for this).
pub fn enough_good_replicas(srv: &Server) -> bool {
    let hot = &srv.config.hot;
    let want = hot.min_replicas_to_write.load(Relaxed);
    let max_lag = hot.min_replicas_max_lag.load(Relaxed);
    if want <= 0 || max_lag <= 0 || srv.repl.link.is_replica() {
        return true;
    }
    good_replicas(srv, max_lag) >= want as usize
}

/// Online replicas whose last ACK is at most `max_lag` seconds old
/// (repl_good_slaves_count).
pub fn good_replicas(srv: &Server, max_lag: i64) -> usize {
    let now = crate::persist::unix_secs();
    srv.repl
        .replicas
        .lock()
        .iter()
        .filter(|r| r.online() && now - r.ack_secs.load(Relaxed) <= max_lag)
        .count()
}

/// Block a client in WAIT (its connection waits for `reply`) until `want` replicas
/// acknowledged `target` or `deadline_ms` (0: none) passes; asks the replicas for an ACK
/// now (REPLCONF GETACK in the stream), as Redis does.
pub fn wait(
    srv: &Arc<Server>,
    target: u64,
    want: u64,
    deadline_ms: i64,
    reply: Arc<Reply>,
    info: Arc<ClientInfo>,
) {
    ensure_feeder(srv);
    srv.repl.waits.lock().push(Wait {
        target,
        want,
        deadline_ms,
        reply,
        info,
    });
    request_acks(srv);
    srv.repl.check_waits();
    // Its deadline is the feeder's to watch.
    srv.propagation.wake_feeder();
}

/// Ask every replica for an ACK now (REPLCONF GETACK * in the stream, Redis's
/// replicationRequestAckFromSlaves): WAIT and a shutdown need not wait for the next one.
/// None while writes are paused (CLIENT PAUSE, FAILOVER), as in Redis: it would move the
/// offset a failover waits for; the replicas' ACKs every second answer meanwhile.
pub fn request_acks(srv: &Server) {
    let paused = srv.clients.pause.maybe_active()
        && srv.clients.pause.current(engine::now_ms()) != crate::clients::PauseKind::Off;
    if srv.propagation.backlog.is_active() && !paused {
        srv.propagation
            .feed_replicas(&crate::propagate::encode(&[b"REPLCONF", b"GETACK", b"*"]));
    }
}

/// repl-backlog-size in bytes.
pub fn backlog_size(srv: &Server) -> u64 {
    crate::config::parse_memory(&srv.config.get("repl-backlog-size"))
        .unwrap_or(1024 * 1024)
        .max(0) as u64
}

/// Start the feeder thread (once): every millisecond it hands the stream's new records on
/// to the backlog, and every `repl-ping-replica-period` seconds, while replicas are
/// connected, it feeds them a PING.
fn ensure_feeder(srv: &Arc<Server>) {
    srv.repl.feeder.get_or_init(|| {
        let srv = srv.clone();
        let _ = std::thread::Builder::new()
            .name("skein-repl".into())
            .spawn(move || feed(&srv));
    });
}

fn feed(srv: &Arc<Server>) {
    use std::time::Duration;
    srv.propagation.set_feeder();
    let mut last_ping = crate::persist::unix_secs();
    let mut last_ttl_check = 0;
    // Polls in a row that found nothing to do: after a while the feeder sleeps until a
    // record comes (an idle master costs nothing), waking at least every 100 ms for the
    // PINGs.
    let mut idle = 0u32;
    loop {
        if idle < 100 {
            std::thread::sleep(Duration::from_millis(1));
        } else {
            srv.propagation.park_feeder(Duration::from_millis(100));
        }
        let pending = srv.propagation.buffered() > 0;
        if pending {
            crate::persist::aof::drain(srv);
        }
        let waiting = srv.repl.check_waits();
        let failing_over = failover::check(srv);
        idle = if pending || waiting || failing_over {
            0
        } else {
            idle.saturating_add(1)
        };
        let now = crate::persist::unix_secs();
        if now != last_ttl_check {
            last_ttl_check = now;
            free_idle_backlog(srv, now);
        }
        let period = srv.config.get_i64("repl-ping-replica-period").max(1);
        // No PING while failing over: the target must reach our offset exactly.
        if now - last_ping >= period && !failing_over {
            last_ping = now;
            if !srv.repl.replicas.lock().is_empty() {
                srv.propagation
                    .feed_replicas(&crate::propagate::encode(&[b"PING"]));
            }
        }
    }
}

/// repl-backlog-ttl: a master without replicas for longer than that frees its backlog,
/// under a new replication ID and without an ID2 (Redis's replicationCron: the writes made
/// meanwhile are not counted, so nobody may continue the old stream). A replica keeps its
/// own, for replicas after a failover.
fn free_idle_backlog(srv: &Server, now: i64) {
    let repl = &srv.repl;
    let ttl = srv.config.get_i64("repl-backlog-ttl");
    if ttl == 0 || !srv.propagation.backlog.is_active() || repl.link.is_replica() {
        return;
    }
    if !repl.replicas.lock().is_empty() {
        return;
    }
    let since = match repl.no_replicas_since.load(Relaxed) {
        0 => {
            repl.no_replicas_since.store(now, Relaxed);
            now
        }
        t => t,
    };
    // A replica that connects meanwhile keeps it.
    if now - since <= ttl
        || !srv
            .propagation
            .free_backlog(|| repl.replicas.lock().is_empty())
    {
        return;
    }
    *srv.stats.replid.lock() = crate::stats::random_hex40();
    *repl.replid2.lock() = None;
    crate::log::notice(&format!(
        "Replication backlog freed after {ttl} seconds without connected replicas."
    ));
}

/// master_repl_offset, every write made so far included (its records are handed to the
/// backlog first, as Redis feeds replicas within the command's call).
pub fn offset(srv: &Server) -> u64 {
    if srv.propagation.feeds_replicas() {
        crate::persist::aof::drain(srv);
    }
    srv.propagation.backlog.offset()
}

/// INFO replication's replica figures: connected_slaves and one slaveN line each.
pub fn info_lines(srv: &Server) -> Vec<(String, String)> {
    let now = crate::persist::unix_secs();
    let replicas = srv.repl.replicas();
    let mut out = vec![("connected_slaves".to_string(), replicas.len().to_string())];
    let hot = &srv.config.hot;
    let max_lag = hot.min_replicas_max_lag.load(Relaxed);
    if hot.min_replicas_to_write.load(Relaxed) > 0 && max_lag > 0 {
        let good = good_replicas(srv, max_lag);
        out.push(("min_slaves_good_slaves".to_string(), good.to_string()));
    }
    for (i, r) in replicas.iter().enumerate() {
        let state = match r.state.load(Relaxed) {
            WAIT_BGSAVE => "wait_bgsave",
            SEND_BULK => "send_bulk",
            _ => "online",
        };
        out.push((
            format!("slave{i}"),
            format!(
                "ip={},port={},state={state},offset={},lag={}",
                r.ip,
                r.port,
                r.ack.load(Relaxed),
                (now - r.ack_secs.load(Relaxed)).max(0)
            ),
        ));
    }
    out
}
