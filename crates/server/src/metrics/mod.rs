//! The Prometheus endpoint: with `metrics-port` set (0, the default, is off), a thread of
//! its own (`skein-metrics`) listens on `metrics-bind`:`metrics-port` and answers
//! `GET /metrics` with [`collect::page`] in the text exposition format.
//!
//! A deliberately small HTTP/1.1 responder: one connection at a time, the request head
//! read with a size and time limit, one response, then the connection is closed. Scrapes
//! are rare (every few seconds) and the page is made in well under a millisecond per
//! command family, so nothing more is needed, and nothing of it touches the workers.
//!
//! CONFIG SET of either option moves the endpoint at once ([`reconfigure`]): the new
//! socket is bound first (a failure leaves the old one serving and fails the CONFIG
//! SET), then the old listener is shut down, which wakes its thread out of `accept`.

pub mod collect;
pub mod exposition;
pub mod names;

use crate::server::Server;
use parking_lot::Mutex;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Longest request head read, and how long a client may take to send it.
const MAX_HEAD: usize = 8192;
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The running endpoint, if any (a field of `Server`).
#[derive(Default)]
pub struct Endpoint {
    /// The server it serves (set once at start, before the first [`reconfigure`]).
    server: std::sync::OnceLock<Weak<Server>>,
    running: Mutex<Option<Running>>,
}

impl Endpoint {
    pub fn attach(&self, srv: Weak<Server>) {
        let _ = self.server.set(srv);
    }
}

struct Running {
    addr: (String, u16),
    listener: Arc<TcpListener>,
    stop: Arc<AtomicBool>,
}

impl Running {
    fn stop(self) {
        self.stop.store(true, Relaxed);
        // Wakes the thread blocked in accept (Linux answers it with an error).
        let _ = socket2::SockRef::from(&*self.listener).shutdown(Shutdown::Both);
    }
}

/// The options that place the endpoint.
pub const OPTIONS: [&str; 2] = ["metrics-port", "metrics-bind"];

/// The address the configuration asks for (`None`: off).
fn wanted(srv: &Server) -> Option<(String, u16)> {
    let port = srv.config.get_i64("metrics-port");
    (port > 0).then(|| (srv.config.get("metrics-bind"), port as u16))
}

/// Start (or move, or stop) the endpoint to match `metrics-port` and `metrics-bind`.
/// Returns the error text when the new address cannot be bound (the old endpoint, if
/// any, keeps serving).
pub fn reconfigure(srv: &Server) -> Result<(), String> {
    let mut running = srv.metrics.running.lock();
    let want = wanted(srv);
    if running.as_ref().map(|r| &r.addr) == want.as_ref() {
        return Ok(());
    }
    let next = match &want {
        Some((host, port)) => {
            let l = TcpListener::bind((host.as_str(), *port))
                .map_err(|e| format!("Could not create the metrics listener {host}:{port}: {e}"))?;
            Some(Running {
                addr: (host.clone(), *port),
                listener: Arc::new(l),
                stop: Arc::new(AtomicBool::new(false)),
            })
        }
        None => None,
    };
    if let Some(old) = running.take() {
        old.stop();
    }
    if let Some(r) = &next {
        let (listener, stop) = (r.listener.clone(), r.stop.clone());
        let weak = srv.metrics.server.get().cloned().unwrap_or_default();
        std::thread::Builder::new()
            .name("skein-metrics".into())
            .spawn(move || serve(&listener, &stop, weak))
            .map_err(|e| format!("metrics thread: {e}"))?;
        if let Ok(a) = r.listener.local_addr() {
            crate::log::notice(&format!("Serving Prometheus metrics on http://{a}/metrics"));
        }
    }
    *running = next;
    Ok(())
}

/// The port the endpoint listens on (0 when off): for tests and logs.
pub fn local_port(srv: &Server) -> u16 {
    srv.metrics
        .running
        .lock()
        .as_ref()
        .and_then(|r| r.listener.local_addr().ok())
        .map_or(0, |a| a.port())
}

fn serve(listener: &TcpListener, stop: &AtomicBool, srv: Weak<Server>) {
    loop {
        let accepted = listener.accept();
        if stop.load(Relaxed) {
            return;
        }
        let Some(srv) = srv.upgrade() else {
            return;
        };
        if srv.is_shutting_down() {
            return;
        }
        match accepted {
            Ok((stream, _)) => answer(&srv, stream),
            // EMFILE and the like: do not spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Read one request head and answer it.
fn answer(srv: &Server, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            );
        }
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => {
            let body = collect::page(srv);
            respond(
                &mut stream,
                "200 OK",
                exposition::CONTENT_TYPE,
                body.as_bytes(),
            );
        }
        ("GET", _) => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"Skein serves its metrics at /metrics\n",
        ),
        _ => respond(&mut stream, "405 Method Not Allowed", "text/plain", b""),
    }
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}
