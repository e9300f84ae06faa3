//! Sending one invalidation to tracking clients (Redis's sendTrackingMessage), through
//! each receiving client's pub/sub inbox: its worker moves it into the reply buffer before
//! the client's next command and when the mailbox wakes it. The message takes the
//! receiver's protocol at the time it is sent, as in Redis; each form is encoded once per
//! message and shared by the receivers that take it.

use crate::clients::{flag, ClientInfo};
use crate::pubsub::{Delivery, Pushed};
use std::cell::OnceCell;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// One invalidation: its value (an array of keys, or a null) and its two wire forms,
/// encoded when first needed.
pub struct Message {
    value: Vec<u8>,
    push: OnceCell<Arc<[u8]>>,
    pubsub: OnceCell<Arc<[u8]>>,
}

impl Message {
    /// `value` encoded already.
    pub fn new(value: Vec<u8>) -> Message {
        Message {
            value,
            push: OnceCell::new(),
            pubsub: OnceCell::new(),
        }
    }

    /// The invalidation of the keys `keys`.
    pub fn keys(keys: &[&[u8]]) -> Message {
        let mut b = resp::ReplyBuf::default();
        b.array(keys.len());
        for k in keys {
            b.bulk(k);
        }
        Message::new(b.out)
    }

    /// `>2 invalidate <value>`.
    fn push_frame(&self) -> Arc<[u8]> {
        self.push
            .get_or_init(|| frame(b">2\r\n$10\r\ninvalidate\r\n", &self.value))
            .clone()
    }

    /// `*3 message __redis__:invalidate <value>`.
    fn pubsub_frame(&self) -> Arc<[u8]> {
        self.pubsub
            .get_or_init(|| {
                frame(
                    b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n",
                    &self.value,
                )
            })
            .clone()
    }
}

fn frame(head: &[u8], value: &[u8]) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(head.len() + value.len());
    v.extend_from_slice(head);
    v.extend_from_slice(value);
    v.into()
}

fn resp3(c: &ClientInfo) -> bool {
    c.resp.load(Relaxed) >= 3
}

/// Queue `d` for `c`; false if its inbox is closed (it is going away).
fn push(c: &ClientInfo, d: Delivery) -> bool {
    match c.pubsub.push(d, 0, 0) {
        Pushed::Queued { wake } => {
            if wake {
                c.mailbox.notify(c.token);
            }
            true
        }
        Pushed::OverLimit | Pushed::Dropped => false,
    }
}

/// Send tracking client `target` the invalidation `m`: to its redirect client if it has
/// one, else to itself when it speaks RESP3 (a RESP2 client without a redirection gets
/// nothing).
pub fn send(target: &ClientInfo, m: &Message) {
    let redirect = target.tracking.redirect();
    if redirect == 0 {
        if resp3(target) {
            push(target, Delivery::Shared(m.push_frame()));
        }
        return;
    }
    let delivered = match target.tracking.redirect_client() {
        // Killed, its worker yet to close it: gone all the same (Redis's
        // lookupClientByID fails as soon as CLIENT KILL has freed it).
        Some(r) if r.has(flag::UNREGISTERED) => false,
        Some(r) if resp3(&r) => push(&r, Delivery::Shared(m.push_frame())),
        Some(r) if r.has(flag::PUBSUB) => push(&r, Delivery::Shared(m.pubsub_frame())),
        // RESP2 and not in pub/sub mode: nothing it could be sent as.
        Some(r) => !r.pubsub.is_closed(),
        None => false,
    };
    if !delivered {
        broken(target, redirect);
    }
}

/// The redirect client is gone: flag it (CLIENT LIST `R`, TRACKINGINFO
/// `broken_redirect`) and tell a RESP3 tracking client.
fn broken(target: &ClientInfo, redirect: u64) {
    target.set_flag(flag::TRACKING_BROKEN_REDIR, true);
    if resp3(target) {
        let mut b = resp::ReplyBuf::new(resp::Proto::Resp3);
        b.push(2);
        b.bulk(b"tracking-redir-broken");
        b.int(redirect as i64);
        push(target, Delivery::Raw(b.out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        let m = Message::keys(&[b"a", b"bc"]);
        assert_eq!(
            &*m.push_frame(),
            b">2\r\n$10\r\ninvalidate\r\n*2\r\n$1\r\na\r\n$2\r\nbc\r\n"
        );
        assert_eq!(
            &*m.pubsub_frame(),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*2\r\n$1\r\na\r\n$2\r\nbc\r\n"
        );
        assert!(Arc::ptr_eq(&m.push_frame(), &m.push_frame()));
    }
}
