//! One client connection on its worker: read, parse, execute, write.

use super::stream::Stream;
use crate::cmd::{self, ClientState, Ctx, ReplyMode};
use crate::server::Server;
use resp::{Limits, Parsed, ReplyBuf, RequestParser};
use std::io::{ErrorKind, Read, Write};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

/// Read size per read call.
const READ_CHUNK: usize = 16 * 1024;
/// Past this much unsent output the connection stops reading requests until the client
/// drains it: a client that never reads cannot grow the server's memory without bound.
pub const OUTPUT_BACKPRESSURE: usize = 64 * 1024 * 1024;

pub struct Conn {
    pub stream: Stream,
    rbuf: Vec<u8>,
    parser: RequestParser,
    pub out: ReplyBuf,
    /// Bytes of `out` already written.
    wpos: usize,
    pub state: ClientState,
    /// Peer closed its side (or a read failed).
    pub eof: bool,
    /// The interest currently registered with the poller.
    pub interest: Option<mio::Interest>,
}

/// What the worker should do with the connection after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    /// Keep it; `want_write` says whether output is pending; `want_read` false means
    /// the connection is held back by output backpressure.
    Keep {
        want_read: bool,
        want_write: bool,
    },
    Close,
}

impl Conn {
    pub fn new(stream: Stream, state: ClientState) -> Conn {
        Conn {
            stream,
            rbuf: Vec::new(),
            parser: RequestParser::new(),
            out: ReplyBuf::default(),
            wpos: 0,
            state,
            eof: false,
            interest: None,
        }
    }

    fn pending_out(&self) -> usize {
        self.out.out.len() - self.wpos
    }

    /// Read everything available; returns bytes read.
    fn fill(&mut self, srv: &Server) -> usize {
        let mut total = 0;
        loop {
            let len = self.rbuf.len();
            self.rbuf.resize(len + READ_CHUNK, 0);
            match self.stream.read(&mut self.rbuf[len..]) {
                Ok(0) => {
                    self.rbuf.truncate(len);
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.rbuf.truncate(len + n);
                    total += n;
                    // A short read means the socket's receive queue is drained: the next
                    // arriving segment raises a new edge, so no extra read is needed to
                    // see WouldBlock (this saves a syscall per request).
                    if n < READ_CHUNK {
                        break;
                    }
                    // Stop reading a client that floods us faster than we reply.
                    if self.rbuf.len() > query_limit(srv) {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.rbuf.truncate(len);
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    self.rbuf.truncate(len);
                }
                Err(_) => {
                    self.rbuf.truncate(len);
                    self.eof = true;
                    break;
                }
            }
        }
        total
    }

    /// Parse and run every complete command in the read buffer.
    fn process(&mut self, srv: &Server) {
        let limits = Limits {
            max_bulk_len: srv.config.hot.proto_max_bulk_len.load(Relaxed) as u64,
            auth_required: !self.state.authenticated,
        };
        let rbuf = std::mem::take(&mut self.rbuf);
        let mut pos = 0;
        let mut ranges: Vec<Range<usize>> = Vec::new();
        let mut argv: Vec<&[u8]> = Vec::new();
        while pos < rbuf.len() && !self.state.close_after_reply && !srv.is_shutting_down() {
            if self.pending_out() > OUTPUT_BACKPRESSURE {
                break;
            }
            let buf = &rbuf[pos..];
            match self.parser.parse(buf, &limits, &mut ranges) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Command { consumed }) => {
                    argv.clear();
                    argv.extend(ranges.iter().map(|r| &buf[r.clone()]));
                    if !argv.is_empty() {
                        self.run(srv, &argv);
                    }
                    pos += consumed;
                }
                Ok(Parsed::Owned { args, consumed }) => {
                    let owned: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                    if !owned.is_empty() {
                        self.run(srv, &owned);
                    }
                    pos += consumed;
                }
                Err(e) => {
                    self.out.error(&e.reply_text());
                    srv.stats.total_error_replies.fetch_add(1, Relaxed);
                    self.state.close_after_reply = true;
                    pos = rbuf.len();
                }
            }
        }
        let mut rbuf = rbuf;
        rbuf.drain(..pos);
        self.rbuf = rbuf;
        self.state.info.qbuf.store(self.rbuf.len() as u64, Relaxed);
    }

    fn run(&mut self, srv: &Server, argv: &[&[u8]]) {
        let mark = self.out.out.len();
        if self.state.reply_mode == ReplyMode::SkipNext {
            self.state.reply_mode = ReplyMode::Skipping;
        }
        let mut ctx = Ctx {
            srv,
            client: &mut self.state,
            out: &mut self.out,
        };
        cmd::execute(&mut ctx, argv);
        match self.state.reply_mode {
            ReplyMode::Off => self.out.out.truncate(mark),
            ReplyMode::Skipping => {
                self.out.out.truncate(mark);
                self.state.reply_mode = ReplyMode::On;
            }
            _ => {}
        }
    }

    /// Write pending output. Returns false if the socket failed.
    pub fn flush(&mut self, srv: &Server, worker: usize) -> bool {
        while self.wpos < self.out.out.len() {
            match self.stream.write(&self.out.out[self.wpos..]) {
                Ok(0) => return false,
                Ok(n) => {
                    self.wpos += n;
                    srv.stats.workers[worker]
                        .net_out
                        .fetch_add(n as u64, Relaxed);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if self.wpos == self.out.out.len() {
            self.out.out.clear();
            self.wpos = 0;
            // Give back memory a huge reply left behind.
            if self.out.out.capacity() > 1024 * 1024 {
                self.out.out.shrink_to(16 * 1024);
            }
        } else if self.wpos > 1024 * 1024 {
            self.out.out.drain(..self.wpos);
            self.wpos = 0;
        }
        self.state
            .info
            .obuf
            .store(self.pending_out() as u64, Relaxed);
        true
    }

    /// Handle a readiness event.
    pub fn on_ready(&mut self, srv: &Server, worker: usize, readable: bool) -> After {
        if readable && !self.eof && self.pending_out() <= OUTPUT_BACKPRESSURE {
            let n = self.fill(srv);
            srv.stats.workers[worker]
                .net_in
                .fetch_add(n as u64, Relaxed);
            if self.rbuf.len() > query_limit(srv) {
                // Redis closes such a client without a reply.
                return After::Close;
            }
        }
        self.process(srv);
        if !self.flush(srv, worker) {
            return After::Close;
        }
        let pending = self.pending_out();
        let limit = srv.config.hot.output_hard_limit.load(Relaxed);
        if limit > 0 && pending > limit as usize {
            return After::Close;
        }
        if (self.state.close_after_reply || self.eof) && pending == 0 {
            return After::Close;
        }
        if self.eof && !self.state.close_after_reply && pending > 0 {
            // Peer half-closed: still deliver what it asked for.
            return After::Keep {
                want_read: false,
                want_write: true,
            };
        }
        After::Keep {
            want_read: !self.state.close_after_reply && pending <= OUTPUT_BACKPRESSURE,
            want_write: pending > 0,
        }
    }

    pub fn has_pending_output(&self) -> bool {
        self.pending_out() > 0
    }
}

fn query_limit(srv: &Server) -> usize {
    srv.config.hot.client_query_buffer_limit.load(Relaxed) as usize
}
