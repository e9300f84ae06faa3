//! Subscribing and unsubscribing one client: its own [`Subscriptions`] and the server's
//! [`Registry`] change together (the client's set first, under its lock, so two threads
//! never disagree about whether it is subscribed).

use super::client::Subscriptions;
use super::registry::Registry;
use crate::clients::{flag, ClientInfo};
use std::sync::Arc;

/// The three kinds of subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE
    Pattern,
    /// SSUBSCRIBE / SUNSUBSCRIBE
    Shard,
}

impl Kind {
    /// The first element of the confirmation pushes: (subscribe, unsubscribe).
    pub fn words(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel => (b"subscribe", b"unsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
            Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
        }
    }

    /// The count a confirmation reports: channels plus patterns, or shard channels.
    fn count(self, s: &Subscriptions) -> usize {
        match self {
            Kind::Shard => s.shard.len(),
            _ => s.count(),
        }
    }

    fn has(self, s: &Subscriptions, name: &[u8]) -> bool {
        match self {
            Kind::Channel => s.channels.contains(name),
            Kind::Pattern => s.patterns.iter().any(|p| **p == *name),
            Kind::Shard => s.shard.contains(name),
        }
    }

    fn insert(self, reg: &Registry, s: &mut Subscriptions, name: Arc<[u8]>, c: &Arc<ClientInfo>) {
        match self {
            Kind::Channel => {
                reg.channels.add(&name, c);
                s.channels.insert(name);
            }
            Kind::Pattern => {
                reg.patterns.add(&name, c);
                s.patterns.push(name);
            }
            Kind::Shard => {
                reg.shard_channels.add(&name, c);
                s.shard.insert(name);
            }
        }
    }

    /// Remove `name`; false if the client was not subscribed to it.
    fn remove(self, reg: &Registry, s: &mut Subscriptions, name: &[u8], id: u64) -> bool {
        let removed = match self {
            Kind::Channel => s.channels.remove(name),
            Kind::Pattern => match s.patterns.iter().position(|p| **p == *name) {
                Some(i) => {
                    s.patterns.remove(i);
                    true
                }
                None => false,
            },
            Kind::Shard => s.shard.remove(name),
        };
        if removed {
            match self {
                Kind::Channel => reg.channels.remove(name, id),
                Kind::Pattern => reg.patterns.remove(name, id),
                Kind::Shard => reg.shard_channels.remove(name, id),
            }
        }
        removed
    }

    /// Everything of this kind the client is subscribed to, in Redis's order for a mass
    /// unsubscribe (patterns in subscription order).
    fn all(self, s: &Subscriptions) -> Vec<Arc<[u8]>> {
        match self {
            Kind::Channel => s.channels.iter().cloned().collect(),
            Kind::Pattern => s.patterns.clone(),
            Kind::Shard => s.shard.iter().cloned().collect(),
        }
    }
}

/// Subscribe `c` to `names`; returns the count each confirmation reports.
pub fn subscribe(reg: &Registry, c: &Arc<ClientInfo>, kind: Kind, names: &[&[u8]]) -> Vec<usize> {
    let mut s = c.pubsub.subs.lock();
    let counts = names
        .iter()
        .map(|&name| {
            if !kind.has(&s, name) {
                kind.insert(reg, &mut s, Arc::from(name), c);
            }
            kind.count(&s)
        })
        .collect();
    c.set_flag(flag::PUBSUB, true);
    counts
}

/// The count a confirmation of subscribing `c` to `name` will report.
pub fn count_after(c: &ClientInfo, kind: Kind, name: &[u8]) -> usize {
    let s = c.pubsub.subs.lock();
    kind.count(&s) + usize::from(!kind.has(&s, name))
}

/// Unsubscribe `c` from `names`, or from everything of `kind` when `names` is empty.
/// Returns what each confirmation reports: the name (none when there was nothing to
/// leave) and the count after it.
pub fn unsubscribe(
    reg: &Registry,
    c: &ClientInfo,
    kind: Kind,
    names: &[&[u8]],
) -> Vec<(Option<Arc<[u8]>>, usize)> {
    let mut s = c.pubsub.subs.lock();
    let targets: Vec<Arc<[u8]>> = if names.is_empty() {
        kind.all(&s)
    } else {
        names.iter().map(|&n| Arc::from(n)).collect()
    };
    let mut out = Vec::with_capacity(targets.len().max(1));
    for name in targets {
        kind.remove(reg, &mut s, &name, c.id);
        out.push((Some(name), kind.count(&s)));
    }
    if out.is_empty() {
        out.push((None, kind.count(&s)));
    }
    if s.total() == 0 {
        c.set_flag(flag::PUBSUB, false);
    }
    out
}

/// Leave everything, without confirmations (RESET, disconnection).
pub fn leave_all(reg: &Registry, c: &ClientInfo) {
    let mut s = c.pubsub.subs.lock();
    for ch in s.channels.drain() {
        reg.channels.remove(&ch, c.id);
    }
    for p in s.patterns.drain(..) {
        reg.patterns.remove(&p, c.id);
    }
    for ch in s.shard.drain() {
        reg.shard_channels.remove(&ch, c.id);
    }
    c.set_flag(flag::PUBSUB, false);
}
