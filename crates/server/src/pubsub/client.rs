//! One client's pub/sub state: what it is subscribed to, and its inbox of messages
//! published by other threads, waiting for its worker.
//!
//! Publishers push shared [`Delivery`] values (one allocation per published message, a
//! reference count per subscriber); the client's worker encodes them in the client's
//! protocol when it moves them into the reply buffer, so a message takes the shape the
//! client's protocol has at delivery time, as in Redis.

use parking_lot::Mutex;
use resp::ReplyBuf;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

/// A published message, shared by every subscriber that receives it.
pub struct Published {
    /// The channel and the payload as two bulk strings, encoded once for every delivery
    /// (they are the same in RESP2 and RESP3).
    tail: Box<[u8]>,
    /// SPUBLISH: delivered as `smessage`.
    shard: bool,
}

impl Published {
    pub fn new(channel: &[u8], payload: &[u8], shard: bool) -> Published {
        let mut b = ReplyBuf::default();
        b.out.reserve(channel.len() + payload.len() + 32);
        b.bulk(channel);
        b.bulk(payload);
        Published {
            tail: b.out.into_boxed_slice(),
            shard,
        }
    }
}

/// One entry of a client's inbox.
pub enum Delivery {
    /// `message` / `smessage` for a channel subscription.
    Message(Arc<Published>),
    /// `pmessage` for a pattern subscription (the pattern that matched).
    Pattern(Arc<[u8]>, Arc<Published>),
    /// Replies encoded already: confirmations of a client whose replies are silenced by
    /// CLIENT REPLY OFF/SKIP (pushes are never silenced in Redis).
    Raw(Vec<u8>),
    /// Bytes encoded once for several receivers (client-side caching's invalidations).
    Shared(Arc<[u8]>),
}

impl Delivery {
    /// About the bytes this entry takes once encoded (for the output buffer limits).
    pub fn size(&self) -> usize {
        match self {
            Delivery::Message(p) => p.tail.len() + 20,
            Delivery::Pattern(pat, p) => pat.len() + p.tail.len() + 36,
            Delivery::Raw(b) => b.len(),
            Delivery::Shared(b) => b.len(),
        }
    }

    /// Append the entry to `out` in its protocol (a RESP3 push, a RESP2 array).
    pub fn encode(&self, out: &mut ReplyBuf) {
        match self {
            Delivery::Message(p) => {
                out.push(3);
                out.raw(if p.shard {
                    b"$8\r\nsmessage\r\n"
                } else {
                    b"$7\r\nmessage\r\n"
                });
                out.raw(&p.tail);
            }
            Delivery::Pattern(pat, p) => {
                out.push(4);
                out.raw(b"$8\r\npmessage\r\n");
                out.bulk(pat);
                out.raw(&p.tail);
            }
            Delivery::Raw(b) => out.raw(b),
            Delivery::Shared(b) => out.raw(b),
        }
    }
}

/// What a client is subscribed to. Only the client's own commands (and its worker, when
/// it goes away) change it; CLIENT LIST reads the counts.
#[derive(Default)]
pub struct Subscriptions {
    pub channels: HashSet<Arc<[u8]>>,
    /// In subscription order, as Redis's list (PUNSUBSCRIBE with no argument follows it).
    pub patterns: Vec<Arc<[u8]>>,
    pub shard: HashSet<Arc<[u8]>>,
}

impl Subscriptions {
    /// Redis's clientSubscriptionsCount: channels plus patterns.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Every subscription, shard channels included.
    pub fn total(&self) -> usize {
        self.count() + self.shard.len()
    }
}

#[derive(Default)]
struct Inbox {
    items: Vec<Delivery>,
    /// Sum of the items' [`Delivery::size`].
    bytes: usize,
    /// The client is gone or over its limit: nothing more is queued.
    closed: bool,
}

/// What happened to a pushed entry.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued; `wake` is true when the worker must be told (first entry since it last
    /// looked).
    Queued { wake: bool },
    /// The entry would take the client past `hard` bytes: the inbox is now closed and
    /// emptied, and the client must be disconnected.
    OverLimit,
    /// The inbox is closed.
    Dropped,
}

/// A client's pub/sub state (a field of `ClientInfo`).
#[derive(Default)]
pub struct ClientPubSub {
    inbox: Mutex<Inbox>,
    /// Set by the first push since the worker last emptied the inbox.
    notified: AtomicBool,
    pub subs: Mutex<Subscriptions>,
}

impl ClientPubSub {
    /// Queue `d`. `unsent` is the client's output not yet written to its socket; with
    /// `hard` > 0, an entry that takes the total to `hard` closes the inbox instead.
    pub fn push(&self, d: Delivery, unsent: usize, hard: usize) -> Pushed {
        let size = d.size();
        {
            let mut ib = self.inbox.lock();
            if ib.closed {
                return Pushed::Dropped;
            }
            if hard > 0 && unsent + ib.bytes + size >= hard {
                ib.closed = true;
                ib.items = Vec::new();
                ib.bytes = 0;
                return Pushed::OverLimit;
            }
            ib.items.push(d);
            ib.bytes += size;
        }
        // Already told (the usual case under load): no read-modify-write. A stale `true`
        // is impossible here: the worker clears the flag before it takes the inbox lock,
        // which this push took after it.
        let wake = !self.notified.load(SeqCst) && !self.notified.swap(true, SeqCst);
        Pushed::Queued { wake }
    }

    /// Is anything waiting? (One atomic load: the worker asks before every command.)
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.notified.load(SeqCst)
    }

    /// Worker side: take everything queued. `notified` is cleared first, so an entry
    /// queued after this point wakes the worker again.
    pub fn take(&self) -> Vec<Delivery> {
        self.notified.store(false, SeqCst);
        let mut ib = self.inbox.lock();
        ib.bytes = 0;
        std::mem::take(&mut ib.items)
    }

    /// Is the inbox closed (the client gone, or over its output limit)?
    pub fn is_closed(&self) -> bool {
        self.inbox.lock().closed
    }

    /// The client is going away: queue nothing more, free what waits.
    pub fn close(&self) {
        let mut ib = self.inbox.lock();
        ib.closed = true;
        ib.items = Vec::new();
        ib.bytes = 0;
    }

    /// Memory the client's pub/sub state holds outside its connection, as Redis's
    /// getClientMemoryUsage counts it: messages queued for it and not yet in its reply
    /// buffer (Redis holds them in the output buffer), a 24-byte dict entry per channel plus
    /// the dict's 8-byte slots (a power of two, at least 4), a 24-byte list node per pattern.
    pub fn memory(&self) -> u64 {
        let pending = self.inbox.lock().bytes;
        let s = self.subs.lock();
        let dict = |n: usize| {
            if n == 0 {
                0
            } else {
                24 * n + 8 * n.next_power_of_two().max(4)
            }
        };
        (pending + dict(s.channels.len()) + dict(s.shard.len()) + 24 * s.patterns.len()) as u64
    }

    /// (channels, patterns, shard channels) for CLIENT LIST.
    pub fn counts(&self) -> (usize, usize, usize) {
        let s = self.subs.lock();
        (s.channels.len(), s.patterns.len(), s.shard.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ch: &str, payload: &str) -> Delivery {
        Delivery::Message(Arc::new(Published::new(
            ch.as_bytes(),
            payload.as_bytes(),
            false,
        )))
    }

    #[test]
    fn wakes_once_until_taken() {
        let c = ClientPubSub::default();
        assert_eq!(c.push(msg("a", "1"), 0, 0), Pushed::Queued { wake: true });
        assert_eq!(c.push(msg("a", "2"), 0, 0), Pushed::Queued { wake: false });
        assert!(c.has_pending());
        assert_eq!(c.take().len(), 2);
        assert!(!c.has_pending());
        assert_eq!(c.push(msg("a", "3"), 0, 0), Pushed::Queued { wake: true });
    }

    #[test]
    fn hard_limit_closes() {
        let c = ClientPubSub::default();
        assert_eq!(c.push(msg("a", "1"), 0, 100), Pushed::Queued { wake: true });
        assert_eq!(c.push(msg("a", "1"), 60, 100), Pushed::OverLimit);
        assert_eq!(c.push(msg("a", "1"), 0, 100), Pushed::Dropped);
        assert!(c.take().is_empty());
    }

    #[test]
    fn encodes_per_protocol() {
        let d = msg("ch", "hi");
        let mut r2 = ReplyBuf::new(resp::Proto::Resp2);
        d.encode(&mut r2);
        assert_eq!(r2.out, b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
        let mut r3 = ReplyBuf::new(resp::Proto::Resp3);
        d.encode(&mut r3);
        assert_eq!(r3.out, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
    }
}
