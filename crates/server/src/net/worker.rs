//! A worker thread: one mio event loop owning a set of connections.
//!
//! Each loop iteration services every connection at most once from the poller (plus
//! mailbox notifications), so its replies leave in one write. Connections that still
//! have work (read budget spent, output drained under backpressure) are serviced again
//! next iteration with a zero poll timeout; connections postponed by CLIENT PAUSE are
//! retried when the pause changes or ends.

use super::conn::{After, Conn, Ready};
use super::lend::Spare;
use super::mailbox::Mailbox;
use super::stream::{NewConn, Stream};
use crate::clients::{flag, ClientAddr, ClientInfo, PauseKind};
use crate::cmd::ClientState;
use crate::server::Server;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAKE: Token = Token(usize::MAX);
/// Periodic work (idle timeouts, CPU accounting) runs this often.
const TICK: Duration = Duration::from_millis(100);
/// Timer heaps smaller than this are never pruned.
const MIN_TIMER_PRUNE: usize = 1024;
/// A connection quiet this long gives back its buffers.
const TRIM_IDLE_MS: i64 = 2000;
/// Each tick looks at this fraction of the connections (idle timeout, buffers), so each
/// is seen about once a second, as Redis's clientsCron sees every client: the cost per
/// tick stays small with thousands of connections.
const TICKS_PER_SWEEP: usize = 10;

/// How the acceptor reaches a worker.
pub struct WorkerHandle {
    pub mailbox: Arc<Mailbox>,
}

/// Start worker `index`; returns its handle and its thread.
pub fn spawn(
    index: usize,
    srv: Arc<Server>,
) -> std::io::Result<(WorkerHandle, std::thread::JoinHandle<()>)> {
    let poll = Poll::new()?;
    let mailbox = Arc::new(Mailbox::new(poll.registry(), WAKE)?);
    srv.clients.add_worker(mailbox.clone());
    let mb = mailbox.clone();
    let thread = std::thread::Builder::new()
        .name(format!("skein-worker-{index}"))
        .spawn(move || Worker::new(index, srv, poll, mb).run())?;
    Ok((WorkerHandle { mailbox }, thread))
}

/// Connections by token: a vector with a free list (tokens are reused).
#[derive(Default)]
struct Slots {
    slots: Vec<Option<Conn>>,
    free: Vec<usize>,
    len: usize,
}

impl Slots {
    fn insert(&mut self, c: Conn) -> usize {
        self.len += 1;
        match self.free.pop() {
            Some(t) => {
                self.slots[t] = Some(c);
                t
            }
            None => {
                self.slots.push(Some(c));
                self.slots.len() - 1
            }
        }
    }

    /// The token the next insert will use.
    fn next_token(&self) -> usize {
        self.free.last().copied().unwrap_or(self.slots.len())
    }

    fn get(&self, t: usize) -> Option<&Conn> {
        self.slots.get(t).and_then(Option::as_ref)
    }

    fn get_mut(&mut self, t: usize) -> Option<&mut Conn> {
        self.slots.get_mut(t).and_then(Option::as_mut)
    }

    fn remove(&mut self, t: usize) -> Option<Conn> {
        let c = self.slots.get_mut(t)?.take()?;
        self.free.push(t);
        self.len -= 1;
        Some(c)
    }

    /// Number of slots (live or free): tokens are below it.
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn tokens(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&t| self.slots[t].is_some())
            .collect()
    }
}

struct Worker {
    index: usize,
    srv: Arc<Server>,
    poll: Poll,
    mailbox: Arc<Mailbox>,
    conns: Slots,
    /// The next slot the sweep in `tick` looks at.
    sweep_at: usize,
    /// Buffers lent to the connection being serviced.
    spare: Spare,
    /// Serviced again next iteration.
    again: Vec<usize>,
    /// Waiting for CLIENT PAUSE to end, and the pause generation last checked.
    paused: Vec<usize>,
    paused_gen: u64,
    iteration: u64,
    inbox_tokens: Vec<usize>,
    inbox_conns: Vec<NewConn>,
    /// Deadlines of blocked clients: (ms, token, client id), earliest first. An entry
    /// whose client was served earlier stays until it is due or pruned.
    timers: BinaryHeap<Reverse<(i64, usize, u64)>>,
    /// Prune `timers` of such entries when it grows past this.
    prune_timers_at: usize,
    /// Connections whose replies wait for the AOF (see `After::AwaitAof`).
    aof_wait: Vec<usize>,
    /// Connections whose replies wait for the end of the iteration (`After::Flush`).
    to_flush: Vec<usize>,
}

impl Worker {
    fn new(index: usize, srv: Arc<Server>, poll: Poll, mailbox: Arc<Mailbox>) -> Worker {
        Worker {
            index,
            srv,
            poll,
            mailbox,
            conns: Slots::default(),
            sweep_at: 0,
            spare: Spare::default(),
            again: Vec::new(),
            paused: Vec::new(),
            paused_gen: 0,
            iteration: 0,
            inbox_tokens: Vec::new(),
            inbox_conns: Vec::new(),
            timers: BinaryHeap::new(),
            prune_timers_at: MIN_TIMER_PRUNE,
            aof_wait: Vec::new(),
            to_flush: Vec::new(),
        }
    }

    /// How long the next poll may sleep.
    fn poll_timeout(&self) -> Duration {
        if !self.again.is_empty() {
            return Duration::ZERO;
        }
        if let Some(Reverse((at, _, _))) = self.timers.peek() {
            let left = (at - engine::wall_ms()).clamp(0, TICK.as_millis() as i64);
            return Duration::from_millis(left as u64);
        }
        if !self.paused.is_empty() {
            let left = self.srv.clients.pause.until_ms() - engine::wall_ms();
            return Duration::from_millis(left.clamp(1, TICK.as_millis() as i64) as u64);
        }
        TICK
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut last_tick = Instant::now();
        let srv = self.srv.clone();
        let load = &srv.stats.workers[self.index];
        load.cpu_clock
            .store(crate::threadload::current_thread_clock(), Relaxed);
        loop {
            let again = std::mem::take(&mut self.again);
            let timeout = if again.is_empty() {
                self.poll_timeout()
            } else {
                Duration::ZERO
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    crate::log::warning(&format!("worker {} poll failed: {e}", self.index));
                    return;
                }
            }
            let woke = Instant::now();
            self.iteration += 1;
            for ev in events.iter() {
                if ev.token() == WAKE {
                    self.drain_mailbox();
                    continue;
                }
                let closed = ev.is_read_closed() || ev.is_error();
                let ready = Ready {
                    readable: ev.is_readable() || closed,
                    read_closed: closed,
                    ..Ready::default()
                };
                self.service(ev.token().0, ready);
            }
            for t in again {
                // Skip a connection its own event already serviced this iteration.
                if self
                    .conns
                    .get_mut(t)
                    .is_some_and(|c| c.serviced_at != self.iteration)
                {
                    self.service(
                        t,
                        Ready {
                            readable: true,
                            ..Ready::default()
                        },
                    );
                }
            }
            self.retry_paused();
            self.expire_blocked();
            self.answer_after_aof();
            self.flush_deferred();
            if self.srv.is_shutting_down() {
                self.close_all();
                return;
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.tick();
            }
            load.add_awake(woke);
        }
    }

    /// Connections whose replies waited for the AOF: bring it up to date once for all of
    /// them (group commit), then send their replies.
    fn answer_after_aof(&mut self) {
        while !self.aof_wait.is_empty() {
            crate::persist::aof::before_reply(&self.srv);
            for t in std::mem::take(&mut self.aof_wait) {
                self.service(
                    t,
                    Ready {
                        aof_done: true,
                        ..Ready::default()
                    },
                );
            }
        }
    }

    /// Write the replies of the iteration's connections (`After::Flush`), one after the
    /// other once every ready connection has run.
    fn flush_deferred(&mut self) {
        while !self.to_flush.is_empty() {
            for t in std::mem::take(&mut self.to_flush) {
                let Some(conn) = self.conns.get_mut(t) else {
                    continue;
                };
                if let Some(after) = conn.flush_deferred(&self.srv, self.index, &mut self.spare) {
                    self.handle(t, after);
                }
            }
        }
    }

    fn drain_mailbox(&mut self) {
        let mut tokens = std::mem::take(&mut self.inbox_tokens);
        let mut conns = std::mem::take(&mut self.inbox_conns);
        self.mailbox.drain(&mut tokens, &mut conns);
        for nc in conns.drain(..) {
            self.accept(nc);
        }
        for t in tokens.drain(..) {
            self.service(t, Ready::default());
        }
        self.inbox_tokens = tokens;
        self.inbox_conns = conns;
    }

    fn accept(&mut self, nc: NewConn) {
        let id = self.srv.next_client_id.fetch_add(1, Relaxed);
        let is_unix = matches!(nc.stream, Stream::Unix(_));
        let token = self.conns.next_token();
        let info = Arc::new(ClientInfo::new(
            id,
            ClientAddr {
                addr: nc.addr,
                laddr: nc.laddr,
                fd: nc.fd,
                is_unix,
            },
            self.index,
            token,
            self.mailbox.clone(),
        ));
        let mut state = ClientState::detached(id, 0, self.index, info.clone());
        state.authenticated = !self.srv.acl.auth_required();
        state.set_user(self.srv.acl.default.clone());
        let mut conn = Conn::new(nc.stream, state);
        // Registered once for both edges; never re-registered (see conn.rs).
        if self
            .poll
            .registry()
            .register(
                &mut conn.stream,
                Token(token),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            // Give back the count the acceptor took for it (see listener::dispatch).
            self.srv.stats.workers[self.index]
                .clients
                .fetch_sub(1, Relaxed);
            return;
        }
        self.srv.clients.add(info);
        // `clients` already counts it: the acceptor counted it when it picked this worker.
        self.srv.stats.workers[self.index]
            .connections
            .fetch_add(1, Relaxed);
        let t = self.conns.insert(conn);
        debug_assert_eq!(t, token);
    }

    fn service(&mut self, token: usize, ready: Ready) {
        engine::begin_batch();
        let iteration = self.iteration;
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        conn.serviced_at = iteration;
        let after = conn.on_ready(&self.srv, self.index, ready, &mut self.spare);
        self.handle(token, after);
    }

    /// Act on what servicing connection `token` asked for.
    fn handle(&mut self, token: usize, after: After) {
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        match after {
            After::Close => self.close(token),
            After::Flush { again } => {
                self.to_flush.push(token);
                if again {
                    self.again.push(token);
                }
            }
            After::AwaitAof { again } => {
                self.aof_wait.push(token);
                if again {
                    self.again.push(token);
                }
            }
            After::Keep {
                again,
                paused,
                block_deadline,
            } => {
                if again {
                    self.again.push(token);
                }
                if let Some(at) = block_deadline {
                    self.timers.push(Reverse((at, token, conn.state.id)));
                }
                if paused && !conn.in_paused_list {
                    conn.in_paused_list = true;
                    self.paused.push(token);
                }
                if self.timers.len() > self.prune_timers_at {
                    self.prune_timers();
                }
            }
        }
    }

    /// Drop the deadlines of clients no longer waiting on them (served before their
    /// timeout): clients blocking often with long timeouts would otherwise pile them up.
    /// Amortized: the next prune waits until the heap has doubled.
    fn prune_timers(&mut self) {
        let conns = &self.conns;
        self.timers.retain(|Reverse((at, token, id))| {
            conns
                .get(*token)
                .is_some_and(|c| c.state.id == *id && c.block_deadline() == Some(*at))
        });
        self.prune_timers_at = (self.timers.len() * 2).max(MIN_TIMER_PRUNE);
    }

    /// Blocked clients whose deadline passed get their timeout reply.
    fn expire_blocked(&mut self) {
        let now = engine::wall_ms();
        while let Some(&Reverse((at, token, id))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let fired = self
                .conns
                .get_mut(token)
                .filter(|c| c.state.id == id)
                .is_some_and(|c| c.block_timed_out(&self.srv, now));
            if fired {
                self.service(token, Ready::default());
            }
        }
    }

    /// Retry postponed commands once the pause ended or changed.
    fn retry_paused(&mut self) {
        if self.paused.is_empty() {
            return;
        }
        let pause = &self.srv.clients.pause;
        let generation = pause.generation();
        if generation == self.paused_gen && pause.current(engine::wall_ms()) != PauseKind::Off {
            return;
        }
        self.paused_gen = generation;
        for t in std::mem::take(&mut self.paused) {
            if let Some(c) = self.conns.get_mut(t) {
                c.in_paused_list = false;
                self.service(t, Ready::default());
            }
        }
    }

    fn close(&mut self, token: usize) {
        if let Some(mut conn) = self.conns.remove(token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            if let Stream::Tls(tls) = &mut conn.stream {
                tls.close_notify();
            }
            conn.forget_memory(&self.srv);
            conn.state.leave(&self.srv);
            let info = &conn.state.info;
            if info.is_monitor() {
                self.srv.clients.monitors.remove(info.id);
            }
            crate::pubsub::client_gone(&self.srv, info);
            crate::tracking::disable(&self.srv, info);
            self.srv.clients.remove(info.id);
            self.srv.stats.workers[self.index]
                .clients
                .fetch_sub(1, Relaxed);
            if conn.state.become_replica {
                self.hand_to_replication(conn);
            }
        }
    }

    /// PSYNC/SYNC's connection, its replies written and its bookkeeping done as for a
    /// closed one: a replica thread takes its socket over (`crate::repl::serve`).
    fn hand_to_replication(&self, conn: Conn) {
        let Some(srv) = self.srv.persist.server() else {
            return;
        };
        let ip = peer_ip(&conn.state.info.addr);
        let Conn {
            stream, mut state, ..
        } = conn;
        let req = std::mem::take(&mut state.replconf);
        // Replicas connect over TCP; a Unix socket just closes.
        if let Stream::Tcp(tcp) = stream {
            crate::repl::serve(srv, std::net::TcpStream::from(tcp), ip, req);
        }
    }

    /// Periodic work: idle timeouts and giving back idle buffers for a slice of the
    /// connections, CPU accounting.
    fn tick(&mut self) {
        let timeout_ms = self.srv.config.get_i64("timeout") * 1000;
        let now = engine::wall_ms();
        let slots = self.conns.capacity();
        for _ in 0..slots.div_ceil(TICKS_PER_SWEEP) {
            let t = self.sweep_at % slots;
            self.sweep_at = t + 1;
            let Some(c) = self.conns.get_mut(t) else {
                continue;
            };
            let info = &c.state.info;
            let idle = now - info.last_interaction_ms.load(Relaxed);
            // As in Redis, MONITOR (replica-like), pub/sub and postponed clients never time
            // out, nor a client whose command still runs (on the offload pool).
            let exempt = info.is_monitor()
                || info.has(flag::PUBSUB)
                || c.in_paused_list
                || c.state.offloaded.is_some();
            if timeout_ms > 0 && idle > timeout_ms && !exempt {
                self.close(t);
                continue;
            }
            if idle > TRIM_IDLE_MS {
                c.trim(&self.srv);
            }
        }
        let (u, s) = crate::stats::thread_cpu_us();
        let ws = &self.srv.stats.workers[self.index];
        ws.cpu_user_us.store(u, Relaxed);
        ws.cpu_sys_us.store(s, Relaxed);
    }

    /// Shutdown: deliver pending replies (best effort, bounded), then close everyone.
    fn close_all(&mut self) {
        // Replies about to leave show writes the AOF must hold first.
        crate::persist::aof::before_reply(&self.srv);
        let deadline = Instant::now() + Duration::from_secs(2);
        for t in self.conns.tokens() {
            if let Some(conn) = self.conns.get_mut(t) {
                while Instant::now() < deadline {
                    if !conn.flush(&self.srv, self.index) || !conn.has_unsent() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            self.close(t);
        }
    }
}

/// The IP of an `ip:port` peer address (IPv6 without its brackets).
fn peer_ip(addr: &str) -> String {
    match addr.rsplit_once(':') {
        Some((ip, _)) => ip.trim_matches(|c| c == '[' || c == ']').to_string(),
        None => addr.to_string(),
    }
}
