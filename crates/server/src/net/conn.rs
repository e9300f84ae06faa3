//! One client connection on its worker: read, parse, execute, write.
//!
//! The socket is registered once for readable and writable edges (mio is edge-triggered)
//! and never re-registered. Whatever an edge does not finish is remembered here and
//! reported to the worker in [`After`]:
//! - input left unread because of the read budget, or unprocessed because of output
//!   backpressure that has since drained: `again` (the worker services it next loop);
//! - a command postponed by CLIENT PAUSE: `paused` (the worker retries it when the pause
//!   changes or ends);
//! - output the socket did not take: the next writable edge.
//!
//! Between services an idle connection holds no buffers: the worker lends them
//! (`lend::Spare`) and takes them back once they are empty.

use super::lend::{Spare, KEEP, PART_KEEP, READ_CHUNK};
use super::stream::Stream;
use crate::clients::flag;
use crate::cmd::{self, ClientState, ReplyMode};
use crate::server::Server;
use resp::{Limits, Parsed, ReplyBuf, RequestParser};
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// A reply buffer this big is freed once written, not kept.
const OUT_FREE: usize = 1024 * 1024;
/// Most bytes read from one connection per loop iteration (then it yields to others).
const READ_BUDGET: usize = 4 * 1024 * 1024;
/// Past this much unsent output the connection stops reading requests until the client
/// drains it: a client that never reads cannot grow the server's memory without bound.
pub const OUTPUT_BACKPRESSURE: usize = 64 * 1024 * 1024;
/// A MONITOR client cannot be throttled (others produce its output): past this much
/// unsent output it is disconnected.
pub const MONITOR_OUTPUT_MAX: usize = 256 * 1024 * 1024;

/// What the poller reported.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ready {
    pub readable: bool,
    /// The peer shut down its side (or the socket failed): read to the end.
    pub read_closed: bool,
    /// The worker has just brought the AOF up to date for the replies waiting on it.
    pub aof_done: bool,
}

/// What the worker should do with the connection after servicing it.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Keep {
        /// Service again next loop iteration (input may be waiting).
        again: bool,
        /// A command waits for CLIENT PAUSE to end.
        paused: bool,
        /// The client has just blocked (BLPOP...) until this deadline (ms).
        block_deadline: Option<i64>,
    },
    /// Replies wait until the AOF holds the writes made so far: the worker brings it up
    /// to date once for every such connection of its loop iteration (one write, and with
    /// `appendfsync always` one fsync, for all of them), then services them again.
    AwaitAof {
        again: bool,
    },
    /// Replies wait until the worker has served every connection ready in its loop
    /// iteration (`Conn::flush_deferred`), as Redis writes in beforeSleep: a client
    /// reading many connections is woken once for a burst of replies rather than once
    /// per reply, which on loopback costs the server (the waking happens in its send).
    Flush {
        again: bool,
    },
    Close,
}

/// Why command processing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Every complete command ran.
    Drained,
    Backpressure,
    Paused,
    /// A blocking command waits for data.
    Blocked,
    /// A heavy command runs on the background pool (`crate::offload`).
    Offloaded,
    Closing,
}

pub struct Conn {
    pub stream: Stream,
    /// Read buffer: bytes `rstart..rend` are unparsed input; the rest is free room.
    /// Empty while the connection has no unparsed input (see `lend`).
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    parser: RequestParser,
    pub out: ReplyBuf,
    /// Bytes of `out` already written.
    wpos: usize,
    pub state: ClientState,
    /// Peer closed its side (or a read failed).
    eof: bool,
    /// Reading was skipped because of output backpressure.
    read_blocked: bool,
    /// Bookkeeping for the worker.
    pub in_paused_list: bool,
    /// The worker has this connection's block deadline in its timers.
    timer_set: bool,
    pub serviced_at: u64,
    /// Replies wait for the end of the worker's loop iteration: what the service that
    /// made them found (more input to read, why processing stopped).
    deferred: Option<(bool, Stop)>,
}

impl Conn {
    pub fn new(stream: Stream, state: ClientState) -> Conn {
        Conn {
            stream,
            rbuf: Vec::new(),
            rstart: 0,
            rend: 0,
            parser: RequestParser::new(),
            out: ReplyBuf::default(),
            wpos: 0,
            state,
            eof: false,
            read_blocked: false,
            in_paused_list: false,
            timer_set: false,
            serviced_at: 0,
            deferred: None,
        }
    }

    fn pending_out(&self) -> usize {
        self.out.out.len() - self.wpos
    }

    /// Replies not yet written (TLS records the socket has not taken are checked apart,
    /// where it matters: `finish`, `flush`, `has_unsent`).
    pub fn has_pending_output(&self) -> bool {
        self.pending_out() > 0
    }

    /// Anything not yet on the socket: replies, or TLS records made of them.
    pub fn has_unsent(&self) -> bool {
        self.has_pending_output() || self.stream.tls_pending()
    }

    /// Room to read into: move unparsed bytes to the front, grow when still short.
    fn make_room(&mut self, srv: &Server) {
        if self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        if self.rbuf.len() - self.rend < READ_CHUNK {
            let size = (self.rbuf.len() * 2).max(READ_CHUNK);
            self.rbuf.resize(size, 0);
            self.publish_memory(srv);
        }
    }

    /// Read what the socket has, up to the budget. Returns true if more may be waiting.
    fn fill(&mut self, srv: &Server, worker: usize, to_eof: bool, spare: &mut Spare) -> bool {
        // Holding nothing, or only a part of a request copied out: read into the spare.
        if self.rbuf.len() < READ_CHUNK {
            let mut b = spare.take_read();
            let held = self.rend - self.rstart;
            b[..held].copy_from_slice(&self.rbuf[self.rstart..self.rend]);
            self.rbuf = b;
            self.rstart = 0;
            self.rend = held;
        }
        let limit = query_limit(srv);
        let mut total = 0;
        let mut more = false;
        loop {
            if self.rend == self.rbuf.len() {
                self.make_room(srv);
            }
            let room = self.rbuf.len() - self.rend;
            match self.stream.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.rend += n;
                    total += n;
                    // A short read means the receive queue is drained: the next segment
                    // raises a new edge, so no read just to see WouldBlock. After the
                    // peer's FIN there is no further edge: read on to the end.
                    if n < room && !to_eof {
                        break;
                    }
                    if self.rend - self.rstart > limit {
                        break;
                    }
                    if total >= READ_BUDGET {
                        more = true;
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.eof = true;
                    break;
                }
            }
        }
        if total > 0 {
            srv.stats.workers[worker]
                .net_in
                .fetch_add(total as u64, Relaxed);
        }
        more
    }

    /// Must this command wait for CLIENT PAUSE to end? (Checked only while a pause is
    /// in force; commands that would be rejected anyway are not postponed, as in Redis.)
    fn must_wait(&self, srv: &Server, argv: &[&[u8]]) -> bool {
        let pause = &srv.clients.pause;
        if !pause.maybe_active() || self.state.info.is_monitor() {
            return false;
        }
        let kind = pause.current(engine::now_ms());
        if kind == crate::clients::PauseKind::Off {
            return false;
        }
        let Some(cmd) = srv.commands.lookup(argv) else {
            return false;
        };
        if cmd.handler.is_none()
            || !cmd.arity_ok(argv.len())
            || (self.state.needs_auth(srv) && !cmd.flags.no_auth)
        {
            return false;
        }
        kind == crate::clients::PauseKind::All || cmd::client::paused_by_write_pause(cmd)
    }

    /// Parse and run every complete command in the read buffer.
    fn process(&mut self, srv: &Server, ranges: &mut Vec<std::ops::Range<usize>>) -> Stop {
        if self.rstart == self.rend {
            return Stop::Drained;
        }
        let rbuf = std::mem::take(&mut self.rbuf);
        let end = self.rend;
        let mut pos = self.rstart;
        let mut stop = Stop::Drained;
        // Most commands have few arguments: no allocation for their slices.
        let mut argv: smallvec::SmallVec<[&[u8]; 8]> = smallvec::SmallVec::new();
        // As in Redis, the query buffer holds the whole batch while its commands run.
        self.state.info.qbuf.store((end - pos) as u64, Relaxed);
        while pos < end {
            if self.state.blocked.is_some() {
                stop = Stop::Blocked;
                break;
            }
            if self.state.offloaded.is_some() {
                stop = Stop::Offloaded;
                break;
            }
            if self.state.close_after_reply
                || srv.is_shutting_down()
                || self.state.info.kill.load(Relaxed)
            {
                stop = Stop::Closing;
                break;
            }
            if self.pending_out() > OUTPUT_BACKPRESSURE {
                stop = Stop::Backpressure;
                break;
            }
            let limits = Limits {
                max_bulk_len: srv.config.hot.proto_max_bulk_len.load(Relaxed) as u64,
                auth_required: self.state.needs_auth(srv),
            };
            let buf = &rbuf[pos..end];
            match self.parser.parse(buf, &limits, ranges) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Command { consumed }) => {
                    argv.clear();
                    // (A plain loop: `extend`'s reserve-then-fill costs more than the
                    // two or three pushes of a typical command.)
                    for r in ranges.iter() {
                        argv.push(buf.get(r.clone()).unwrap_or_default());
                    }
                    if !argv.is_empty() {
                        if self.must_wait(srv, &argv) {
                            stop = Stop::Paused;
                            break;
                        }
                        self.run(srv, &argv);
                    }
                    pos += consumed;
                }
                Ok(Parsed::Owned { args, consumed }) => {
                    let owned: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                    if !owned.is_empty() {
                        if self.must_wait(srv, &owned) {
                            stop = Stop::Paused;
                            break;
                        }
                        self.run(srv, &owned);
                    }
                    pos += consumed;
                }
                Err(e) => {
                    // Redis replies with the protocol error and closes the connection.
                    let msg = e.reply_bytes();
                    self.out.error_bytes(&msg);
                    srv.stats.total_error_replies.fetch_add(1, Relaxed);
                    srv.stats.workers[self.state.worker].count_error(&msg);
                    self.state.close_after_reply = true;
                    pos = end;
                }
            }
        }
        drop(argv);
        self.rbuf = rbuf;
        if pos == end {
            self.rstart = 0;
            self.rend = 0;
        } else {
            self.rstart = pos;
        }
        stop
    }

    fn run(&mut self, srv: &Server, argv: &[&[u8]]) {
        if self.state.info.is_monitor() {
            // Lines fed before this command go out before its reply.
            self.take_feed();
        }
        // Messages published before this command go out before its reply.
        crate::pubsub::deliver_pending(&self.state.info, &mut self.out);
        let mark = self.out.out.len();
        if self.state.reply_mode == ReplyMode::SkipNext {
            self.state.reply_mode = ReplyMode::Skipping;
        }
        crate::dispatch::execute(srv, &mut self.state, &mut self.out, argv);
        match self.state.reply_mode {
            ReplyMode::Off => self.out.out.truncate(mark),
            ReplyMode::Skipping => {
                self.out.out.truncate(mark);
                self.state.reply_mode = ReplyMode::On;
            }
            _ => {}
        }
    }

    /// Move MONITOR lines queued by other clients into the reply buffer.
    fn take_feed(&mut self) {
        let info = &self.state.info;
        // Clear first: a line queued after this point notifies the worker again.
        info.feed_notified.store(false, SeqCst);
        let mut q = info.feed.lock();
        if q.is_empty() {
            return;
        }
        if self.pending_out() == 0 {
            self.out.out.clear();
            self.wpos = 0;
            std::mem::swap(&mut self.out.out, &mut q);
        } else {
            self.out.out.extend_from_slice(&q);
            q.clear();
        }
    }

    /// Write pending output. Returns false if the socket failed.
    pub fn flush(&mut self, srv: &Server, worker: usize) -> bool {
        if matches!(self.stream, Stream::Tls(_)) {
            self.flush_tls(srv, worker)
        } else {
            self.write_out(srv, worker)
        }
    }

    /// TLS records left over first (a handshake message, replies the socket did not
    /// take), then the replies. Apart, so the plain path stays as it was.
    #[cold]
    #[inline(never)]
    fn flush_tls(&mut self, srv: &Server, worker: usize) -> bool {
        self.stream.send_tls_pending() && self.write_out(srv, worker)
    }

    #[inline(always)]
    fn write_out(&mut self, srv: &Server, worker: usize) -> bool {
        let mut written = 0;
        while self.wpos < self.out.out.len() {
            match self.stream.write(&self.out.out[self.wpos..]) {
                Ok(0) => return false,
                Ok(n) => {
                    self.wpos += n;
                    written += n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if written > 0 {
            srv.stats.workers[worker]
                .net_out
                .fetch_add(written as u64, Relaxed);
        }
        let info = &self.state.info;
        let len = self.out.out.len();
        if len as u64 > info.rbuf_peak.load(Relaxed) {
            info.rbuf_peak.store(len as u64, Relaxed);
        }
        if self.wpos == len {
            self.out.out.clear();
            self.wpos = 0;
            // Give back memory a huge reply left behind.
            if self.out.out.capacity() > OUT_FREE {
                self.out.out = Vec::new();
            }
        } else if self.wpos > OUT_FREE {
            self.out.out.drain(..self.wpos);
            self.wpos = 0;
        }
        info.obuf.store(self.pending_out() as u64, Relaxed);
        true
    }

    /// Borrow the worker's spare reply buffer when holding none.
    fn borrow(&mut self, spare: &mut Spare) {
        if self.out.out.capacity() == 0 {
            self.out.out = spare.take_out();
            self.wpos = 0;
        }
    }

    /// Hand back what holds nothing (small buffers only: big ones wait for `trim`), and
    /// publish the buffer figures CLIENT LIST shows.
    fn give_back(&mut self, srv: &Server, spare: &mut Spare) {
        let held = self.rend - self.rstart;
        if self.rbuf.len() >= READ_CHUNK && self.rbuf.len() <= KEEP && held <= PART_KEEP {
            // A small part of a request keeps only its own bytes.
            let part = self.rbuf[self.rstart..self.rend].to_vec();
            spare.give_read(std::mem::replace(&mut self.rbuf, part));
            self.rstart = 0;
            self.rend = held;
        }
        let cap = self.out.out.capacity();
        if !self.has_pending_output() && cap > 0 && cap <= KEEP {
            spare.give_out(std::mem::take(&mut self.out.out));
            self.wpos = 0;
        }
        self.publish_sizes(srv);
    }

    /// `tot_mem`, and its worker's sum of it (see `evict::clients`).
    fn publish_memory(&self, srv: &Server) {
        let info = &self.state.info;
        let sum = &srv.stats.workers[info.worker].clients_mem;
        info.set_conn_mem(self.memory() as u64, sum);
    }

    /// The connection leaves its worker: its memory leaves the worker's sum.
    pub fn forget_memory(&self, srv: &Server) {
        let info = &self.state.info;
        info.set_conn_mem(0, &srv.stats.workers[info.worker].clients_mem);
    }

    fn publish_sizes(&self, srv: &Server) {
        let info = &self.state.info;
        info.qbuf.store((self.rend - self.rstart) as u64, Relaxed);
        info.qbuf_free
            .store((self.rbuf.len() - self.rend) as u64, Relaxed);
        info.rbuf_size
            .store(self.out.out.capacity() as u64, Relaxed);
        self.publish_memory(srv);
    }

    /// Handle a readiness event, a mailbox notification or a retry, with the worker's
    /// spare buffers to borrow.
    pub fn on_ready(&mut self, srv: &Server, worker: usize, ev: Ready, spare: &mut Spare) -> After {
        self.borrow(spare);
        let after = self.service(srv, worker, ev, spare);
        if after != After::Close {
            self.give_back(srv, spare);
        }
        after
    }

    fn service(&mut self, srv: &Server, worker: usize, ev: Ready, spare: &mut Spare) -> After {
        if self.state.info.kill.load(Relaxed) {
            return After::Close;
        }
        if self.state.info.is_monitor() {
            self.take_feed();
        }
        self.take_offloaded_reply();
        crate::pubsub::deliver_pending(&self.state.info, &mut self.out);
        self.take_blocked_reply();
        let mut read_more = false;
        if (ev.readable || self.read_blocked) && !self.eof && !self.state.close_after_reply {
            if self.pending_out() > OUTPUT_BACKPRESSURE {
                self.read_blocked = true;
            } else {
                self.read_blocked = false;
                read_more = self.fill(srv, worker, ev.read_closed, spare);
                if self.rend - self.rstart > query_limit(srv) {
                    // Redis closes such a client without a reply.
                    crate::log::warning(&format!(
                        "Closing client that reached max query buffer length: id={} addr={}",
                        self.state.id, self.state.info.addr
                    ));
                    return After::Close;
                }
            }
        }
        crate::tracking::bcast::begin_batch();
        let mut stop = self.process(srv, &mut spare.ranges);
        crate::tracking::bcast::end_batch(srv);
        if self.state.blocked.is_some() {
            stop = Stop::Blocked;
        } else if self.state.offloaded.is_some() {
            stop = Stop::Offloaded;
        }
        if self.has_pending_output() && !crate::persist::aof::covered(srv) {
            // The AOF must hold every write these replies may show (fsynced with
            // `always`) before they leave.
            if !ev.aof_done {
                return After::AwaitAof {
                    again: read_more && !self.eof,
                };
            }
            crate::persist::aof::before_reply(srv);
        }
        if !ev.aof_done && self.has_pending_output() {
            self.deferred = Some((read_more, stop));
            return After::Flush {
                again: read_more && !self.eof,
            };
        }
        self.deferred = None;
        self.finish(srv, worker, read_more, stop)
    }

    /// At the end of the worker's loop iteration: write the replies a service deferred
    /// (`After::Flush`) and decide what comes next. `None`: nothing was deferred (or a
    /// later service of the same iteration already wrote it).
    pub fn flush_deferred(
        &mut self,
        srv: &Server,
        worker: usize,
        spare: &mut Spare,
    ) -> Option<After> {
        let (read_more, stop) = self.deferred.take()?;
        let after = self.finish(srv, worker, read_more, stop);
        if after != After::Close {
            self.give_back(srv, spare);
        }
        Some(after)
    }

    /// Write the replies, then what the service found decides what comes next.
    fn finish(&mut self, srv: &Server, worker: usize, read_more: bool, stop: Stop) -> After {
        if !self.flush(srv, worker) {
            return After::Close;
        }
        let pending = self.pending_out();
        let tls_held = self.stream.tls_pending();
        if crate::outbuf::reached(srv, &self.state.info, pending) {
            crate::outbuf::log_close(&self.state.info);
            return After::Close;
        }
        if pending > MONITOR_OUTPUT_MAX && self.state.info.is_monitor() {
            return After::Close;
        }
        // The client drained its replies: run what is queued, read what waits.
        let resume =
            pending <= OUTPUT_BACKPRESSURE && (stop == Stop::Backpressure || self.read_blocked);
        let done = stop == Stop::Closing
            || self.state.close_after_reply
            || (self.eof && matches!(stop, Stop::Drained | Stop::Blocked));
        if done && pending == 0 && !tls_held {
            return After::Close;
        }
        // Only these bits change here, atomically: other threads set others (a broken
        // redirect, leaving the registry) at any time.
        let (mut set, mut clear) = (0, 0);
        for (bit, on) in [
            (flag::WANT_WRITE, pending > 0 || tls_held),
            (flag::NO_READ, self.read_blocked || self.eof),
            (flag::BLOCKED, matches!(stop, Stop::Paused | Stop::Blocked)),
            (flag::CLOSE_AFTER_REPLY, self.state.close_after_reply),
        ] {
            if on {
                set |= bit;
            } else {
                clear |= bit;
            }
        }
        let old = self.state.info.flags.load(Relaxed);
        if old & set != set {
            self.state.info.flags.fetch_or(set, Relaxed);
        }
        if old & clear != 0 {
            self.state.info.flags.fetch_and(!clear, Relaxed);
        }
        let mut block_deadline = None;
        if let Some(w) = &self.state.blocked {
            if !self.timer_set && w.deadline_ms > 0 {
                self.timer_set = true;
                block_deadline = Some(w.deadline_ms);
            }
        }
        After::Keep {
            again: (read_more && !self.eof) || resume,
            paused: stop == Stop::Paused,
            block_deadline,
        }
    }

    /// A blocking command's wait finished (served, timed out, unblocked): its reply goes
    /// out, and the commands behind it may run.
    fn take_blocked_reply(&mut self) {
        let Some(w) = &self.state.blocked else {
            return;
        };
        if let Some(reply) = w.take_reply() {
            self.out.raw(&reply);
            if w.close_after_reply.load(Relaxed) {
                self.state.close_after_reply = true;
            }
            self.state.blocked = None;
            self.timer_set = false;
        }
    }

    /// The reply of a command run on the background pool is back: it goes out, and the
    /// commands behind it may run.
    fn take_offloaded_reply(&mut self) {
        let Some(r) = &self.state.offloaded else {
            return;
        };
        if let Some(reply) = r.take() {
            self.out.raw(&reply);
            if r.close_after_reply.load(Relaxed) {
                self.state.close_after_reply = true;
            }
            // A write made on the pool counts for this client's next WAIT.
            self.state.wrote |= r.wrote();
            self.state.offloaded = None;
        }
    }

    /// The deadline of the wait this client is blocked in, if any.
    pub fn block_deadline(&self) -> Option<i64> {
        self.state
            .blocked
            .as_ref()
            .map(|w| w.deadline_ms)
            .filter(|&d| d > 0)
    }

    /// The worker's timer for this client's block fired.
    pub fn block_timed_out(&mut self, srv: &Server, now_ms: i64) -> bool {
        match &self.state.blocked {
            Some(w) if w.deadline_ms > 0 && w.deadline_ms <= now_ms => {
                srv.blocking.time_out(w);
                true
            }
            _ => false,
        }
    }

    /// Free idle buffers (called for quiet connections).
    pub fn trim(&mut self, srv: &Server) {
        if self.rstart == self.rend && !self.rbuf.is_empty() {
            self.rbuf = Vec::new();
            self.rstart = 0;
            self.rend = 0;
        }
        if !self.has_pending_output() && self.out.out.capacity() > 0 {
            self.out.out = Vec::new();
            self.wpos = 0;
        }
        self.state.info.rbuf_peak.store(0, Relaxed);
        self.publish_sizes(srv);
    }

    /// Memory the connection holds (CLIENT LIST tot-mem, what maxmemory-clients weighs):
    /// its buffers, plus its transaction's queued commands and watched keys as Redis
    /// counts them (multi-mem).
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Conn>()
            + self.rbuf.capacity()
            + self.out.out.capacity()
            + self.state.info.multi_mem.load(Relaxed) as usize
    }
}

fn query_limit(srv: &Server) -> usize {
    srv.config.hot.client_query_buffer_limit.load(Relaxed) as usize
}
