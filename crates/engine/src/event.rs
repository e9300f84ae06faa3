//! Change events: what a command (or the expiry cycle) did to the keyspace, named as Redis
//! names it. Every write through [`crate::Locked`] records one here; the server feeds them
//! to WATCH, keyspace notifications, the dirty counter, statistics and propagation.

/// Redis's keyspace-notification classes (NOTIFY_* in server.h), as bits.
pub mod class {
    pub const KEYSPACE: u16 = 1 << 0;
    pub const KEYEVENT: u16 = 1 << 1;
    pub const GENERIC: u16 = 1 << 2;
    pub const STRING: u16 = 1 << 3;
    pub const LIST: u16 = 1 << 4;
    pub const SET: u16 = 1 << 5;
    pub const HASH: u16 = 1 << 6;
    pub const ZSET: u16 = 1 << 7;
    pub const EXPIRED: u16 = 1 << 8;
    pub const EVICTED: u16 = 1 << 9;
    pub const STREAM: u16 = 1 << 10;
    pub const KEY_MISS: u16 = 1 << 11;
    pub const LOADED: u16 = 1 << 12;
    pub const MODULE: u16 = 1 << 13;
    pub const NEW: u16 = 1 << 14;
    /// A change with no notification class (never enabled by notify-keyspace-events).
    pub const SILENT: u16 = 1 << 15;
    /// `A`: every class but key-miss and new.
    pub const ALL: u16 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// One kind of change: its notification class, Redis's event name, and how much it adds
/// to the dirty counter (`rdb_changes_since_last_save`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub class: u16,
    pub name: &'static str,
    pub dirty: u8,
    /// Whether the change signals the key as modified (Redis's signalModifiedKey: WATCH,
    /// client-side caching). Redis's consumer-group bookkeeping (XGROUP, a consumer created
    /// by XREADGROUP) announces itself without it.
    pub signal: bool,
}

impl Event {
    /// A modification counted once in the dirty counter.
    pub const fn new(class: u16, name: &'static str) -> Event {
        Event {
            class,
            name,
            dirty: 1,
            signal: true,
        }
    }

    /// The same event, not counted in the dirty counter (Redis counts some commands'
    /// several events once).
    pub const fn clean(self) -> Event {
        Event { dirty: 0, ..self }
    }

    /// The same event, announced without signalling the key as modified (WATCH keeps
    /// its version).
    pub const fn unsignalled(self) -> Event {
        Event {
            signal: false,
            ..self
        }
    }

    pub const fn generic(name: &'static str) -> Event {
        Event::new(class::GENERIC, name)
    }

    pub const fn string(name: &'static str) -> Event {
        Event::new(class::STRING, name)
    }

    pub const fn list(name: &'static str) -> Event {
        Event::new(class::LIST, name)
    }

    pub const fn hash(name: &'static str) -> Event {
        Event::new(class::HASH, name)
    }

    pub const fn set(name: &'static str) -> Event {
        Event::new(class::SET, name)
    }

    pub const fn zset(name: &'static str) -> Event {
        Event::new(class::ZSET, name)
    }

    pub const fn stream(name: &'static str) -> Event {
        Event::new(class::STREAM, name)
    }

    /// Nothing to announce: the caller records the key's event itself with
    /// [`crate::Locked::notify`] (so several writes of one command are announced in Redis's
    /// order).
    pub const NONE: Event = Event {
        class: 0,
        name: "",
        dirty: 0,
        signal: true,
    };
    /// A key created (dbAdd).
    pub const NEW: Event = Event {
        class: class::NEW,
        name: "new",
        dirty: 0,
        signal: true,
    };
    /// A key found past its TTL and deleted (lazily or by the expiry cycle).
    pub const EXPIRED: Event = Event {
        class: class::EXPIRED,
        name: "expired",
        dirty: 0,
        signal: true,
    };
    /// A key removed to bring memory under `maxmemory` (not counted as dirty, as in Redis).
    pub const EVICTED: Event = Event {
        class: class::EVICTED,
        name: "evicted",
        dirty: 0,
        signal: true,
    };
    /// A read found no key.
    pub const KEY_MISS: Event = Event {
        class: class::KEY_MISS,
        name: "keymiss",
        dirty: 0,
        signal: true,
    };
    pub const DEL: Event = Event::generic("del");
    /// The value changed without a keyspace notification (Redis's signalModifiedKey
    /// alone, e.g. PFCOUNT caching the cardinality in the string): WATCH and client-side
    /// caching see it, the dirty counter counts it once.
    pub const MODIFIED: Event = Event {
        class: class::SILENT,
        name: "",
        dirty: 1,
        signal: true,
    };

    pub fn is_none(&self) -> bool {
        self.class == 0
    }

    /// Does the event mean the key changed (WATCH, client-side caching)? A key miss does
    /// not.
    pub fn modifies(&self) -> bool {
        self.class & class::KEY_MISS == 0 && !self.is_none()
    }

    /// Does the event signal the key as modified to WATCH (and client-side caching)?
    pub fn signals(&self) -> bool {
        self.signal && self.modifies()
    }
}

/// One recorded event.
#[derive(Clone, Copy, Debug)]
pub struct Change {
    pub db: u32,
    key_at: u32,
    key_len: u32,
    pub event: Event,
}

/// A change to a whole database (or all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbChange {
    /// FLUSHDB (or FLUSHALL for each database).
    Flushed(usize),
    /// SWAPDB a b.
    Swapped(usize, usize),
}

/// What one command did, in the order it did it. Buffers keep their capacity between
/// commands (the server reuses one per worker).
#[derive(Debug)]
pub struct Changes {
    keys: Vec<u8>,
    items: Vec<Change>,
    pub db_changes: Vec<DbChange>,
    /// Read lookups that found / did not find their key (keyspace_hits / misses).
    pub hits: u64,
    pub misses: u64,
    /// Dirty count beyond the events' own (FLUSHDB's removed keys).
    pub extra_dirty: u64,
    /// The events' dirty weights and `expired` events so far (kept as they are recorded).
    events_dirty: u64,
    expired: u64,
    /// Classes of informational events (`keymiss`, `new`) nobody consumes now: not recorded.
    unwanted: u16,
    /// Events recorded (counted even when their keys are not kept).
    recorded: u64,
    /// Keep each event's key and name? Only counts are needed while nothing consumes
    /// events one by one (no WATCH, notifications, tracking, blocked clients or
    /// propagation reader).
    keep_events: bool,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            keys: Vec::new(),
            items: Vec::new(),
            db_changes: Vec::new(),
            hits: 0,
            misses: 0,
            extra_dirty: 0,
            events_dirty: 0,
            expired: 0,
            unwanted: 0,
            recorded: 0,
            keep_events: true,
        }
    }
}

impl Changes {
    #[inline]
    pub fn record(&mut self, db: usize, key: &[u8], event: Event) {
        if event.is_none() || event.class & self.unwanted != 0 {
            return;
        }
        self.events_dirty += u64::from(event.dirty);
        if event.class == class::EXPIRED {
            self.expired += 1;
        }
        self.recorded += 1;
        if !self.keep_events {
            return;
        }
        let key_at = self.keys.len() as u32;
        self.keys.extend_from_slice(key);
        self.items.push(Change {
            db: db as u32,
            key_at,
            key_len: key.len() as u32,
            event,
        });
    }

    /// Which informational events (`keymiss`, `new`) to record: those whose class is in
    /// `classes` (the others only tell what another event of the same command already
    /// says, and are recorded only for a consumer that asks, such as notifications).
    pub fn want_informational(&mut self, classes: u16) {
        self.unwanted = (class::KEY_MISS | class::NEW) & !classes;
    }

    /// Whether to keep each event (key and name) or only count them; decided per command,
    /// with its locks held, by whether anything consumes events one by one.
    pub fn keep_events(&mut self, keep: bool) {
        self.keep_events = keep;
    }

    /// Events recorded (kept or only counted).
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    pub fn items(&self) -> &[Change] {
        &self.items
    }

    pub fn key(&self, c: &Change) -> &[u8] {
        &self.keys[c.key_at as usize..(c.key_at + c.key_len) as usize]
    }

    /// Anything recorded at all (events, database changes, lookup counts)?
    pub fn is_empty(&self) -> bool {
        self.recorded == 0
            && self.db_changes.is_empty()
            && self.hits == 0
            && self.misses == 0
            && self.extra_dirty == 0
    }

    /// The dirty count: the events' plus the extra.
    pub fn dirty(&self) -> u64 {
        self.events_dirty + self.extra_dirty
    }

    /// Keys deleted because their TTL had passed.
    pub fn expired(&self) -> u64 {
        self.expired
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.items.clear();
        self.db_changes.clear();
        self.hits = 0;
        self.misses = 0;
        self.extra_dirty = 0;
        self.events_dirty = 0;
        self.expired = 0;
        self.recorded = 0;
    }

    /// Move everything recorded in `other` after what is here (EXEC gathers its commands').
    pub fn append(&mut self, other: &Changes) {
        for c in &other.items {
            self.record(c.db as usize, other.key(c), c.event);
        }
        self.db_changes.extend_from_slice(&other.db_changes);
        self.hits += other.hits;
        self.misses += other.misses;
        self.extra_dirty += other.extra_dirty;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_order() {
        let mut c = Changes::default();
        c.record(0, b"a", Event::string("set"));
        c.record(0, b"a", Event::NONE);
        c.record(1, b"bb", Event::EXPIRED);
        c.record(1, b"bb", Event::KEY_MISS);
        let names: Vec<_> = c
            .items()
            .iter()
            .map(|x| (x.db, c.key(x), x.event.name))
            .collect();
        assert_eq!(
            names,
            vec![
                (0, &b"a"[..], "set"),
                (1, &b"bb"[..], "expired"),
                (1, &b"bb"[..], "keymiss")
            ]
        );
        assert_eq!(c.dirty(), 1);
        assert_eq!(c.expired(), 1);
        assert!(!Event::KEY_MISS.modifies());
        assert!(Event::EXPIRED.modifies());
        c.clear();
        assert!(c.is_empty());
    }

    #[test]
    fn counts_without_keeping_events() {
        let mut c = Changes::default();
        c.keep_events(false);
        c.record(0, b"a", Event::string("set"));
        c.record(0, b"b", Event::EXPIRED);
        assert!(c.items().is_empty());
        assert_eq!((c.recorded(), c.dirty(), c.expired()), (2, 1, 1));
        assert!(!c.is_empty());
        c.want_informational(0);
        c.record(0, b"a", Event::NEW);
        assert_eq!(c.recorded(), 2);
    }
}
