//! A worker thread: one mio event loop owning a set of connections.

use super::conn::{After, Conn};
use super::stream::NewConn;
use crate::clients::ClientInfo;
use crate::cmd::{ClientState, ReplyMode};
use crate::server::Server;
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAKE: Token = Token(usize::MAX);

/// How the acceptor reaches a worker.
pub struct WorkerHandle {
    pub tx: Sender<NewConn>,
    pub waker: Arc<Waker>,
}

/// Start worker `index`; returns its handle and its thread.
pub fn spawn(
    index: usize,
    srv: Arc<Server>,
) -> std::io::Result<(WorkerHandle, std::thread::JoinHandle<()>)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
    let (tx, rx) = channel();
    let thread = std::thread::Builder::new()
        .name(format!("skein-worker-{index}"))
        .spawn(move || Worker::new(index, srv, poll, rx).run())?;
    Ok((WorkerHandle { tx, waker }, thread))
}

struct Worker {
    index: usize,
    srv: Arc<Server>,
    poll: Poll,
    rx: Receiver<NewConn>,
    conns: HashMap<usize, Conn>,
    next_token: usize,
}

impl Worker {
    fn new(index: usize, srv: Arc<Server>, poll: Poll, rx: Receiver<NewConn>) -> Worker {
        Worker {
            index,
            srv,
            poll,
            rx,
            conns: HashMap::new(),
            next_token: 0,
        }
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut last_tick = Instant::now();
        loop {
            if let Err(e) = self
                .poll
                .poll(&mut events, Some(Duration::from_millis(100)))
            {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    crate::log::warning(&format!("worker {} poll failed: {e}", self.index));
                    return;
                }
            }
            for ev in events.iter() {
                if ev.token() == WAKE {
                    self.accept_new();
                    self.reap_killed();
                    continue;
                }
                let t = ev.token().0;
                let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
                self.service(t, readable);
            }
            if self.srv.is_shutting_down() {
                self.close_all();
                return;
            }
            if last_tick.elapsed() >= Duration::from_millis(100) {
                last_tick = Instant::now();
                self.tick();
            }
        }
    }

    fn accept_new(&mut self) {
        while let Ok(nc) = self.rx.try_recv() {
            let id = self.srv.next_client_id.fetch_add(1, Relaxed);
            let is_unix = matches!(nc.stream, super::stream::Stream::Unix(_));
            let info = Arc::new(ClientInfo::new(
                id, nc.addr, nc.laddr, nc.fd, self.index, is_unix,
            ));
            let state = ClientState {
                id,
                db: 0,
                authenticated: self.srv.config.get("requirepass").is_empty(),
                info: info.clone(),
                close_after_reply: false,
                reply_mode: ReplyMode::On,
                worker: self.index,
            };
            let mut conn = Conn::new(nc.stream, state);
            conn.interest = Some(Interest::READABLE);
            let token = self.next_token;
            self.next_token += 1;
            if self
                .poll
                .registry()
                .register(&mut conn.stream, Token(token), Interest::READABLE)
                .is_err()
            {
                continue;
            }
            self.srv.clients.add(info);
            let ws = &self.srv.stats.workers[self.index];
            ws.connections.fetch_add(1, Relaxed);
            ws.clients.fetch_add(1, Relaxed);
            self.conns.insert(token, conn);
        }
    }

    fn service(&mut self, token: usize, readable: bool) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if conn.state.info.kill.load(Relaxed) {
            self.close(token);
            return;
        }
        match conn.on_ready(&self.srv, self.index, readable) {
            After::Close => self.close(token),
            After::Keep {
                want_read,
                want_write,
            } => {
                let interest = match (want_read, want_write) {
                    (true, true) => Interest::READABLE | Interest::WRITABLE,
                    (false, true) => Interest::WRITABLE,
                    _ => Interest::READABLE,
                };
                if conn.interest != Some(interest) {
                    conn.interest = Some(interest);
                    let _ =
                        self.poll
                            .registry()
                            .reregister(&mut conn.stream, Token(token), interest);
                }
            }
        }
    }

    fn close(&mut self, token: usize) {
        if let Some(mut conn) = self.conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            conn.stream.shutdown();
            self.srv.clients.remove(conn.state.id);
            self.srv.stats.workers[self.index]
                .clients
                .fetch_sub(1, Relaxed);
        }
    }

    fn reap_killed(&mut self) {
        let dead: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.state.info.kill.load(Relaxed))
            .map(|(t, _)| *t)
            .collect();
        for t in dead {
            self.close(t);
        }
    }

    /// Periodic work: killed clients, idle timeouts, CPU accounting.
    fn tick(&mut self) {
        self.reap_killed();
        let timeout = self.srv.config.get_i64("timeout");
        if timeout > 0 {
            let now = engine::now_ms();
            let idle: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, c)| {
                    now - c.state.info.last_interaction_ms.load(Relaxed) > timeout * 1000
                })
                .map(|(t, _)| *t)
                .collect();
            for t in idle {
                self.close(t);
            }
        }
        let (u, s) = crate::stats::thread_cpu_us();
        let ws = &self.srv.stats.workers[self.index];
        ws.cpu_user_us.store(u, Relaxed);
        ws.cpu_sys_us.store(s, Relaxed);
    }

    /// Shutdown: deliver pending replies (best effort, bounded), then close everyone.
    fn close_all(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let tokens: Vec<usize> = self.conns.keys().copied().collect();
        for t in tokens {
            if let Some(conn) = self.conns.get_mut(&t) {
                while Instant::now() < deadline {
                    if !conn.flush(&self.srv, self.index) {
                        break;
                    }
                    if !conn.has_pending_output() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            self.close(t);
        }
    }
}
