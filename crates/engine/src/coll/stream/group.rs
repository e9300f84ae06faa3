//! Consumer groups: the group's last delivered ID and read counter, its pending entries
//! list (PEL: ID -> delivery time, count and owner) and its consumers, each with its own
//! set of pending IDs. Ordered maps give Redis's (radix tree) orders: groups and
//! consumers by name bytes, pending entries by ID.

use super::id::StreamId;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A consumer's name, shared by the consumer and the pending entries it owns.
pub type Name = Arc<[u8]>;

/// SCG_INVALID_ENTRIES_READ: the group's read counter is unknown.
pub const ENTRIES_READ_INVALID: i64 = -1;

/// A pending (delivered, not acknowledged) entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    pub consumer: Name,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// Unix ms the consumer was last active.
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Name, Consumer>,
}

impl Group {
    /// Bytes held by the group's pending entries and consumers.
    pub fn footprint(&self) -> usize {
        use crate::mem;
        let consumers: usize = self
            .consumers
            .iter()
            .map(|(name, c)| {
                // An Arc's allocation: two counts, then the bytes.
                mem::size_class(16 + name.len()) + mem::btree::<StreamId, ()>(c.pel.len())
            })
            .sum();
        mem::btree::<StreamId, Nack>(self.pel.len())
            + mem::btree::<Name, Consumer>(self.consumers.len())
            + consumers
    }

    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer's shared name, if it exists.
    pub fn consumer_name(&self, name: &[u8]) -> Option<Name> {
        self.consumers.get_key_value(name).map(|(k, _)| k.clone())
    }

    /// streamCreateConsumer: false if it exists already.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            Name::from(name),
            Consumer {
                seen_time: now,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// streamLookupConsumer (refreshing its seen time) or streamCreateConsumer: the name,
    /// and whether it was created.
    pub fn lookup_or_create(&mut self, name: &[u8], now: i64) -> (Name, bool) {
        let created = match self.consumers.get_mut(name) {
            Some(c) => {
                c.seen_time = now;
                false
            }
            None => self.create_consumer(name, now),
        };
        (self.consumer_name(name).expect("present"), created)
    }

    /// streamDelConsumer: the consumer and its pending entries go; returns how many it had.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// XACK of one ID: true if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Give pending entry `id` to `consumer` (moving it from its previous owner).
    pub fn assign(&mut self, id: StreamId, consumer: &Name) {
        let Some(n) = self.pel.get_mut(&id) else {
            return;
        };
        if n.consumer != *consumer {
            if let Some(old) = self.consumers.get_mut(&n.consumer) {
                old.pel.remove(&id);
            }
            n.consumer = consumer.clone();
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// A first delivery of `id` to `consumer` by XREADGROUP: a new pending entry, or the
    /// existing one reassigned with its count reset (the group's ID was moved back).
    pub fn deliver(&mut self, id: StreamId, consumer: &Name, now: i64) {
        let n = self.pel.entry(id).or_insert_with(|| Nack {
            delivery_time: now,
            delivery_count: 1,
            consumer: consumer.clone(),
        });
        n.delivery_time = now;
        n.delivery_count = 1;
        self.assign(id, consumer);
    }

    /// Remove a pending entry whatever its owner (its entry is gone from the stream).
    pub fn drop_pending(&mut self, id: StreamId) -> Option<Nack> {
        let n = self.pel.remove(&id)?;
        if let Some(c) = self.consumers.get_mut(&n.consumer) {
            c.pel.remove(&id);
        }
        Some(n)
    }
}
