//! Sending one invalidation to one tracking client (Redis's sendTrackingMessage), through
//! the receiving client's pub/sub inbox: its worker moves it into the reply buffer before
//! the client's next command and when the mailbox wakes it. The message takes the
//! receiver's protocol at the time it is sent, as in Redis.

use crate::clients::{flag, ClientInfo};
use crate::pubsub::{Delivery, Pushed};
use std::sync::atomic::Ordering::Relaxed;

/// The channel a RESP2 redirect client in pub/sub mode gets invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// The value part of an invalidation of one key: an array of one bulk string.
pub fn one_key(key: &[u8]) -> Vec<u8> {
    keys_array(&[key])
}

/// An array of bulk strings.
pub fn keys_array(keys: &[&[u8]]) -> Vec<u8> {
    let mut b = resp::ReplyBuf::default();
    b.array(keys.len());
    for k in keys {
        b.bulk(k);
    }
    b.out
}

fn resp3(c: &ClientInfo) -> bool {
    c.resp.load(Relaxed) >= 3
}

/// Queue `bytes` for `c`; false if its inbox is closed (it is going away).
fn push(c: &ClientInfo, bytes: Vec<u8>) -> bool {
    match c.pubsub.push(Delivery::Raw(bytes), 0, 0) {
        Pushed::Queued { wake } => {
            if wake {
                c.mailbox.notify(c.token);
            }
            true
        }
        Pushed::OverLimit | Pushed::Dropped => false,
    }
}

/// Send tracking client `target` an invalidation whose value (an array of keys, or a
/// null) is `value`, encoded already: to its redirect client if it has one, else to
/// itself when it speaks RESP3 (a RESP2 client without a redirection gets nothing).
pub fn send(target: &ClientInfo, value: &[u8]) {
    let redirect = target.tracking.redirect();
    if redirect == 0 {
        if resp3(target) {
            push(target, push_frame(value));
        }
        return;
    }
    let delivered = match target.tracking.redirect_client() {
        Some(r) if resp3(&r) => push(&r, push_frame(value)),
        Some(r) if r.has(flag::PUBSUB) => push(&r, message_frame(value)),
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
        push(target, b.out);
    }
}

/// `>2 invalidate <value>`.
fn push_frame(value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + value.len());
    v.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
    v.extend_from_slice(value);
    v
}

/// `*3 message __redis__:invalidate <value>`.
fn message_frame(value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(48 + value.len());
    v.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
    v.extend_from_slice(value);
    v
}
