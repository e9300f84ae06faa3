//! The debugging session's own state, on the thread that runs the debugged script (one
//! thread per session, so a thread-local): Redis's `ldb` struct. The line hook
//! ([`super::hook`]) and `redis.call`'s logging reach it here; it never holds a borrow
//! across a call into Lua.

use super::human;
use crate::script::busy::Busy;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// How often a prompt looks for a shutdown.
const SHUTDOWN_CHECK: Duration = Duration::from_millis(100);

/// Breakpoints at most (LDB_BREAKPOINTS_MAX).
pub const MAX_BREAKPOINTS: usize = 64;
/// Logged replies and values are cut at this length by default (LDB_MAX_LEN_DEFAULT).
const MAX_LEN_DEFAULT: usize = 256;

/// What the session thread sends to the client's worker.
pub enum Event {
    /// A batch of log lines (one RESP array of status replies) for the client; the
    /// session then waits for the client's next debugger command.
    Logs(Vec<u8>),
    /// The session ended: its last logs (ending with `<endsession>`) and the script's
    /// reply. The connection closes once they are written.
    End(Vec<u8>),
    /// No script was debugged after all (an EXEC that ran no EVAL: aborted, a WATCHed
    /// key changed, only EVALSHA queued): its reply alone; debugging stays on.
    NotStarted(Vec<u8>),
}

pub struct Session {
    /// The client's debugger commands; closed when the client disconnects.
    commands: Receiver<Vec<Vec<u8>>>,
    events: Sender<Event>,
    /// The client went away: the script runs on without stopping.
    gone: bool,
    logs: Vec<Vec<u8>>,
    pub step: bool,
    /// `redis.breakpoint()` was called: stop at the next line.
    pub luabp: bool,
    pub breakpoints: Vec<i32>,
    pub maxlen: usize,
    pub maxlen_hint_sent: bool,
    /// The script's source, split into lines.
    pub src: Vec<Vec<u8>>,
    pub current_line: i32,
    /// Since the last stop (the hook's timeout for a running script).
    pub since: Instant,
    /// busy-reply-threshold when the session started (5 s when 0).
    pub timeout_ms: u128,
    /// The server's busy-script list (the stopped script is listed there).
    pub busy: Arc<Busy>,
    /// A forked (YES) session: the script's writes are undone at its end.
    pub undo: Option<super::rollback::UndoLog>,
    /// The EVAL handler ran (a session in Redis's sense started).
    eval_seen: bool,
    /// Logs already closed into their own array (an earlier EVAL's `<endsession>` in
    /// the same EXEC), sent before the next ones.
    pending: Vec<u8>,
}

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
    /// A session runs on this thread (one load for `redis.call`'s checks).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// Does a session run on this thread?
#[inline]
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// Start this thread's session (its script's source comes with [`note_eval`]).
pub fn begin(
    commands: Receiver<Vec<Vec<u8>>>,
    events: Sender<Event>,
    timeout_ms: i64,
    busy: Arc<Busy>,
    forked: bool,
) {
    let s = Session {
        commands,
        events,
        gone: false,
        logs: Vec::new(),
        step: true,
        luabp: false,
        breakpoints: Vec::new(),
        maxlen: MAX_LEN_DEFAULT,
        maxlen_hint_sent: false,
        src: Vec::new(),
        current_line: 0,
        since: Instant::now(),
        timeout_ms: if timeout_ms > 0 {
            timeout_ms as u128
        } else {
            5000
        },
        busy,
        undo: forked.then(Default::default),
        eval_seen: false,
        pending: Vec::new(),
    };
    SESSION.with(|c| *c.borrow_mut() = Some(s));
    ACTIVE.with(|a| a.set(true));
}

/// End this thread's session: its last logs, `<endsession>` and the script's reply go to
/// the client.
pub fn end(reply: &[u8]) {
    ACTIVE.with(|a| a.set(false));
    let Some(mut s) = SESSION.with(|c| c.borrow_mut().take()) else {
        return;
    };
    if !s.eval_seen {
        let _ = s.events.send(Event::NotStarted(reply.to_vec()));
        return;
    }
    s.log(b"<endsession>".to_vec());
    let mut bytes = std::mem::take(&mut s.pending);
    bytes.extend_from_slice(&s.batch());
    bytes.extend_from_slice(reply);
    // (The client may be gone: nothing to tell.)
    let _ = s.events.send(Event::End(bytes));
}

/// The EVAL handler runs on this thread for script `body`: a session (when one is
/// active here) has started, in Redis's sense, whatever the script's fate.
#[inline]
pub fn note_eval(body: &[u8]) {
    if active() {
        with(|s| {
            if s.eval_seen {
                // A second EVAL in one EXEC: Redis ends the first one's session there.
                s.log(b"<endsession>".to_vec());
                let closed = s.batch();
                s.pending.extend_from_slice(&closed);
            }
            s.eval_seen = true;
            s.src = lines(body);
        });
    }
}

/// The script's lines, trailing line ends dropped (as ldbStartSession splits it).
fn lines(mut body: &[u8]) -> Vec<Vec<u8>> {
    while let [rest @ .., b'\n' | b'\r'] = body {
        body = rest;
    }
    // (sdssplitlen: no line at all for an empty body.)
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

/// Run `f` on this thread's session, if one is active.
pub fn with<R>(f: impl FnOnce(&mut Session) -> R) -> Option<R> {
    SESSION.with(|c| c.try_borrow_mut().ok()?.as_mut().map(f))
}

/// Is a session active on this thread and stepping (Redis's ldbIsEnabled)?
pub fn logging() -> bool {
    with(|s| s.step).unwrap_or(false)
}

/// `redis.call`'s command, logged while stepping: `<redis> cmd args...` (10 at most).
#[inline]
pub fn log_command(argv: &[&[u8]]) {
    if active() {
        log_command_now(argv);
    }
}

fn log_command_now(argv: &[&[u8]]) {
    with(|s| {
        if !s.step {
            return;
        }
        let mut line = b"<redis>".to_vec();
        for (j, a) in argv.iter().enumerate() {
            if j == 10 {
                line.extend_from_slice(format!(" ... ({} more)", argv.len() - j - 1).as_bytes());
                break;
            }
            line.push(b' ');
            line.extend_from_slice(a);
        }
        s.log(line);
    });
}

/// `redis.call`'s reply, logged while stepping.
#[inline]
pub fn log_reply(reply: &[u8]) {
    if active() {
        log_reply_now(reply);
    }
}

fn log_reply_now(reply: &[u8]) {
    with(|s| {
        if s.step {
            if reply.first() == Some(&b'-') {
                // (Redis logs an error reply as it turns it into an error table.)
                let end = reply
                    .iter()
                    .position(|&c| c == b'\r')
                    .unwrap_or(reply.len());
                s.log_error(&reply[..end]);
            }
            let mut line = b"<reply> ".to_vec();
            human::reply(&mut line, reply, 0);
            s.log_with_maxlen(line);
        }
    });
}

/// An error `redis.call` fails with before the command runs, logged while stepping.
#[inline]
pub fn log_error(msg: &[u8]) {
    if active() {
        log_error_now(msg);
    }
}

fn log_error_now(msg: &[u8]) {
    with(|s| {
        if s.step {
            s.log_error(msg);
        }
    });
}

/// What the client asked for next.
pub enum Next {
    Command(Vec<Vec<u8>>),
    /// The client is gone (or was already).
    Gone,
}

impl Session {
    /// An `<error> ...` line.
    fn log_error(&mut self, msg: &[u8]) {
        let mut line = b"<error> ".to_vec();
        line.extend_from_slice(msg);
        self.log(line);
    }

    pub fn log(&mut self, line: Vec<u8>) {
        self.logs.push(line);
    }

    /// ldbLogWithMaxLen: cut past `maxlen`, with a hint the first time.
    pub fn log_with_maxlen(&mut self, mut line: Vec<u8>) {
        let trimmed = self.maxlen != 0 && line.len() > self.maxlen;
        if trimmed {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
        }
        self.log(line);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log(
                b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.".to_vec(),
            );
        }
    }

    /// The logs so far as one RESP array of status replies (CR and LF as spaces).
    fn batch(&mut self) -> Vec<u8> {
        let mut out = format!("*{}\r\n", self.logs.len()).into_bytes();
        for mut l in self.logs.drain(..) {
            for c in l.iter_mut() {
                if *c == b'\r' || *c == b'\n' {
                    *c = b' ';
                }
            }
            out.push(b'+');
            out.extend_from_slice(&l);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// Send the logs to the client (ldbSendLogs).
    pub fn send_logs(&mut self) {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(&self.batch());
        if !self.gone && self.events.send(Event::Logs(bytes)).is_err() {
            self.gone = true;
        }
    }

    /// Wait for the client's next debugger command. A shutdown (a signal waiting for
    /// busy scripts, SHUTDOWN NOSAVE) ends the wait as a disconnect does: the script
    /// runs on without stopping.
    pub fn next_command(&mut self) -> Next {
        while !self.gone {
            match self.commands.recv_timeout(SHUTDOWN_CHECK) {
                Ok(argv) => return Next::Command(argv),
                Err(RecvTimeoutError::Timeout) => {
                    if crate::persist::shutdown::pending() || self.busy.shutdown.load(Relaxed) {
                        self.gone = true;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => self.gone = true,
            }
        }
        Next::Gone
    }

    /// The source line `line` (1-based).
    pub fn source_line(&self, line: i32) -> &[u8] {
        usize::try_from(line - 1)
            .ok()
            .and_then(|i| self.src.get(i))
            .map_or(b"<out of range source code line>", |l| l.as_slice())
    }

    pub fn is_breakpoint(&self, line: i32) -> bool {
        self.breakpoints.contains(&line)
    }

    /// Log line `lnum` with its markers: `->` current, `#` breakpoint.
    pub fn log_source_line(&mut self, lnum: i32) {
        let bp = self.is_breakpoint(lnum);
        let prefix = match (self.current_line == lnum, bp) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut line = format!("{prefix}{lnum:<3} ").into_bytes();
        line.extend_from_slice(self.source_line(lnum));
        self.log(line);
    }

    /// ldbList: the whole source (`around` 0) or `context` lines around a line.
    pub fn list(&mut self, around: i32, context: i32) {
        for j in 1..=self.src.len() as i32 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j);
        }
    }
}
