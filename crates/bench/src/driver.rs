//! One load thread: a mio event loop driving many non-blocking connections, closed loop
//! (each connection keeps `pipeline` requests in flight) or open loop (a pacer releases
//! requests at a fixed rate into free connection slots).

use crate::conn::{error_text, Blocking, Sock, Target};
use crate::hist::LatencyHist;
use crate::pacer::Pacer;
use crate::resp::{self, Reply};
use crate::slot_clock::SlotClock;
use crate::workload::{ClientGen, ThreadKeys, Workload};
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How long a stopped thread waits for replies still in flight.
const DRAIN: Duration = Duration::from_secs(3);

/// Counters one command accumulates.
#[derive(Clone, Default)]
pub struct CmdStats {
    pub ops: u64,
    pub hits: u64,
    pub misses: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub hist: LatencyHist,
    /// Open loop: how late each request left while a connection slot was free for it
    /// (see [`SlotClock`]): the generator's own lateness.
    pub late_hist: LatencyHist,
    /// Open loop: latency less that lateness (what the server and waiting for a free
    /// connection cost).
    pub server_hist: LatencyHist,
}

impl CmdStats {
    pub fn add(&mut self, o: &CmdStats) {
        self.ops += o.ops;
        self.hits += o.hits;
        self.misses += o.misses;
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.hist.add(&o.hist);
        self.late_hist.add(&o.late_hist);
        self.server_hist.add(&o.server_hist);
    }
}

/// State shared between the load threads and the coordinator.
#[derive(Default)]
pub struct Shared {
    /// Stop sending; drain what is in flight.
    pub stop: AtomicBool,
    /// Replies count toward the result only while this is set (after warm-up, before stop).
    pub measuring: AtomicBool,
    /// For the progress line: replies and their latency sum, in all threads.
    pub ops: AtomicU64,
    pub lat_sum_us: AtomicU64,
}

pub struct ThreadResult {
    pub stats: Vec<CmdStats>,
    /// Requests due (open loop) that never left because no connection slot was free.
    pub unsent: u64,
    pub error: Option<String>,
}

enum MioSock {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
}

impl MioSock {
    fn from(s: Sock) -> io::Result<MioSock> {
        Ok(match s {
            Sock::Tcp(t) => {
                t.set_nonblocking(true)?;
                MioSock::Tcp(mio::net::TcpStream::from_std(t))
            }
            Sock::Unix(u) => {
                u.set_nonblocking(true)?;
                MioSock::Unix(mio::net::UnixStream::from_std(u))
            }
        })
    }

    fn register(&mut self, poll: &Poll, tok: Token) -> io::Result<()> {
        let i = Interest::READABLE | Interest::WRITABLE;
        match self {
            MioSock::Tcp(s) => poll.registry().register(s, tok, i),
            MioSock::Unix(s) => poll.registry().register(s, tok, i),
        }
    }

    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            MioSock::Tcp(s) => s.read(b),
            MioSock::Unix(s) => s.read(b),
        }
    }

    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            MioSock::Tcp(s) => s.write(b),
            MioSock::Unix(s) => s.write(b),
        }
    }
}

struct InFlight {
    cmd: u16,
    /// Latency is counted from here: the send (closed loop) or the due time (open loop).
    at: Instant,
    /// Open loop: the generator's lateness in sending it, microseconds.
    late_us: u64,
    bytes: u32,
}

struct Conn {
    sock: MioSock,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    inflight: VecDeque<InFlight>,
    gen: ClientGen,
    /// Closed loop: requests this client still sends.
    remaining: u64,
    dead: bool,
}

pub struct ThreadSpec {
    pub index: usize,
    pub workload: Arc<Workload>,
    pub target: Arc<Target>,
    pub db: u32,
    pub plan: Arc<Vec<u16>>,
    pub data: Arc<Vec<u8>>,
    pub shared: Arc<Shared>,
    /// Everyone waits here after connecting, so the clock starts together.
    pub go: Arc<Barrier>,
}

/// Connects this thread's clients, waits at the barrier, runs, returns its counters.
pub fn run_thread(spec: ThreadSpec) -> ThreadResult {
    let connected = connect_all(&spec);
    spec.go.wait();
    match connected {
        Err(e) => {
            spec.shared.stop.store(true, Relaxed);
            ThreadResult {
                stats: Vec::new(),
                unsent: 0,
                error: Some(e),
            }
        }
        Ok((poll, conns)) => Loop::new(&spec, poll, conns).run(),
    }
}

fn connect_all(spec: &ThreadSpec) -> Result<(Poll, Vec<Conn>), String> {
    let w = &spec.workload;
    let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
    let mut conns = Vec::with_capacity(w.clients);
    for c in 0..w.clients {
        let mut b = Blocking::connect(&spec.target)?;
        b.handshake(&spec.target, spec.db)?;
        if b.leftover() != 0 {
            return Err("unexpected data from the server after the handshake".into());
        }
        let mut sock = MioSock::from(b.sock).map_err(|e| format!("socket: {e}"))?;
        sock.register(&poll, Token(c))
            .map_err(|e| format!("epoll register: {e}"))?;
        conns.push(Conn {
            sock,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            rbuf: Vec::with_capacity(4096),
            inflight: VecDeque::with_capacity(w.pipeline),
            gen: ClientGen::new(w, spec.index * w.clients + c),
            remaining: w.requests.unwrap_or(u64::MAX),
            dead: false,
        });
    }
    Ok((poll, conns))
}

struct Loop<'a> {
    spec: &'a ThreadSpec,
    poll: Poll,
    conns: Vec<Conn>,
    tk: ThreadKeys,
    stats: Vec<CmdStats>,
    pacer: Option<Pacer>,
    /// Open loop: one entry per free request slot.
    free: VecDeque<usize>,
    /// Open loop: when no slot was free, to split a late send into the server's part and
    /// the generator's.
    slots: Option<SlotClock>,
    /// Open loop: wakes the event loop when the next request falls due (nanosecond
    /// precision; epoll's own timeout counts whole milliseconds).
    timer: Option<DueTimer>,
    dirty: Vec<usize>,
    error: Option<String>,
    /// Progress counters not yet published.
    ops: u64,
    lat_us: u64,
}

impl<'a> Loop<'a> {
    fn new(spec: &'a ThreadSpec, poll: Poll, conns: Vec<Conn>) -> Loop<'a> {
        let w = &spec.workload;
        let pacer = w.rate.map(|r| {
            let per_thread = r / w.threads as f64;
            let limit = w
                .requests
                .map(|n| n.saturating_mul(w.clients as u64))
                .unwrap_or(u64::MAX);
            // Spread the threads' first sends over one interval.
            let offset = Duration::from_secs_f64(spec.index as f64 / r);
            Pacer::new(Instant::now() + offset, per_thread, limit)
        });
        let mut free = VecDeque::new();
        let (mut timer, mut slots) = (None, None);
        if let Some(p) = &pacer {
            for _ in 0..w.pipeline {
                free.extend(0..conns.len());
            }
            timer = DueTimer::new(&poll);
            slots = Some(SlotClock::new(p.start()));
        }
        Loop {
            spec,
            poll,
            conns,
            tk: ThreadKeys::default(),
            stats: vec![CmdStats::default(); w.templates.len()],
            pacer,
            free,
            slots,
            timer,
            dirty: Vec::new(),
            error: None,
            ops: 0,
            lat_us: 0,
        }
    }

    fn send(&mut self, c: usize, at: Instant, late_us: u64) {
        let conn = &mut self.conns[c];
        let before = conn.wbuf.len();
        let spec = self.spec;
        let cmd = conn.gen.next_request(
            &spec.workload,
            &spec.plan,
            &spec.data,
            &mut self.tk,
            &mut conn.wbuf,
        );
        let bytes = (conn.wbuf.len() - before) as u32;
        conn.inflight.push_back(InFlight {
            cmd,
            at,
            late_us,
            bytes,
        });
        if before == conn.wpos {
            self.dirty.push(c);
        }
    }

    /// Closed loop: top a connection up to `pipeline` requests in flight.
    fn refill(&mut self, c: usize, now: Instant) {
        let pipeline = self.spec.workload.pipeline;
        while !self.conns[c].dead
            && self.conns[c].inflight.len() < pipeline
            && self.conns[c].remaining > 0
        {
            self.conns[c].remaining -= 1;
            self.send(c, now, 0);
        }
    }

    fn flush(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        while conn.wpos < conn.wbuf.len() {
            match conn.sock.write(&conn.wbuf[conn.wpos..]) {
                Ok(n) => conn.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(c, format!("write: {e}"));
                    return;
                }
            }
        }
        conn.wbuf.clear();
        conn.wpos = 0;
    }

    fn fail(&mut self, c: usize, why: String) {
        let conn = &mut self.conns[c];
        if !conn.dead {
            conn.dead = true;
            conn.inflight.clear();
            conn.remaining = 0;
            self.error.get_or_insert(why);
        }
    }

    /// Reads what is there and accounts every complete reply.
    fn readable(&mut self, c: usize, scratch: &mut [u8], measuring: bool) {
        loop {
            match self.conns[c].sock.read(scratch) {
                Ok(0) => {
                    self.fail(c, "the server closed a connection".into());
                    return;
                }
                Ok(n) => self.conns[c].rbuf.extend_from_slice(&scratch[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(c, format!("read: {e}"));
                    return;
                }
            }
        }
        let now = Instant::now();
        let mut pos = 0;
        loop {
            let conn = &mut self.conns[c];
            let (end, kind) = match resp::parse(&conn.rbuf, pos) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    self.fail(c, format!("protocol error: {e}"));
                    return;
                }
            };
            let raw = pos..end;
            pos = end;
            if kind == Reply::Push {
                continue;
            }
            let Some(f) = conn.inflight.pop_front() else {
                self.fail(c, "a reply came with no request pending".into());
                return;
            };
            let us = now.saturating_duration_since(f.at).as_micros() as u64;
            self.ops += 1;
            self.lat_us += us;
            if measuring {
                let t = &self.spec.workload.templates[f.cmd as usize];
                let s = &mut self.stats[f.cmd as usize];
                s.ops += 1;
                s.bytes_in += (raw.end - raw.start) as u64;
                s.bytes_out += f.bytes as u64;
                s.hist.record_us(us);
                if self.pacer.is_some() {
                    s.late_hist.record_us(f.late_us);
                    s.server_hist.record_us(us.saturating_sub(f.late_us));
                }
                match kind {
                    Reply::Error => {
                        s.errors += 1;
                        if s.first_error.is_none() {
                            s.first_error = Some(error_text(&conn.rbuf[raw]));
                        }
                    }
                    Reply::Null if !t.is_write => s.misses += 1,
                    _ if !t.is_write => s.hits += 1,
                    _ => {}
                }
            }
            if let Some(sc) = &mut self.slots {
                if self.free.is_empty() {
                    sc.set_empty(now, false);
                }
                self.free.push_back(c);
            }
        }
        self.conns[c].rbuf.drain(..pos);
    }

    fn busy(&self) -> bool {
        self.conns.iter().any(|c| !c.dead && !c.inflight.is_empty())
    }

    fn publish(&mut self) {
        let sh = &self.spec.shared;
        sh.ops.fetch_add(self.ops, Relaxed);
        sh.lat_sum_us.fetch_add(self.lat_us, Relaxed);
        self.ops = 0;
        self.lat_us = 0;
    }

    fn run(mut self) -> ThreadResult {
        let shared = self.spec.shared.clone();
        let mut events = Events::with_capacity(1024);
        let mut scratch = vec![0u8; 64 * 1024];
        let start = Instant::now();
        if self.pacer.is_none() {
            for c in 0..self.conns.len() {
                self.refill(c, start);
            }
        }
        let mut stopped_at: Option<Instant> = None;
        let mut last_publish = start;
        loop {
            for c in std::mem::take(&mut self.dirty) {
                self.flush(c);
            }
            let stop = shared.stop.load(Relaxed);
            let now = Instant::now();
            if stop && stopped_at.is_none() {
                stopped_at = Some(now);
            }
            let sending = !stop
                && match &self.pacer {
                    Some(p) => !p.finished(),
                    None => self.conns.iter().any(|c| !c.dead && c.remaining > 0),
                };
            if !sending && !self.busy() {
                break;
            }
            if stopped_at.is_some_and(|t| now - t > DRAIN) {
                break;
            }
            if self.conns.iter().all(|c| c.dead) {
                break;
            }
            let timeout = self.timeout(now, sending);
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.error.get_or_insert(format!("epoll: {e}"));
                    break;
                }
            }
            let measuring = shared.measuring.load(Relaxed);
            for ev in events.iter() {
                if ev.token() == TIMER {
                    if let Some(t) = &self.timer {
                        t.clear();
                    }
                    continue;
                }
                let c = ev.token().0;
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.readable(c, &mut scratch, measuring);
                    if self.pacer.is_none() && !shared.stop.load(Relaxed) {
                        self.refill(c, Instant::now());
                    }
                }
                if ev.is_writable() && !self.conns[c].dead {
                    self.flush(c);
                }
            }
            let now = Instant::now();
            if sending {
                self.release_due(now);
            }
            if now - last_publish > Duration::from_millis(50) {
                self.publish();
                last_publish = now;
            }
        }
        self.publish();
        let unsent = self
            .pacer
            .as_ref()
            .map(|p| p.backlog(Instant::now()))
            .unwrap_or(0);
        ThreadResult {
            stats: self.stats,
            unsent: if shared.stop.load(Relaxed) { 0 } else { unsent },
            error: self.error,
        }
    }

    /// How long to wait in poll: a tick to notice `stop`, or nothing when a request is due
    /// now; the timer wakes the loop for the next paced send.
    fn timeout(&self, now: Instant, sending: bool) -> Duration {
        const TICK: Duration = Duration::from_millis(50);
        match (&self.pacer, sending) {
            (Some(p), true) if !self.free.is_empty() => match p.next_at() {
                Some(at) if at > now => match &self.timer {
                    Some(t) if t.arm(at - now) => TICK,
                    // No timer: epoll's millisecond timeout, rounded down; under 1 ms, look.
                    _ => Duration::from_millis((at - now).as_millis() as u64).min(TICK),
                },
                _ => Duration::ZERO,
            },
            _ => TICK,
        }
    }

    /// Open loop: hand every due request to a free slot, recording how late it leaves.
    fn release_due(&mut self, now: Instant) {
        let (Some(p), Some(sc)) = (self.pacer.as_mut(), self.slots.as_mut()) else {
            return;
        };
        let mut sent = Vec::new();
        while !self.free.is_empty() {
            let Some(due) = p.take(now) else {
                break;
            };
            let c = self.free.pop_front().unwrap_or_default();
            if self.free.is_empty() {
                sc.set_empty(now, true);
            }
            let late = sc.lateness(due, now).as_micros() as u64;
            sent.push((c, due, late));
        }
        if let Some(next) = p.next_at() {
            sc.prune(next);
        }
        for (c, due, late) in sent {
            if !self.conns[c].dead {
                self.send(c, due, late);
            }
        }
    }
}

const TIMER: Token = Token(usize::MAX);

/// A timerfd in the thread's poll set: wakes it at a due time with nanosecond precision.
struct DueTimer {
    fd: rustix::fd::OwnedFd,
}

impl DueTimer {
    /// None if the kernel gives no timerfd (the loop then falls back to epoll's timeout).
    fn new(poll: &Poll) -> Option<DueTimer> {
        use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .ok()?;
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        poll.registry()
            .register(&mut mio::unix::SourceFd(&raw), TIMER, Interest::READABLE)
            .ok()?;
        Some(DueTimer { fd })
    }

    /// Fires once, `after` from now; false if the timer could not be set.
    fn arm(&self, after: Duration) -> bool {
        use rustix::time::{timerfd_settime, Itimerspec, TimerfdTimerFlags, Timespec};
        let at = Timespec {
            tv_sec: after.as_secs() as i64,
            // A zero it_value disarms: wait at least a nanosecond.
            tv_nsec: i64::from(after.subsec_nanos()).max(i64::from(after.as_secs() == 0)),
        };
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: at,
        };
        timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec).is_ok()
    }

    /// Reads the expiry count so the fd stops being readable.
    fn clear(&self) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut b);
    }
}
