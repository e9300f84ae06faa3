//! Who is subscribed to what, server-wide.
//!
//! Channels (and shard channels) live in a map split into [`SHARDS`] shards by the
//! channel's hash, each behind its own `RwLock`: PUBLISH read-locks the one shard of its
//! channel, so publishers to different channels share nothing and publishers to one
//! channel only share a read lock. Patterns are one map behind their own `RwLock`,
//! skipped entirely (one atomic load) while nobody has a pattern subscription.
//!
//! A publisher holds the read lock while it queues the message for each subscriber, so
//! once an unsubscribe (which write-locks) has returned, no message for that channel can
//! reach the client any more.

use crate::clients::ClientInfo;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Shards of a channel map (a power of two).
const SHARDS: usize = 64;

/// The clients subscribed to one channel or pattern.
pub type Subscribers = Vec<Arc<ClientInfo>>;

type Map = HashMap<Arc<[u8]>, Subscribers>;

/// Add `c` under `name`; returns true if `name` is new to the map.
fn add_to(map: &mut Map, name: &Arc<[u8]>, c: &Arc<ClientInfo>) -> bool {
    match map.get_mut(&**name) {
        Some(v) => {
            v.push(c.clone());
            false
        }
        None => {
            map.insert(name.clone(), vec![c.clone()]);
            true
        }
    }
}

/// Remove client `id` from `name`; returns true if `name` left the map (no subscriber
/// remains).
fn remove_from(map: &mut Map, name: &[u8], id: u64) -> bool {
    let Some(v) = map.get_mut(name) else {
        return false;
    };
    if let Some(i) = v.iter().position(|c| c.id == id) {
        v.swap_remove(i);
    }
    if v.is_empty() {
        map.remove(name);
        return true;
    }
    false
}

/// Channel name -> subscribers, sharded by the name's hash.
pub struct ChannelMap {
    shards: Box<[RwLock<Map>]>,
    /// Distinct channels with at least one subscriber.
    len: AtomicUsize,
}

impl Default for ChannelMap {
    fn default() -> Self {
        ChannelMap {
            shards: (0..SHARDS).map(|_| RwLock::new(Map::new())).collect(),
            len: AtomicUsize::new(0),
        }
    }
}

impl ChannelMap {
    fn shard(&self, channel: &[u8]) -> &RwLock<Map> {
        &self.shards[engine::hash_key(channel) as usize & (SHARDS - 1)]
    }

    pub fn add(&self, channel: &Arc<[u8]>, c: &Arc<ClientInfo>) {
        if add_to(&mut self.shard(channel).write(), channel, c) {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn remove(&self, channel: &[u8], id: u64) {
        if remove_from(&mut self.shard(channel).write(), channel, id) {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Distinct channels (INFO pubsub_channels).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Subscribers of `channel` (PUBSUB NUMSUB).
    pub fn count(&self, channel: &[u8]) -> usize {
        self.shard(channel).read().get(channel).map_or(0, Vec::len)
    }

    /// Active channels matching `pattern` (all with `None`), in no particular order.
    pub fn names(&self, pattern: Option<&[u8]>) -> Vec<Arc<[u8]>> {
        let mut out = Vec::new();
        for s in self.shards.iter() {
            let m = s.read();
            out.extend(
                m.keys()
                    .filter(|k| pattern.is_none_or(|p| engine::glob::glob_match(p, k, false)))
                    .cloned(),
            );
        }
        out
    }

    /// Run `f` on the subscribers of `channel`, holding the shard's read lock.
    pub fn with_subscribers<R>(
        &self,
        channel: &[u8],
        f: impl FnOnce(&[Arc<ClientInfo>]) -> R,
    ) -> R {
        let m = self.shard(channel).read();
        f(m.get(channel).map_or(&[][..], Vec::as_slice))
    }
}

/// Pattern -> subscribers.
#[derive(Default)]
pub struct Patterns {
    map: RwLock<Map>,
    /// Distinct patterns; publishers skip the map while it is 0.
    len: AtomicUsize,
}

impl Patterns {
    pub fn add(&self, pattern: &Arc<[u8]>, c: &Arc<ClientInfo>) {
        let mut m = self.map.write();
        if add_to(&mut m, pattern, c) {
            self.len.store(m.len(), Ordering::Release);
        }
    }

    pub fn remove(&self, pattern: &[u8], id: u64) {
        let mut m = self.map.write();
        if remove_from(&mut m, pattern, id) {
            self.len.store(m.len(), Ordering::Release);
        }
    }

    /// Distinct patterns (PUBSUB NUMPAT, INFO pubsub_patterns).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Call `f(pattern, subscribers)` for every pattern matching `channel`, holding the
    /// read lock; nothing at all while there are no patterns.
    pub fn for_matching(&self, channel: &[u8], mut f: impl FnMut(&Arc<[u8]>, &[Arc<ClientInfo>])) {
        if self.is_empty() {
            return;
        }
        let m = self.map.read();
        for (p, subs) in m.iter() {
            if engine::glob::glob_match(p, channel, false) {
                f(p, subs);
            }
        }
    }
}

/// The server's subscriptions (a field of `Server`).
#[derive(Default)]
pub struct Registry {
    pub channels: ChannelMap,
    pub patterns: Patterns,
    /// SSUBSCRIBE channels (without a cluster, a namespace of their own).
    pub shard_channels: ChannelMap,
    /// Held while one command's keyspace notifications are delivered, so that a
    /// subscriber gets them contiguous, never interleaved with another command's (Redis,
    /// running one command at a time, never interleaves them either). Only commands
    /// that publish notifications take it.
    pub notify_order: parking_lot::Mutex<()>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientAddr;
    use crate::net::mailbox::Mailbox;

    fn client(id: u64) -> Arc<ClientInfo> {
        let poll = mio::Poll::new().unwrap();
        let mb = Arc::new(Mailbox::new(poll.registry(), mio::Token(0)).unwrap());
        let addr = ClientAddr {
            addr: "127.0.0.1:1".into(),
            laddr: "127.0.0.1:2".into(),
            fd: -1,
            is_unix: false,
        };
        Arc::new(ClientInfo::new(id, addr, 0, 0, mb))
    }

    #[test]
    fn channels_come_and_go() {
        let m = ChannelMap::default();
        let (a, b) = (client(1), client(2));
        let ch: Arc<[u8]> = Arc::from(&b"news"[..]);
        m.add(&ch, &a);
        m.add(&ch, &b);
        assert_eq!((m.len(), m.count(b"news")), (1, 2));
        m.remove(b"news", 1);
        assert_eq!(m.with_subscribers(b"news", |s| s[0].id), 2);
        m.remove(b"news", 2);
        assert!(m.is_empty());
        assert!(m.names(None).is_empty());
    }

    #[test]
    fn patterns_match() {
        let p = Patterns::default();
        let a = client(1);
        p.add(&Arc::from(&b"n*"[..]), &a);
        p.add(&Arc::from(&b"x*"[..]), &a);
        let mut hits = Vec::new();
        p.for_matching(b"news", |pat, subs| hits.push((pat.to_vec(), subs.len())));
        assert_eq!(hits, vec![(b"n*".to_vec(), 1)]);
        p.remove(b"n*", 1);
        p.remove(b"x*", 1);
        assert!(p.is_empty());
    }
}
