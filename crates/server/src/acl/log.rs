//! ACL LOG: the recent denials and failed authentications, newest first; an event like
//! one of the last ten within a minute counts into it instead of adding an entry
//! (Redis's addACLLogEntry).

use resp::ReplyBuf;
use std::collections::VecDeque;

/// Redis's ACL_LOG_GROUPING_MAX_TIME_DELTA.
const GROUPING_MS: i64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    /// A client's own command: inside MULTI or not.
    pub fn of(client: &crate::cmd::ClientState) -> Context {
        if client.in_multi() {
            Context::Multi
        } else {
            Context::Toplevel
        }
    }
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key or channel denied (the command name as sent, for AUTH).
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub ctime_ms: i64,
    /// CLIENT INFO of the client, as it was at the latest event.
    pub client_info: String,
}

impl Entry {
    fn same_event(&self, other: &Entry) -> bool {
        self.reason == other.reason
            && self.context == other.context
            && (self.ctime_ms - other.ctime_ms).abs() <= GROUPING_MS
            && self.object == other.object
            && self.username == other.username
    }
}

#[derive(Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    /// Record `e`, keeping at most `max_len` entries.
    pub fn add(&mut self, e: Entry, max_len: usize) {
        if let Some(i) = self.entries.iter().take(10).position(|x| x.same_event(&e)) {
            let mut old = self.entries.remove(i).expect("found");
            old.client_info = e.client_info;
            old.ctime_ms = e.ctime_ms;
            old.count += 1;
            self.entries.push_front(old);
            return;
        }
        self.entries.push_front(e);
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// ACL LOG [count]: the newest `count` entries.
    pub fn reply(&self, out: &mut ReplyBuf, count: usize, now_ms: i64) {
        let n = count.min(self.entries.len());
        out.array(n);
        for e in self.entries.iter().take(n) {
            out.map(7);
            out.bulk(b"count");
            out.int(e.count as i64);
            out.bulk(b"reason");
            out.bulk(match e.reason {
                Reason::Command => b"command",
                Reason::Key => b"key",
                Reason::Channel => b"channel",
                Reason::Auth => b"auth",
            });
            out.bulk(b"context");
            out.bulk(match e.context {
                Context::Toplevel => &b"toplevel"[..],
                Context::Multi => b"multi",
                Context::Lua => b"lua",
            });
            out.bulk(b"object");
            out.bulk(&e.object);
            out.bulk(b"username");
            out.bulk(&e.username);
            out.bulk(b"age-seconds");
            out.double((now_ms - e.ctime_ms) as f64 / 1000.0);
            out.bulk(b"client-info");
            out.bulk(e.client_info.as_bytes());
        }
    }
}
