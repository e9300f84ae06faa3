//! Replication, the replica's side: REPLICAOF (or `replicaof` in the configuration) makes
//! Skein follow a master (Redis 7.0, or another Skein).
//!
//! The `skein-master-link` thread connects, does Redis's handshake (PING, AUTH with
//! `masterauth`/`masteruser`, REPLCONF listening-port and capa eof/psync2, PSYNC with the
//! cached master's ID and offset, or `?` and `-1`), then either continues (+CONTINUE) or
//! loads the master's snapshot (+FULLRESYNC: `$<length>` or `$EOF:<mark>` framing) in
//! place of the whole dataset, every shard held. It then runs the master's command stream
//! through the dispatcher as the master's client (which read-only mode, memory limits and
//! the loading state never refuse), counts the bytes it processed (the replication
//! offset), answers REPLCONF GETACK and sends REPLCONF ACK every second. A lost link is
//! retried every second with PSYNC from where it stopped.

use super::sync_progress::SyncProgress;
use crate::log;
use crate::persist::load;
use crate::server::Server;
use engine::{Changes, Plan};
use parking_lot::Mutex;
use resp::{Limits, Parsed, RequestParser};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The master's client id (Redis's master client has an id of its own; this one never
/// collides with a connection's, which count up from 1).
pub const MASTER_CLIENT_ID: u64 = u64::MAX - 1;

/// The link's state, as ROLE names it.
pub const CONNECT: u8 = 0;
pub const CONNECTING: u8 = 1;
pub const HANDSHAKE: u8 = 2;
pub const SYNC: u8 = 3;
pub const CONNECTED: u8 = 4;

/// Where a replica's master is, and how far its stream was followed.
#[derive(Default)]
pub struct Link {
    /// The master (host, port); None: this server is a master.
    master: Mutex<Option<(String, u16)>>,
    /// Whether `master` is set (one load on the command path).
    following: std::sync::atomic::AtomicBool,
    /// Bumped at each REPLICAOF: a link thread of an older generation ends.
    generation: AtomicU64,
    pub state: AtomicU8,
    /// The master's replication ID and the stream offset processed (-1: none yet), for
    /// PSYNC after a lost link and for INFO.
    pub master_replid: Mutex<String>,
    pub offset: AtomicI64,
    /// Unix seconds of the last byte read from the master.
    pub last_io: AtomicI64,
    /// Unix seconds since the link is down (0: never up).
    down_since: AtomicI64,
    /// The master's client's id and creation time (ms), kept across a partial resync as
    /// Redis keeps its cached master; a full sync or another master makes a new one.
    master_client: Mutex<Option<(u64, i64)>>,
    /// A full sync's transfer, while `state` is SYNC.
    sync: super::sync_progress::SyncProgress,
    /// The database the master's stream last selected: a partial resync continues the
    /// stream where it was, without a SELECT (Redis keeps its cached master client).
    db: std::sync::atomic::AtomicUsize,
}

impl Link {
    /// The master this server follows, if any.
    pub fn master(&self) -> Option<(String, u16)> {
        self.master.lock().clone()
    }

    #[inline]
    pub fn is_replica(&self) -> bool {
        self.following.load(Relaxed)
    }

    fn current(&self, generation: u64) -> bool {
        self.generation.load(Relaxed) == generation
    }
}

/// INFO replication's lines of a replica (after `role`), up to `connected_slaves`.
pub fn info_lines(srv: &Server) -> Vec<(&'static str, String)> {
    let link = &srv.repl.link;
    let Some((host, port)) = link.master() else {
        return Vec::new();
    };
    let now = crate::persist::unix_secs();
    let up = link.state.load(Relaxed) == CONNECTED;
    // Redis shows 1 until a master (or a cached one) gives an offset.
    let known = up || !link.master_replid.lock().is_empty();
    let offset = if known { link.offset.load(Relaxed) } else { 1 }.to_string();
    let mut out = vec![
        ("master_host", host),
        ("master_port", port.to_string()),
        (
            "master_link_status",
            if up { "up" } else { "down" }.to_string(),
        ),
        (
            "master_last_io_seconds_ago",
            if up {
                (now - link.last_io.load(Relaxed)).to_string()
            } else {
                "-1".to_string()
            },
        ),
        (
            "master_sync_in_progress",
            u8::from(link.state.load(Relaxed) == SYNC).to_string(),
        ),
        ("slave_read_repl_offset", offset.clone()),
        ("slave_repl_offset", offset),
    ];
    if link.state.load(Relaxed) == SYNC {
        out.extend(link.sync.info_lines(now));
    }
    if !up {
        let since = link.down_since.load(Relaxed);
        let secs = if since > 0 { now - since } else { -1 };
        out.push(("master_link_down_since_seconds", secs.to_string()));
    }
    out.push(("slave_priority", srv.config.get("replica-priority")));
    let ro = srv.config.get_bool("replica-read-only");
    out.push(("slave_read_only", u8::from(ro).to_string()));
    let announced = srv.config.get_bool("replica-announced");
    out.push(("replica_announced", u8::from(announced).to_string()));
    out
}

/// Follow `host:port` from now on (REPLICAOF host port, FAILOVER). False if
/// that is the master already.
pub fn follow(srv: &Arc<Server>, host: String, port: u16) -> bool {
    follow_as(srv, host, port, true)
}

/// [`follow`]; `cache_self`: a master offers its own ID and offset (not at start-up,
/// where Redis asks for a full sync with `PSYNC ? -1`).
fn follow_as(srv: &Arc<Server>, host: String, port: u16, cache_self: bool) -> bool {
    let link = &srv.repl.link;
    let was_master = {
        let mut m = link.master.lock();
        if m.as_ref() == Some(&(host.clone(), port)) {
            return false;
        }
        let was_master = m.is_none();
        *m = Some((host, port));
        link.following.store(true, Relaxed);
        *link.master_client.lock() = None;
        was_master
    };
    if was_master && cache_self {
        // Offer the new master our own ID and offset, taken once writes are refused
        // (Redis's replicationCacheMasterUsingMyself): a server that was our replica, or
        // was promoted from one (FAILOVER), continues our stream where it stopped.
        *link.master_replid.lock() = srv.stats.replid.lock().clone();
        link.offset.store(super::offset(srv) as i64, Relaxed);
        link.db.store(0, Relaxed);
    }
    let generation = link.generation.fetch_add(1, Relaxed) + 1;
    link.state.store(CONNECT, Relaxed);
    link.down_since.store(crate::persist::unix_secs(), Relaxed);
    *srv.repl.replid2.lock() = None;
    // Clients blocked on a master must not go on waiting on a replica (whose data only
    // its master changes): Redis's disconnectAllBlockedClients.
    srv.blocking.unblock_all_for_replica();
    srv.repl.unblock_waits();
    let srv = srv.clone();
    let _ = std::thread::Builder::new()
        .name("skein-master-link".into())
        .spawn(move || run(&srv, generation));
    true
}

/// Stop following ([`promote`]'s last step): this server is a master again, under a new
/// replication ID. False if it was one already.
fn unfollow(srv: &Server) -> bool {
    let link = &srv.repl.link;
    {
        let mut m = link.master.lock();
        if m.take().is_none() {
            return false;
        }
        link.following.store(false, Relaxed);
    }
    link.generation.fetch_add(1, Relaxed);
    link.state.store(CONNECT, Relaxed);
    *srv.stats.replid.lock() = crate::stats::random_hex40();
    // Writes made from now on are this server's own: a later REPLICAOF must not continue
    // the old master's stream as if they were not there.
    link.master_replid.lock().clear();
    link.offset.store(0, Relaxed);
    true
}

/// Stop following and become a master (REPLICAOF NO ONE, PSYNC ... FAILOVER, a failover
/// aborted while following its target) that the old master's other replicas, and the old
/// master itself, can continue from with a partial resync, as Redis's shiftReplicationId
/// allows: our backlog starts over at the offset of the old master's stream we processed,
/// and its ID becomes our master_replid2, valid up to that offset + 1. Our own replicas
/// (on our former offsets) are dropped and sync again. False if we were a master.
pub fn promote(srv: &Server) -> bool {
    let link = &srv.repl.link;
    if !link.is_replica() {
        return false;
    }
    // The link stops running the old master's stream.
    link.generation.fetch_add(1, Relaxed);
    let processed = link.offset.load(Relaxed);
    let old_id = link.master_replid.lock().clone();
    let continuable = processed >= 0 && !old_id.is_empty();
    if continuable {
        // What the old master's commands recorded goes out under the old offsets first;
        // clients cannot write before `unfollow` (a replica refuses them). A command the
        // link was running meanwhile lands after the new start: whoever asks to continue
        // from an offset past `processed` gets a full sync.
        crate::persist::aof::drain(srv);
        srv.repl.disconnect_all();
        srv.propagation
            .restart_backlog_at(processed as u64, super::backlog_size(srv));
        // The backlog now takes every write: the feeder hands them on (a replica that
        // never had replicas of its own has none running yet).
        if let Some(this) = srv.persist.server() {
            super::ensure_feeder(&this);
        }
    }
    let was = unfollow(srv);
    // repl-backlog-ttl counts from here.
    srv.repl
        .no_replicas_since
        .store(crate::persist::unix_secs(), Relaxed);
    if continuable {
        *srv.repl.replid2.lock() = Some((old_id, processed as u64 + 1));
    }
    was
}

/// `replicaof <host> <port>` in the configuration: follow that master from the start.
pub fn at_startup(srv: &Arc<Server>) {
    let conf = srv.config.get("replicaof");
    let mut words = conf.split_whitespace();
    if let (Some(host), Some(port)) = (words.next(), words.next().and_then(|p| p.parse().ok())) {
        follow_as(srv, host.to_string(), port, false);
    }
}

fn run(srv: &Server, generation: u64) {
    let link = &srv.repl.link;
    while link.current(generation) && !srv.is_shutting_down() {
        let Some((host, port)) = link.master() else {
            return;
        };
        link.state.store(CONNECTING, Relaxed);
        log::notice(&format!("Connecting to MASTER {host}:{port}"));
        if let Err(e) = session(srv, generation, &host, port) {
            if link.current(generation) {
                log::warning(&format!("Master link with {host}:{port} lost: {e}"));
            }
        }
        if link.current(generation) && link.state.swap(CONNECT, Relaxed) == CONNECTED {
            link.down_since.store(crate::persist::unix_secs(), Relaxed);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The connection to the master: a buffer over its socket.
struct Master {
    s: crate::net::tls_client::LinkStream,
    buf: Vec<u8>,
}

impl Master {
    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// The next line without its CR LF (a bare LF also ends one: the master's keep-alive
    /// newlines come as empty lines).
    fn line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            self.fill()?;
        }
    }

    /// The next line that is not a keep-alive newline.
    fn reply(&mut self) -> io::Result<Vec<u8>> {
        loop {
            let l = self.line()?;
            if !l.is_empty() {
                return Ok(l);
            }
        }
    }

    fn command(&mut self, args: &[&[u8]]) -> io::Result<Vec<u8>> {
        self.s.write_all(&crate::propagate::encode(args))?;
        self.reply()
    }

    /// The snapshot after +FULLRESYNC: `$<length>` and that many bytes, or `$EOF:<mark>`
    /// and bytes up to the mark.
    /// `progress` follows the bytes as they come.
    fn payload(&mut self, progress: &SyncProgress) -> io::Result<Vec<u8>> {
        let head = self.reply()?;
        if let Some(mark) = head.strip_prefix(b"$EOF:") {
            // CONFIG_RUN_ID_SIZE bytes, as Redis's masters send.
            if mark.len() != 40 {
                return Err(bad("Bad EOF mark from MASTER", &head));
            }
            let mark = mark.to_vec();
            progress.sized(0);
            loop {
                progress.reached(self.buf.len());
                if self.buf.len() >= mark.len() && self.buf.ends_with(&mark) {
                    let n = self.buf.len() - mark.len();
                    let mut out = std::mem::take(&mut self.buf);
                    out.truncate(n);
                    return Ok(out);
                }
                self.fill()?;
            }
        }
        let len = head
            .strip_prefix(b"$")
            .and_then(resp::parse::parse_i64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad("Bad protocol from MASTER, the first byte is not '$'", &head))?;
        progress.sized(len as i64);
        while self.buf.len() < len {
            progress.reached(self.buf.len());
            self.fill()?;
        }
        progress.reached(len);
        let rest = self.buf.split_off(len);
        Ok(std::mem::replace(&mut self.buf, rest))
    }
}

fn bad(what: &str, line: &[u8]) -> io::Error {
    io::Error::other(format!("{what} ({})", String::from_utf8_lossy(line)))
}

fn session(srv: &Server, generation: u64, host: &str, port: u16) -> io::Result<()> {
    let link = &srv.repl.link;
    let timeout = Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64);
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other("no address"))?;
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    // TLS with `tls-replication yes`.
    let s = crate::net::tls_client::connect(srv, s, addr.ip())?;
    let mut m = Master { s, buf: Vec::new() };
    log::notice("MASTER <-> REPLICA sync started");
    link.state.store(HANDSHAKE, Relaxed);
    let pong = m.command(&[b"PING"])?;
    let auth_error = [&b"-NOAUTH"[..], b"-NOPERM", b"-ERR operation not permitted"];
    if pong.starts_with(b"-") && !auth_error.iter().any(|p| pong.starts_with(p)) {
        return Err(bad("Error reply to PING from master", &pong));
    }
    log::notice("Master replied to PING, replication can continue...");
    let pass = srv.config.get("masterauth");
    if !pass.is_empty() {
        let user = srv.config.get("masteruser");
        let reply = if user.is_empty() {
            m.command(&[b"AUTH", pass.as_bytes()])?
        } else {
            m.command(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?
        };
        if reply.starts_with(b"-") {
            return Err(bad("Unable to AUTH to MASTER", &reply));
        }
    }
    let our_port = srv.tcp_port.load(Relaxed).to_string();
    let reply = m.command(&[b"REPLCONF", b"listening-port", our_port.as_bytes()])?;
    if reply.starts_with(b"-") {
        log::notice("(Non critical) Master does not understand REPLCONF listening-port");
    }
    let reply = m.command(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?;
    if reply.starts_with(b"-") {
        log::notice("(Non critical) Master does not understand REPLCONF capa");
    }
    let cached = {
        let id = link.master_replid.lock().clone();
        let off = link.offset.load(Relaxed);
        (off >= 0 && !id.is_empty()).then_some((id, off))
    };
    let (id, next) = match &cached {
        Some((id, off)) => (id.clone(), (off + 1).to_string()),
        None => {
            log::notice("Partial resynchronization not possible (no cached master)");
            ("?".to_string(), "-1".to_string())
        }
    };
    // A link given up meanwhile (REPLICAOF, FAILOVER ABORT) asks for nothing.
    if !link.current(generation) {
        return Ok(());
    }
    let reply = psync(srv, &mut m, id.as_bytes(), next.as_bytes())?;
    if let Some(rest) = reply.strip_prefix(b"+FULLRESYNC ") {
        let text = String::from_utf8_lossy(rest).into_owned();
        let mut words = text.split(' ');
        let (Some(id), Some(off)) = (words.next(), words.next().and_then(|o| o.parse().ok()))
        else {
            return Err(bad("Bad FULLRESYNC reply from master", &reply));
        };
        log::notice(&format!("Full resync from master: {id}:{off}"));
        link.sync.start();
        *link.master_client.lock() = None;
        link.state.store(SYNC, Relaxed);
        let payload = m.payload(&link.sync)?;
        if !link.current(generation) {
            return Ok(());
        }
        whole(&payload)?;
        load_snapshot(srv, &payload)?;
        restart_aof(srv);
        *link.master_replid.lock() = id.to_string();
        link.offset.store(off, Relaxed);
        link.db.store(0, Relaxed);
    } else if let Some(rest) = reply.strip_prefix(b"+CONTINUE") {
        let id = String::from_utf8_lossy(rest).trim().to_string();
        if !id.is_empty() {
            *link.master_replid.lock() = id;
        }
        log::notice("Successful partial resynchronization with master.");
    } else {
        return Err(bad("Unexpected reply to PSYNC from master", &reply));
    }
    link.state.store(CONNECTED, Relaxed);
    link.last_io.store(crate::persist::unix_secs(), Relaxed);
    log::notice("MASTER <-> REPLICA sync: Finished with success");
    follow_stream(srv, generation, &mut m, timeout)
}

/// PSYNC <replid> <offset>, with FAILOVER while this server fails over to this master
/// (which makes it one); a failover ends with the answer: done if it is a sync, aborted
/// otherwise.
fn psync(srv: &Server, m: &mut Master, id: &[u8], next: &[u8]) -> io::Result<Vec<u8>> {
    use super::failover;
    if !srv.repl.failover.in_progress() {
        return m.command(&[b"PSYNC", id, next]);
    }
    let sent = m.s.write_all(&crate::propagate::encode(&[
        b"PSYNC",
        id,
        next,
        b"FAILOVER",
    ]));
    if let Err(e) = sent {
        failover::abort(srv, "Write error to failover target");
        return Err(e);
    }
    let reply = match m.reply() {
        Ok(reply) => reply,
        Err(e) => {
            failover::abort(srv, "Failover target rejected psync request");
            return Err(e);
        }
    };
    if reply.starts_with(b"+FULLRESYNC") || reply.starts_with(b"+CONTINUE") {
        failover::finished(srv);
    } else {
        failover::abort(srv, "Failover target rejected psync request");
    }
    Ok(reply)
}

/// Is the snapshot whole (its signature, its EOF opcode and, unless the master saves
/// without one, its CRC64)? Checked before the dataset is flushed: a cut or damaged
/// transfer keeps the old data and the link tries again.
fn whole(payload: &[u8]) -> io::Result<()> {
    let n = payload.len();
    let cut = || io::Error::other("the master's snapshot is cut or damaged");
    if n < 9 + 9 || !payload.starts_with(b"REDIS") || payload[n - 9] != 0xFF {
        return Err(cut());
    }
    let mut tail = [0u8; 8];
    tail.copy_from_slice(&payload[n - 8..]);
    let crc = u64::from_le_bytes(tail);
    if crc != 0 && engine::rdb::crc64(0, &payload[..n - 8]) != crc {
        return Err(cut());
    }
    Ok(())
}

/// The master's snapshot in place of the whole dataset, every shard held meanwhile
/// (clients wait, as they get -LOADING from Redis).
fn load_snapshot(srv: &Server, payload: &[u8]) -> io::Result<()> {
    log::notice(&format!(
        "MASTER <-> REPLICA sync: receiving {} bytes from master to disk",
        payload.len()
    ));
    let mut changes = Changes::default();
    let mut plan = Plan::new();
    plan.all();
    let mut keys = srv.keyspace.lock(&mut plan, 0, &mut changes);
    log::notice("MASTER <-> REPLICA sync: Flushing old data");
    let tables: Vec<_> = (0..srv.keyspace.len())
        .map(|db| keys.flush_db(db))
        .collect();
    crate::lazyfree::free_tables(tables);
    keys.changes.keep_events(false);
    keys.changes.want_informational(0);
    // This server's own replicas cannot continue across a replaced dataset: they are
    // dropped, and the new replication ID makes them resync in full.
    *srv.stats.replid.lock() = crate::stats::random_hex40();
    *srv.repl.replid2.lock() = None;
    srv.repl.disconnect_all();
    log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
    let put = |db, entry| load::insert(&mut keys, db, entry, load::Duplicates::Replace);
    let loaded = load::load_bytes(srv, payload, load::Presize::No, put);
    keys.changes.extra_dirty = 0;
    drop(keys);
    // WATCH and blocked clients see the flush.
    crate::dispatch::effects::consume(srv, srv.stats.workers.len(), &changes, Vec::new());
    match loaded {
        Ok(_) => Ok(()),
        Err(_) => Err(io::Error::other(
            "Failed trying to load the MASTER synchronization DB",
        )),
    }
}

/// After a full sync, an AOF that was on starts again from a rewrite of the new dataset
/// (Redis's restartAOFAfterSYNC): what it held is no longer this server's data.
fn restart_aof(srv: &Server) {
    use crate::persist::aof;
    if !srv.persist.aof.is_on() {
        return;
    }
    aof::stop(srv);
    if aof::rewrite::turn_on(srv).is_err() {
        log::warning("Failed enabling the AOF after successful master synchronization!");
    }
}

/// Run the master's commands as they come, counting the bytes processed; REPLCONF ACK
/// every second and whenever the master asks (GETACK).
fn follow_stream(
    srv: &Server,
    generation: u64,
    m: &mut Master,
    timeout: Duration,
) -> io::Result<()> {
    let link = &srv.repl.link;
    let (mut client, _poll) = crate::persist::aof::load::internal_client(MASTER_CLIENT_ID, 0)?;
    client.db = link.db.load(Relaxed);
    let listed =
        super::master_client::list(srv, &m.s, client.db, &client.info, &link.master_client);
    client.info = listed.info.clone();
    let mut out = resp::ReplyBuf::default();
    let mut parser = RequestParser::new();
    let mut ranges = Vec::new();
    let limits = Limits::default();
    m.s.set_read_timeout(Some(Duration::from_millis(100)))?;
    let ack = |m: &mut Master| -> io::Result<()> {
        let off = link.offset.load(Relaxed).to_string();
        m.s.write_all(&crate::propagate::encode(&[
            b"REPLCONF",
            b"ACK",
            off.as_bytes(),
        ]))
    };
    // The first ACK at once: a master that streamed its snapshot waits for it to start
    // the stream.
    ack(m)?;
    let mut last_ack = Instant::now();
    loop {
        if !link.current(generation) || srv.is_shutting_down() {
            return Ok(());
        }
        if client.info.kill.load(Relaxed) {
            return Err(io::Error::other("killed by CLIENT KILL"));
        }
        loop {
            let (consumed, owned) = match parser.parse(&m.buf, &limits, &mut ranges) {
                Ok(Parsed::Command { consumed }) => (consumed, None),
                Ok(Parsed::Owned { args, consumed }) => (consumed, Some(args)),
                Ok(Parsed::Incomplete) => break,
                Err(e) => return Err(io::Error::other(format!("protocol error: {}", e.0))),
            };
            let argv: Vec<&[u8]> = match &owned {
                Some(args) => args.iter().map(|a| a.as_slice()).collect(),
                None => ranges.iter().map(|r| &m.buf[r.clone()]).collect(),
            };
            let getack = argv.len() >= 2
                && argv[0].eq_ignore_ascii_case(b"replconf")
                && argv[1].eq_ignore_ascii_case(b"getack");
            if !argv.is_empty() && !getack {
                engine::begin_batch();
                crate::dispatch::execute_inline(srv, &mut client, &mut out, &argv);
                out.out.clear();
                link.db.store(client.db, Relaxed);
            }
            drop(argv);
            m.buf.drain(..consumed);
            link.offset.fetch_add(consumed as i64, Relaxed);
            if getack {
                ack(m)?;
            }
        }
        if last_ack.elapsed() >= Duration::from_secs(1) {
            last_ack = Instant::now();
            ack(m)?;
        }
        match m.fill() {
            Ok(()) => link.last_io.store(crate::persist::unix_secs(), Relaxed),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                let idle = crate::persist::unix_secs() - link.last_io.load(Relaxed);
                if idle > timeout.as_secs() as i64 {
                    return Err(io::Error::other(
                        "MASTER timeout: no data nor PING received",
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
}
