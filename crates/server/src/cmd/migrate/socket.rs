//! MIGRATE's connections to its targets, cached per "host:port" as Redis caches them
//! (migrateGetSocket): at most 64, each remembering the database it last selected, closed
//! once idle for more than 10 seconds (by the cron thread, [`close_idle`]) or after an
//! error. A MIGRATE takes its connection out of the cache while it uses it, so two running
//! at once (on two pool threads) never share one.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// MIGRATE_SOCKET_CACHE_ITEMS and MIGRATE_SOCKET_CACHE_TTL.
const MAX_CACHED: usize = 64;
const IDLE_CLOSE: Duration = Duration::from_secs(10);

/// How a socket operation failed: a timeout (Redis then does not retry) or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    TimedOut,
    Other,
}

/// One connection to a target.
pub struct Target {
    /// The connection, or how making it failed (shown at the first write).
    stream: Result<TcpStream, Failure>,
    /// Bytes read past the last line.
    pending: Vec<u8>,
    /// The database last selected on it (-1: none or unknown).
    pub last_db: i64,
    last_use: Instant,
}

type Cache = Mutex<HashMap<Vec<u8>, Target>>;

/// Process-wide, as Redis's `server.migrate_cached_sockets` (one server per process).
static CACHE: OnceLock<Cache> = OnceLock::new();

fn cache() -> &'static Cache {
    CACHE.get_or_init(Default::default)
}

/// The cache's name for a target: "host:port" as given.
pub fn name(host: &[u8], port: &[u8]) -> Vec<u8> {
    [host, b":", port].concat()
}

/// The cached connection to `name`, taken out of the cache, or a new one to `host` and
/// `port` (C's atoi of the argument); `None` when the address cannot be used at all.
///
/// Redis connects without blocking and then waits for the socket to be writable, taking a
/// refused or timed-out connection as made: the failure shows when it writes. A new
/// connection that failed that way is kept here as broken, and fails the first write the
/// same way (a refusal retried once, a timeout not).
pub fn checkout(name: &[u8], host: &[u8], port: i64, timeout: Duration) -> Option<Target> {
    if let Some(mut t) = cache().lock().remove(name) {
        t.last_use = Instant::now();
        return Some(t);
    }
    let stream = connect(host, port, timeout)?;
    if let Ok(s) = &stream {
        let _ = s.set_nodelay(true);
    }
    Some(Target {
        stream,
        pending: Vec::new(),
        last_db: -1,
        last_use: Instant::now(),
    })
}

/// Put a connection that is still good back into the cache (full: one other dropped).
pub fn checkin(name: Vec<u8>, target: Target) {
    let mut c = cache().lock();
    if c.len() >= MAX_CACHED && !c.contains_key(&name) {
        if let Some(victim) = c.keys().next().cloned() {
            c.remove(&victim);
        }
    }
    c.insert(name, target);
}

/// Close the connections idle for more than 10 seconds (migrateCloseTimedoutSockets).
pub fn close_idle() {
    // Nothing to do (and no lock taken) before the first MIGRATE.
    let Some(c) = CACHE.get() else {
        return;
    };
    let mut c = c.lock();
    if !c.is_empty() {
        c.retain(|_, t| t.last_use.elapsed() <= IDLE_CLOSE);
    }
}

/// Resolve and connect (anetTcpNonBlockConnect, then a wait for writability): `None`
/// when the name does not resolve or every address fails at once; a refusal or a timeout
/// is a connection made broken.
fn connect(host: &[u8], port: i64, timeout: Duration) -> Option<Result<TcpStream, Failure>> {
    let host = std::str::from_utf8(host).ok()?;
    // atoi gives an int, and getaddrinfo keeps the low 16 bits of a numeric service; it
    // refuses a negative one.
    let port = port as i32;
    if port < 0 {
        return None;
    }
    let addrs: Vec<_> = (host, (port & 0xFFFF) as u16)
        .to_socket_addrs()
        .ok()?
        .collect();
    let deadline = Instant::now() + timeout;
    let mut made = None;
    for addr in addrs {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Some(Ok(s)),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                made.get_or_insert(Failure::Other);
            }
            Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                made.get_or_insert(Failure::TimedOut);
            }
            Err(_) => {}
        }
    }
    made.map(Err)
}

fn failure(e: &std::io::Error) -> Failure {
    match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::TimedOut,
        _ => Failure::Other,
    }
}

impl Target {
    /// Write `buf` in 64 KB chunks, each within `timeout` (connSyncWrite).
    pub fn write(&mut self, buf: &[u8], timeout: Duration) -> Result<(), Failure> {
        let stream = self.stream.as_mut().map_err(|f| *f)?;
        for chunk in buf.chunks(64 * 1024) {
            let deadline = Instant::now() + timeout;
            let mut pos = 0;
            while pos < chunk.len() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Failure::TimedOut);
                }
                let _ = stream.set_write_timeout(Some(left));
                match stream.write(&chunk[pos..]) {
                    Ok(0) => return Err(Failure::Other),
                    Ok(n) => pos += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(failure(&e)),
                }
            }
        }
        Ok(())
    }

    /// One reply line without its CR LF, read within `timeout` (connSyncReadLine; like
    /// Redis's 1 KB buffer, only its first 1023 bytes are kept). An empty line is a
    /// failure, as Redis reads it.
    pub fn read_line(&mut self, timeout: Duration) -> Result<Vec<u8>, Failure> {
        let stream = self.stream.as_mut().map_err(|f| *f)?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=i).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                line.truncate(1023);
                return if line.is_empty() {
                    Err(Failure::Other)
                } else {
                    Ok(line)
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::TimedOut);
            }
            let _ = stream.set_read_timeout(Some(left));
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk) {
                Ok(0) => return Err(Failure::Other),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(failure(&e)),
            }
        }
    }
}
