//! Acceptor threads: accept connections and hand each to the least-loaded worker.

use super::stream::{NewConn, Stream};
use super::tls_stream::TlsStream;
use super::worker::WorkerHandle;
use crate::server::Server;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Bind every address of `bind` on `port`. A leading `-` marks an address whose failure
/// is tolerated, as in Redis.
pub fn bind_tcp(bind: &str, port: u16, backlog: i32) -> Result<Vec<TcpListener>, String> {
    let mut out = Vec::new();
    for word in bind.split_whitespace() {
        let (optional, addr) = match word.strip_prefix('-') {
            Some(a) => (true, a),
            None => (false, word),
        };
        let ip = match addr {
            "*" => "0.0.0.0",
            "::*" => "::",
            a => a,
        };
        let sa: SocketAddr = match format!("{ip}:{port}")
            .parse()
            .or_else(|_| format!("[{ip}]:{port}").parse())
        {
            Ok(sa) => sa,
            Err(_) if optional => continue,
            Err(_) => return Err(format!("Invalid bind address '{addr}'")),
        };
        match listen(sa, backlog) {
            Ok(l) => out.push(l),
            Err(_) if optional => {}
            Err(e) => {
                return Err(format!(
                    "Warning: Could not create server TCP listening socket {addr}:{port}: {e}"
                ))
            }
        }
    }
    Ok(out)
}

fn listen(sa: SocketAddr, backlog: i32) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(sa), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if sa.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.bind(&sa.into())?;
    sock.listen(backlog)?;
    Ok(sock.into())
}

/// Pick the worker with the fewest clients.
fn pick_worker(srv: &Server, n: usize) -> usize {
    (0..n)
        .min_by_key(|&i| srv.stats.workers[i].clients.load(Relaxed))
        .unwrap_or(0)
}

fn admit(srv: &Server, stream: &mut dyn Write, loopback: bool) -> bool {
    let max = srv.config.get_i64("maxclients").max(1) as usize;
    if srv.clients.len() >= max {
        let _ = stream.write_all(b"-ERR max number of clients reached\r\n");
        srv.stats.rejected_connections.fetch_add(1, Relaxed);
        return false;
    }
    if !loopback && srv.config.get_bool("protected-mode") && srv.acl.default_nopass() {
        let _ = stream.write_all(DENIED.as_bytes());
        srv.stats.rejected_connections.fetch_add(1, Relaxed);
        return false;
    }
    true
}

fn dispatch(srv: &Server, workers: &[Arc<WorkerHandle>], nc: NewConn) {
    let w = pick_worker(srv, workers.len());
    // Count it now, so a burst of accepts spreads out before the worker registers it. The
    // worker takes this count over when it registers the connection (and gives it back if
    // it cannot), so the figure never counts one connection twice.
    srv.stats.workers[w].clients.fetch_add(1, Relaxed);
    workers[w].mailbox.deliver(nc);
}

/// Accept TCP connections; with `tls`, each carries a TLS session (`tls-port`).
/// The thread ends once `stop` is set and the listener shut down (a TLS port moved).
pub fn spawn_tcp(
    srv: Arc<Server>,
    l: Arc<TcpListener>,
    workers: Vec<Arc<WorkerHandle>>,
    tls: bool,
    stop: Arc<AtomicBool>,
) {
    let name = if tls {
        "skein-accept-tls"
    } else {
        "skein-accept"
    };
    let _ = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            let accepted = l.accept();
            if stop.load(Relaxed) {
                return;
            }
            let (mut s, peer) = match accepted {
                Ok(x) => x,
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
            };
            // A refusal in plaintext would be noise to a TLS client: it just closes.
            let admitted = if tls {
                admit(&srv, &mut std::io::sink(), peer.ip().is_loopback())
            } else {
                admit(&srv, &mut s, peer.ip().is_loopback())
            };
            if !admitted {
                continue;
            }
            let _ = s.set_nodelay(true);
            let keepalive = srv.config.get_i64("tcp-keepalive");
            if keepalive > 0 {
                let sock = socket2::SockRef::from(&s);
                let ka = socket2::TcpKeepalive::new()
                    .with_time(std::time::Duration::from_secs(keepalive as u64));
                let _ = sock.set_tcp_keepalive(&ka);
            }
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            let laddr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
            let fd = s.as_raw_fd();
            let sock = mio::net::TcpStream::from_std(s);
            let stream = if tls {
                match tls_session(&srv) {
                    Some(session) => Stream::Tls(Box::new(TlsStream::new(sock, session))),
                    None => continue,
                }
            } else {
                Stream::Tcp(sock)
            };
            let nc = NewConn {
                stream,
                addr: peer.to_string(),
                laddr,
                fd,
            };
            dispatch(&srv, &workers, nc);
        });
}

/// A new server session under the current TLS context and `tls-auth-clients` (None when
/// client certificates are asked for with no CA to check them: the client is refused, as
/// Redis's handshake fails then).
fn tls_session(srv: &Server) -> Option<rustls::ServerConnection> {
    rustls::ServerConnection::new(srv.tls.for_accept(srv)?).ok()
}

pub fn spawn_unix(
    srv: Arc<Server>,
    l: UnixListener,
    path: String,
    workers: Vec<Arc<WorkerHandle>>,
) {
    let _ = std::thread::Builder::new()
        .name("skein-accept-unix".into())
        .spawn(move || loop {
            let (mut s, _) = match l.accept() {
                Ok(x) => x,
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
            };
            if !admit(&srv, &mut s, true) || s.set_nonblocking(true).is_err() {
                continue;
            }
            let fd = s.as_raw_fd();
            let nc = NewConn {
                stream: Stream::Unix(mio::net::UnixStream::from_std(s)),
                addr: format!("{path}:0"),
                laddr: format!("{path}:0"),
                fd,
            };
            dispatch(&srv, &workers, nc);
        });
}
