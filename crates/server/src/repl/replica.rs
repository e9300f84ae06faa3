//! One replica's thread: the answer to its PSYNC/SYNC, the snapshot, then the stream; and
//! the reader of its REPLCONF ACKs.

use super::{Replica, ONLINE, SEND_BULK};
use crate::clients::{flag, ClientInfo};
use crate::log;
use crate::persist::save;
use crate::server::Server;
use engine::snapshot::Snapshot;
use resp::{Limits, Parsed, RequestParser};
use std::io::{self, BufWriter, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a replica asked for, and what it told before (REPLCONF).
#[derive(Default)]
pub struct Request {
    /// PSYNC's replication ID and offset (the first byte it needs); None for SYNC.
    pub psync: Option<(Vec<u8>, i64)>,
    /// REPLCONF listening-port.
    pub port: u16,
    /// REPLCONF ip-address.
    pub ip: Option<String>,
    /// REPLCONF capa eof: reads an RDB framed by `$EOF:<mark>`.
    pub eof: bool,
    /// REPLCONF capa psync2: +CONTINUE carries the replication ID.
    pub psync2: bool,
    /// The connection's client, listed (flag S) for as long as the replica is served.
    pub client: Option<Arc<ClientInfo>>,
}

/// Serve a replica on `stream` (its worker let go of it) on a thread of its own.
/// `peer_ip` is the address it connected from.
pub fn serve(srv: Arc<Server>, stream: TcpStream, peer_ip: String, mut req: Request) {
    super::ensure_feeder(&srv);
    let ip = req.ip.clone().unwrap_or(peer_ip);
    // Its worker took it out of the client list: back in as a replica, as Redis lists
    // its replicas (connected_clients leaves them out).
    let client = req.client.take();
    if let Some(c) = &client {
        c.set_flag(flag::UNREGISTERED, false);
        c.set_flag(flag::REPLICA, true);
        srv.clients.add(c.clone());
    }
    let r = srv.repl.add(ip, req.port, client);
    let spawned = std::thread::Builder::new()
        .name("skein-replica".into())
        .spawn({
            let (srv, r) = (srv.clone(), r.clone());
            move || {
                let name = format!("{}:{}", r.ip, r.port);
                if let Err(e) = run(&srv, &r, stream, req) {
                    log::warning(&format!("Connection with replica {name} lost ({e})."));
                }
                srv.propagation.backlog.remove_reader(r.id);
                srv.repl.remove(&srv, r.id);
            }
        });
    if spawned.is_err() {
        srv.repl.remove(&srv, r.id);
    }
}

fn run(srv: &Server, r: &Arc<Replica>, mut stream: TcpStream, req: Request) -> io::Result<()> {
    let timeout = Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64);
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(timeout))?;
    let name = format!("{}:{}", r.ip, r.port);
    log::notice(&format!("Replica {name} asks for synchronization"));
    let backlog = &srv.propagation.backlog;
    let replid = srv.stats.replid.lock().clone();
    let mut at = match continue_from(srv, &replid, &req) {
        Some(at) if backlog.add_reader(r.id, at) => {
            let reply = if req.psync2 {
                format!("+CONTINUE {replid}\r\n")
            } else {
                "+CONTINUE\r\n".to_string()
            };
            srv.repl.sync_partial_ok.fetch_add(1, Relaxed);
            stream.write_all(reply.as_bytes())?;
            log::notice(&format!(
                "Partial resynchronization request from {name} accepted. Sending {} bytes of backlog starting from offset {}.",
                backlog.offset() - at,
                at + 1
            ));
            at
        }
        _ => {
            // Asked to continue (not "?"), and refused.
            if req
                .psync
                .as_ref()
                .is_some_and(|(id, _)| !id.starts_with(b"?"))
            {
                srv.repl.sync_partial_err.fetch_add(1, Relaxed);
            }
            srv.repl.sync_full.fetch_add(1, Relaxed);
            full_sync(srv, r, &mut stream, &replid, &req)?
        }
    };
    r.state.store(ONLINE, Relaxed);
    r.ack_secs.store(crate::persist::unix_secs(), Relaxed);
    let reader = stream.try_clone()?;
    let _ = std::thread::Builder::new()
        .name("skein-replica-ack".into())
        .spawn({
            let (r, srv) = (r.clone(), srv.persist.server());
            let replconf = srv
                .as_ref()
                .and_then(|s| s.commands.lookup(&[b"replconf".as_slice()]));
            let replconf = replconf.map_or(0, |c| c.id + 1);
            move || {
                read_acks(&r, reader, replconf, || {
                    if let Some(srv) = &srv {
                        srv.repl.check_waits();
                    }
                })
            }
        })?;
    let streamed = (|| {
        while !r.dropped() && !srv.is_shutting_down() {
            let bytes = backlog
                .read(r.id, at, 1 << 20, Duration::from_millis(100))
                .map_err(|_| io::Error::other("too far behind the backlog"))?;
            if !bytes.is_empty() {
                stream.write_all(&bytes)?;
                at += bytes.len() as u64;
            }
        }
        Ok(())
    })();
    // However it ended: the ACK reader's clone of the socket must not keep the link open.
    let _ = stream.shutdown(std::net::Shutdown::Both);
    streamed
}

/// The position a PSYNC can continue from: its replication ID is ours and the bytes from
/// its offset on are in the backlog.
fn continue_from(srv: &Server, replid: &str, req: &Request) -> Option<u64> {
    let (id, offset) = req.psync.as_ref()?;
    let first = u64::try_from(*offset).ok()?;
    let at = first.checked_sub(1)?;
    let ours = id.as_slice() == replid.as_bytes() || srv.repl.continues_replid2(id, first);
    (ours && srv.propagation.backlog.holds(at)).then_some(at)
}

/// +FULLRESYNC, the snapshot, and the stream position it was cut at.
fn full_sync(
    srv: &Server,
    r: &Replica,
    stream: &mut TcpStream,
    replid: &str,
    req: &Request,
) -> io::Result<u64> {
    let name = format!("{}:{}", r.ip, r.port);
    if req.psync.is_some() {
        log::notice(&format!("Full resync requested by replica {name}"));
    }
    // One snapshot at a time: wait for a running BGSAVE (or another replica's) to end,
    // keeping the link alive with newlines as Redis does.
    let mut at = 0;
    let mut last_newline = Instant::now();
    let snap = loop {
        let cut = srv.keyspace.begin_snapshot_at(save::save_options(srv), || {
            // Every shard held: what was recorded before the cut goes before it.
            crate::persist::aof::drain(srv);
            at = srv.propagation.replicas_from_here(super::backlog_size(srv));
            srv.propagation.backlog.add_reader(r.id, at);
        });
        if let Some(snap) = cut {
            srv.repl.syncing.fetch_add(1, Relaxed);
            break snap;
        }
        if last_newline.elapsed() >= Duration::from_secs(1) {
            stream.write_all(b"\n")?;
            last_newline = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let sizes = save::db_sizes(srv);
    let sent = (|| {
        if req.psync.is_some() {
            stream.write_all(format!("+FULLRESYNC {replid} {at}\r\n").as_bytes())?;
        }
        log::notice(&format!(
            "Starting BGSAVE for SYNC with target: {}",
            if req.eof { "replicas sockets" } else { "disk" }
        ));
        r.state.store(SEND_BULK, Relaxed);
        if req.eof {
            send_diskless(srv, &snap, &sizes, stream)
        } else {
            send_through_file(srv, &snap, &sizes, stream, r.id)
        }
    })();
    srv.keyspace.end_snapshot();
    srv.repl.syncing.fetch_sub(1, Relaxed);
    sent?;
    log::notice(&format!("Synchronization with replica {name} succeeded"));
    Ok(at)
}

/// The snapshot straight to the socket, between `$EOF:<mark>` and the mark.
fn send_diskless(
    srv: &Server,
    snap: &Arc<Snapshot>,
    sizes: &[(u64, u64)],
    stream: &mut TcpStream,
) -> io::Result<()> {
    let mark = crate::stats::random_hex40();
    stream.write_all(format!("$EOF:{mark}\r\n").as_bytes())?;
    let sink = BufWriter::with_capacity(1 << 20, &mut *stream);
    let mut fw = save::rdb_writer(srv, sink, false)?;
    save::walk_snapshot(srv, snap, sizes, &mut fw)?;
    let mut sink = fw.finish()?;
    sink.write_all(mark.as_bytes())?;
    sink.flush()
}

/// The snapshot to a file in `dir`, then `$<length>` and the file (for a replica that
/// cannot read the `$EOF:` framing): newlines keep the link alive while it is written.
fn send_through_file(
    srv: &Server,
    snap: &Arc<Snapshot>,
    sizes: &[(u64, u64)],
    stream: &mut TcpStream,
    id: u64,
) -> io::Result<()> {
    let path = format!("temp-repl-{}-{id}.rdb", std::process::id());
    let result = std::thread::scope(|s| {
        let writer = s.spawn(|| -> io::Result<()> {
            let f = std::fs::File::create(&path)?;
            let mut fw = save::rdb_writer(srv, BufWriter::with_capacity(1 << 20, f), false)?;
            save::walk_snapshot(srv, snap, sizes, &mut fw)?;
            fw.finish()?.flush()
        });
        while !writer.is_finished() {
            std::thread::sleep(Duration::from_millis(100));
            if !writer.is_finished() {
                // A failed newline surfaces when the file is sent.
                let _ = stream.write_all(b"\n");
            }
        }
        writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("writer panicked")))
    })
    .and_then(|()| {
        let mut f = std::fs::File::open(&path)?;
        let len = f.metadata()?.len();
        stream.write_all(format!("${len}\r\n").as_bytes())?;
        io::copy(&mut f, stream).map(|_| ())
    });
    let _ = std::fs::remove_file(&path);
    result
}

/// Read what the replica sends: REPLCONF ACK <offset> records its position (and, as the
/// client's last command, `replconf_cmd`: REPLCONF's command id + 1); anything else is
/// ignored. EOF or an error marks it gone.
fn read_acks(r: &Replica, mut stream: TcpStream, replconf_cmd: usize, acked: impl Fn()) {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut parser = RequestParser::new();
    let mut args = Vec::new();
    let limits = Limits::default();
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        loop {
            match parser.parse(&buf, &limits, &mut args) {
                Ok(Parsed::Command { consumed }) => {
                    let argv: Vec<&[u8]> = args.iter().map(|a| &buf[a.clone()]).collect();
                    note(r, &argv, replconf_cmd);
                    buf.drain(..consumed);
                }
                Ok(Parsed::Owned {
                    args: owned,
                    consumed,
                }) => {
                    let argv: Vec<&[u8]> = owned.iter().map(|a| a.as_slice()).collect();
                    note(r, &argv, replconf_cmd);
                    buf.drain(..consumed);
                }
                Ok(Parsed::Incomplete) => {
                    acked();
                    break;
                }
                Err(_) => {
                    r.gone.store(true, Relaxed);
                    return;
                }
            }
        }
    }
    r.gone.store(true, Relaxed);
}

fn note(r: &Replica, argv: &[&[u8]], replconf_cmd: usize) {
    let is = |a: &[u8], w: &str| a.eq_ignore_ascii_case(w.as_bytes());
    if let (Some(c), Some(first)) = (&r.client, argv.first()) {
        c.last_interaction_ms.store(engine::wall_ms(), Relaxed);
        if is(first, "replconf") {
            c.last_cmd.store(replconf_cmd, Relaxed);
        }
    }
    if argv.len() >= 3 && is(argv[0], "replconf") && is(argv[1], "ack") {
        if let Some(off) = resp::parse::parse_i64(argv[2]).and_then(|o| u64::try_from(o).ok()) {
            r.ack.fetch_max(off, Relaxed);
            r.ack_secs.store(crate::persist::unix_secs(), Relaxed);
        }
    }
}
