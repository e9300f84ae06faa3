//! Pub/sub: the subscription registry, delivery across workers, and the hooks the
//! dispatcher, the connections and the workers call. The commands are in `cmd::pubsub`.
//!
//! Delivery: a publisher looks up the subscribers in the [`Registry`] and pushes one
//! shared message into each subscriber's inbox ([`ClientPubSub`]); the first push since
//! the subscriber's worker last looked posts the connection to that worker's mailbox.
//! The worker moves the inbox into the reply buffer before the client's next command and
//! when the mailbox wakes it. A publisher never waits for a subscriber: a subscriber past
//! its `client-output-buffer-limit pubsub` hard limit has its inbox closed and is
//! disconnected by its worker. Messages of one publisher reach each subscriber in order
//! (one inbox per subscriber, filled in publish order).
//!
//! A command's own client (a RESP3 client publishing to a channel it listens to) gets its
//! message straight into its reply buffer, before the command's reply, as in Redis.

mod client;
mod registry;
mod subscribe;

pub use client::{ClientPubSub, Delivery, Published, Pushed, Subscriptions};
pub use registry::{ChannelMap, Patterns, Registry};
pub use subscribe::{count_after, leave_all, subscribe, unsubscribe, Kind};

use crate::clients::{flag, ClientInfo};
use crate::cmd::table::CommandDef;
use crate::cmd::{ClientState, Ctx, ReplyMode};
use crate::server::Server;
use resp::ReplyBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Commands a RESP2 client in subscribed mode may run.
const ALLOWED_SUBSCRIBED: &[&str] = &[
    "ping",
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "sunsubscribe",
    "psubscribe",
    "punsubscribe",
    "quit",
    "reset",
];

/// PUBLISH `message` to `channel` from outside any client (keyspace notifications):
/// every subscriber, the caller's own client included, gets it through its inbox.
/// Returns the number of receivers (pattern matches count once per pattern).
pub fn publish(srv: &Server, channel: &[u8], message: &[u8]) -> usize {
    deliver(srv, None, channel, message, false)
}

/// PUBLISH (or SPUBLISH with `shard`) run by `ctx`'s client: its own copy goes straight
/// into its reply buffer, ahead of the command's reply.
pub fn publish_as(ctx: &mut Ctx, channel: &[u8], message: &[u8], shard: bool) -> usize {
    if silenced(ctx) {
        return deliver(ctx.srv, None, channel, message, shard);
    }
    let own = Own {
        info: &ctx.client.info,
        out: &mut *ctx.out,
    };
    deliver(ctx.srv, Some(own), channel, message, shard)
}

/// The client running the publishing command.
struct Own<'a> {
    info: &'a ClientInfo,
    out: &'a mut ReplyBuf,
}

fn deliver(
    srv: &Server,
    mut own: Option<Own>,
    channel: &[u8],
    message: &[u8],
    shard: bool,
) -> usize {
    let msg = Arc::new(Published::new(channel, message, shard));
    let hard = crate::outbuf::hard_limit(srv, crate::outbuf::PUBSUB);
    let reg = &srv.pubsub;
    let map = if shard {
        &reg.shard_channels
    } else {
        &reg.channels
    };
    let mut n = map.with_subscribers(channel, |subs| {
        for s in subs {
            send(s, Delivery::Message(msg.clone()), &mut own, hard);
        }
        subs.len()
    });
    if !shard {
        reg.patterns.for_matching(channel, |pat, subs| {
            for s in subs {
                send(
                    s,
                    Delivery::Pattern(pat.clone(), msg.clone()),
                    &mut own,
                    hard,
                );
            }
            n += subs.len();
        });
    }
    n
}

fn send(sub: &ClientInfo, d: Delivery, own: &mut Option<Own>, hard: usize) {
    if let Some(o) = own {
        if o.info.id == sub.id {
            drain_into(o.info, o.out);
            d.encode(o.out);
            return;
        }
    }
    let unsent = sub.obuf.load(Relaxed) as usize;
    match sub.pubsub.push(d, unsent, hard) {
        Pushed::Queued { wake: true } => sub.mailbox.notify(sub.token),
        Pushed::OverLimit => {
            crate::outbuf::log_close(sub);
            sub.request_kill();
        }
        Pushed::Queued { wake: false } | Pushed::Dropped => {}
    }
}

/// Move everything waiting in `info`'s inbox into `out`.
fn drain_into(info: &ClientInfo, out: &mut ReplyBuf) {
    for d in info.pubsub.take() {
        d.encode(out);
    }
}

/// Connection hook, before each command and on each wake: move messages published by
/// others into the reply buffer. One atomic load when nothing waits.
#[inline]
pub fn deliver_pending(info: &ClientInfo, out: &mut ReplyBuf) {
    if info.pubsub.has_pending() {
        drain_into(info, out);
    }
}

/// Worker hook: the client is closing; it leaves every channel and pattern.
pub fn client_gone(srv: &Server, info: &ClientInfo) {
    info.pubsub.close();
    if info.has(flag::PUBSUB) {
        leave_all(&srv.pubsub, info);
    }
}

/// RESET: leave everything without confirmations; messages queued before that are
/// delivered ahead of the `+RESET` reply.
pub fn reset(ctx: &mut Ctx) {
    let info = &ctx.client.info;
    if info.has(flag::PUBSUB) {
        leave_all(&ctx.srv.pubsub, info);
        if !silenced(ctx) {
            drain_into(&ctx.client.info, ctx.out);
        }
    }
}

/// Is the client a RESP2 client in subscribed mode? (PING answers differently there.)
pub fn resp2_subscribed(ctx: &Ctx) -> bool {
    in_resp2_subscribed_mode(ctx.client, ctx.out)
}

fn in_resp2_subscribed_mode(client: &ClientState, out: &ReplyBuf) -> bool {
    !out.resp3() && client.info.has(flag::PUBSUB)
}

/// Dispatcher hook, after authentication: a RESP2 client in subscribed mode may only run
/// (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET. Returns Redis's error.
pub fn check_context(client: &ClientState, out: &ReplyBuf, cmd: &CommandDef) -> Result<(), String> {
    if !in_resp2_subscribed_mode(client, out) || ALLOWED_SUBSCRIBED.contains(&cmd.fullname.as_str())
    {
        return Ok(());
    }
    Err(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        cmd.fullname
    ))
}

/// CLIENT REPLY OFF / SKIP in force for the running command (they do not silence pushes).
pub fn silenced(ctx: &Ctx) -> bool {
    matches!(ctx.client.reply_mode, ReplyMode::Off | ReplyMode::Skipping)
}

/// Write the pushes `f` encodes for the running command. With `drain_first`, messages
/// already queued for the client go out ahead of them (an unsubscribe: everything
/// published before it left the registry). When the client's replies are silenced the
/// pushes still go out, through its inbox, after the command.
pub fn emit(ctx: &mut Ctx, drain_first: bool, f: impl FnOnce(&mut ReplyBuf)) {
    if !silenced(ctx) {
        if drain_first {
            drain_into(&ctx.client.info, ctx.out);
        }
        return f(ctx.out);
    }
    let mut tmp = ReplyBuf::new(ctx.out.proto);
    f(&mut tmp);
    let info = &ctx.client.info;
    if let Pushed::Queued { wake: true } = info.pubsub.push(Delivery::Raw(tmp.out), 0, 0) {
        info.mailbox.notify(info.token);
    }
}
