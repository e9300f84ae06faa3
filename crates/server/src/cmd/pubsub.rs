//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB
//! introspection. The registry and delivery are in `crate::pubsub`.

use super::help::{reply_help, subcommand_syntax_error};
use super::{Ctx, Handler};
use crate::pubsub::{self, ChannelMap, Kind};
use resp::ReplyBuf;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("subscribe", subscribe),
    ("unsubscribe", unsubscribe),
    ("psubscribe", psubscribe),
    ("punsubscribe", punsubscribe),
    ("ssubscribe", ssubscribe),
    ("sunsubscribe", sunsubscribe),
    ("publish", publish),
    ("spublish", spublish),
    ("pubsub|channels", pubsub_channels),
    ("pubsub|numsub", pubsub_numsub),
    ("pubsub|numpat", pubsub_numpat),
    ("pubsub|shardchannels", pubsub_shardchannels),
    ("pubsub|shardnumsub", pubsub_shardnumsub),
    ("pubsub|help", pubsub_help),
];

/// Subscribe to `argv[1..]` and confirm each one: [word, name, count].
fn subscribe_kind(ctx: &mut Ctx, argv: &[&[u8]], kind: Kind) {
    let info = ctx.client.info.clone();
    let word = kind.words().0;
    let confirm = |out: &mut ReplyBuf, name: &[u8], n: usize| {
        out.push(3);
        out.bulk(word);
        out.bulk(name);
        out.int(n as i64);
    };
    if pubsub::silenced(ctx) {
        // The confirmations go through the inbox, as messages do: each is queued before
        // its subscription is registered, so a message published to the channel comes
        // after it.
        for &name in &argv[1..] {
            let n = pubsub::count_after(&info, kind, name);
            pubsub::emit(ctx, false, |out| confirm(out, name, n));
            pubsub::subscribe(&ctx.srv.pubsub, &info, kind, &[name]);
        }
        return;
    }
    let counts = pubsub::subscribe(&ctx.srv.pubsub, &info, kind, &argv[1..]);
    // Messages queued before were published to earlier subscriptions; any for these
    // channels were published after them: the confirmations go first.
    pubsub::emit(ctx, false, |out| {
        for (name, n) in argv[1..].iter().zip(counts) {
            confirm(out, name, n);
        }
    });
}

/// Unsubscribe from `argv[1..]` (everything of `kind` without arguments) and confirm
/// each one; with nothing to leave, one confirmation with a null name.
fn unsubscribe_kind(ctx: &mut Ctx, argv: &[&[u8]], kind: Kind) {
    let left = pubsub::unsubscribe(&ctx.srv.pubsub, &ctx.client.info, kind, &argv[1..]);
    let word = kind.words().1;
    pubsub::emit(ctx, true, |out| {
        for (name, n) in &left {
            out.push(3);
            out.bulk(word);
            match name {
                Some(name) => out.bulk(name),
                None => out.null(),
            }
            out.int(*n as i64);
        }
    });
}

fn subscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    subscribe_kind(ctx, argv, Kind::Channel);
}

fn unsubscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    unsubscribe_kind(ctx, argv, Kind::Channel);
}

fn psubscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    subscribe_kind(ctx, argv, Kind::Pattern);
}

fn punsubscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    unsubscribe_kind(ctx, argv, Kind::Pattern);
}

fn ssubscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    subscribe_kind(ctx, argv, Kind::Shard);
}

fn sunsubscribe(ctx: &mut Ctx, argv: &[&[u8]]) {
    unsubscribe_kind(ctx, argv, Kind::Shard);
}

fn publish(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = pubsub::publish_as(ctx, argv[1], argv[2], false);
    to_replicas(ctx);
    ctx.out.int(n as i64);
}

fn spublish(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = pubsub::publish_as(ctx, argv[1], argv[2], true);
    to_replicas(ctx);
    ctx.out.int(n as i64);
}

/// A message reaches the replicas' subscribers too: the command goes to the replicas (not
/// the AOF), as Redis's forceCommandPropagation(c, PROPAGATE_REPL).
fn to_replicas(ctx: &mut Ctx) {
    if ctx.srv.propagation.feeds_replicas() {
        ctx.propagate.force = true;
        ctx.propagate.replicas_only = true;
    }
}

/// PUBSUB CHANNELS / SHARDCHANNELS [pattern].
fn channel_list(ctx: &mut Ctx, argv: &[&[u8]], map: &ChannelMap) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    let names = map.names(argv.get(2).copied());
    ctx.out.bulk_array(names.iter());
}

/// PUBSUB NUMSUB / SHARDNUMSUB [channel ...]: a flat array of (channel, subscribers).
fn numsub(ctx: &mut Ctx, argv: &[&[u8]], map: &ChannelMap) {
    ctx.out.array((argv.len() - 2) * 2);
    for ch in &argv[2..] {
        ctx.out.bulk(ch);
        ctx.out.int(map.count(ch) as i64);
    }
}

fn pubsub_channels(ctx: &mut Ctx, argv: &[&[u8]]) {
    channel_list(ctx, argv, &ctx.srv.pubsub.channels);
}

fn pubsub_shardchannels(ctx: &mut Ctx, argv: &[&[u8]]) {
    channel_list(ctx, argv, &ctx.srv.pubsub.shard_channels);
}

fn pubsub_numsub(ctx: &mut Ctx, argv: &[&[u8]]) {
    numsub(ctx, argv, &ctx.srv.pubsub.channels);
}

fn pubsub_shardnumsub(ctx: &mut Ctx, argv: &[&[u8]]) {
    numsub(ctx, argv, &ctx.srv.pubsub.shard_channels);
}

fn pubsub_numpat(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(ctx.srv.pubsub.patterns.len() as i64);
}

fn pubsub_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}
