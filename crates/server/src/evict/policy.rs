//! The eight `maxmemory-policy` values.

use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    NoEviction,
}

const ALL: [(&str, Policy); 8] = [
    ("volatile-lru", Policy::VolatileLru),
    ("volatile-lfu", Policy::VolatileLfu),
    ("volatile-random", Policy::VolatileRandom),
    ("volatile-ttl", Policy::VolatileTtl),
    ("allkeys-lru", Policy::AllkeysLru),
    ("allkeys-lfu", Policy::AllkeysLfu),
    ("allkeys-random", Policy::AllkeysRandom),
    ("noeviction", Policy::NoEviction),
];

impl Policy {
    /// The policy named `name` (the configuration's canonical word); noeviction otherwise.
    pub fn from_name(name: &str) -> Policy {
        ALL.iter()
            .find(|(n, _)| *n == name)
            .map_or(Policy::NoEviction, |(_, p)| *p)
    }

    /// A small number for [`crate::config::Hot`] (the index in Redis's listing order).
    pub fn index(self) -> i64 {
        ALL.iter().position(|(_, p)| *p == self).unwrap_or(7) as i64
    }

    pub fn from_index(i: i64) -> Policy {
        ALL.get(i as usize).map_or(Policy::NoEviction, |(_, p)| *p)
    }

    /// Keys carry an LFU (time, counter) field instead of an LRU clock.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::VolatileLfu | Policy::AllkeysLfu)
    }

    /// Only keys with a TTL may be evicted.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// The policy in force.
#[inline]
pub fn current(srv: &Server) -> Policy {
    Policy::from_index(srv.config.hot.maxmemory_policy.load(Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, p) in ALL {
            assert_eq!(Policy::from_name(name), p);
            assert_eq!(Policy::from_index(p.index()), p);
        }
        assert!(Policy::AllkeysLfu.is_lfu() && !Policy::AllkeysLru.is_lfu());
        assert!(Policy::VolatileTtl.is_volatile() && !Policy::AllkeysRandom.is_volatile());
    }
}
