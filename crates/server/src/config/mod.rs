//! Configuration: Redis's `redis.conf` syntax, `--name value` overrides, CONFIG GET, SET
//! and REWRITE.
//!
//! Every option is a row of [`table::OPTIONS`] (Redis 7.0.15's names, aliases, flags,
//! kinds, defaults, bounds). Values are kept as their canonical text (what CONFIG GET
//! prints); [`value`] parses and prints each kind, [`load`] reads files and the command
//! line, [`rewrite`] writes the file back.

pub mod load;
pub mod rewrite;
pub mod table;
pub mod value;

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

pub use load::{args_to_text, quote_arg};
pub use table::{Kind, OptionDef, OPTIONS};
use table::{Special, HIDDEN, IMMUTABLE, MULTI_ARG, PROTECTED};

/// A registered option name: the row, and whether the name is the row's alias.
#[derive(Clone, Copy)]
pub struct Entry {
    pub index: usize,
    /// The name as registered (the alias for an alias entry).
    pub name: &'static str,
    pub is_alias: bool,
}

impl Entry {
    pub fn def(&self) -> &'static OptionDef {
        &OPTIONS[self.index]
    }
}

/// Every registered name (primary names and aliases), in table order.
pub fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let mut v = Vec::new();
        for (index, o) in OPTIONS.iter().enumerate() {
            v.push(Entry {
                index,
                name: o.name,
                is_alias: false,
            });
            if let Some(a) = o.alias {
                v.push(Entry {
                    index,
                    name: a,
                    is_alias: true,
                });
            }
        }
        v
    })
}

/// Look a name up, case-insensitively, among names and aliases.
pub fn lookup(name: &str) -> Option<Entry> {
    static MAP: OnceLock<HashMap<&'static str, Entry>> = OnceLock::new();
    let map = MAP.get_or_init(|| entries().iter().map(|e| (e.name, *e)).collect());
    map.get(name.to_ascii_lowercase().as_str()).copied()
}

pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    lookup(name).map(|e| e.def())
}

/// Parse a memory amount as Redis's memtoull does (`1gb`, `10k`, `512`).
pub fn parse_memory(s: &str) -> Option<i64> {
    value::memtoull(s).map(|v| v as i64)
}

/// Values read on every command, kept as atomics so the command path takes no lock.
/// Recomputed after every change (start-up, CONFIG SET).
#[derive(Default)]
pub struct Hot {
    pub proto_max_bulk_len: AtomicI64,
    pub client_query_buffer_limit: AtomicI64,
    /// client-output-buffer-limit by class (normal, replica, pubsub): hard bytes, soft
    /// bytes, soft seconds (0 = no limit).
    pub obuf_limits: [[AtomicI64; 3]; 3],
    /// slowlog-log-slower-than (µs; negative disables the slow log).
    pub slowlog_slower_than: AtomicI64,
    /// latency-monitor-threshold (ms; 0 disables the latency monitor).
    pub latency_threshold_ms: AtomicI64,
    /// latency-tracking (1 = yes): per-command latency histograms.
    pub latency_tracking: AtomicI64,
    /// notify-keyspace-events as Redis's flag bits (0 = off).
    pub notify_flags: AtomicI64,
    /// hll-sparse-max-bytes: past this length a sparse HyperLogLog turns dense.
    pub hll_sparse_max_bytes: AtomicI64,
    /// The collection encoding thresholds, in the order of [`COLL_LIMITS`].
    coll: [AtomicI64; 9],
    /// maxmemory in bytes (0 = no limit) and maxmemory-policy ([`crate::evict::Policy`]'s
    /// index), read by the admission check of every command.
    pub maxmemory: AtomicU64,
    pub maxmemory_policy: AtomicI64,
    /// busy-reply-threshold (lua-time-limit), ms: past it a script is busy (0: never).
    pub busy_reply_threshold_ms: AtomicI64,
    /// loglevel as a level (0 debug .. 3 warning), for `redis.log`.
    pub log_level: AtomicI64,
    /// maxmemory-samples, maxmemory-eviction-tenacity, lazyfree-lazy-eviction (1 = yes):
    /// read by each eviction cycle.
    pub maxmemory_samples: AtomicI64,
    pub maxmemory_tenacity: AtomicI64,
    pub lazyfree_lazy_eviction: AtomicI64,
    /// maxmemory-clients (bytes, or a percentage of maxmemory stored negative): read by
    /// the cron's client eviction.
    pub maxmemory_clients: AtomicI64,
    /// offload-threshold: a command whose estimated cost reaches it runs on the
    /// background pool (0 = never), see [`crate::offload`].
    pub offload_threshold: AtomicI64,
    /// offload-nice: the nice value of the pool's threads, which each applies before its
    /// next command once it changes.
    pub offload_nice: AtomicI64,
    /// lazyfree-lazy-user-del (1 = yes): DEL frees big values as UNLINK does.
    pub lazyfree_lazy_user_del: AtomicI64,
    /// tracking-table-max-keys (0: no limit), read when client-side caching adds a key.
    pub tracking_table_max_keys: AtomicI64,
    /// min-replicas-to-write and min-replicas-max-lag (writes refused with -NOREPLICAS
    /// while fewer replicas are good; 0 of either: off).
    pub min_replicas_to_write: AtomicI64,
    pub min_replicas_max_lag: AtomicI64,
    /// replica-read-only, replica-serve-stale-data, replica-ignore-maxmemory (yes/no):
    /// read on a replica's command path.
    pub replica_read_only: AtomicBool,
    pub replica_serve_stale_data: AtomicBool,
    pub replica_ignore_maxmemory: AtomicBool,
}

/// The options behind [`engine::coll::Limits`], in its fields' order.
const COLL_LIMITS: [&str; 9] = [
    "list-max-listpack-size",
    "list-compress-depth",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "stream-node-max-bytes",
    "stream-node-max-entries",
];

impl Hot {
    /// The collection encoding thresholds now in force.
    pub fn coll_limits(&self) -> engine::coll::Limits {
        let v = |i: usize| self.coll[i].load(Relaxed);
        let u = |i: usize| v(i).max(0) as u64;
        engine::coll::Limits {
            list_max_listpack_size: v(0),
            list_compress_depth: v(1),
            hash_max_listpack_entries: u(2),
            hash_max_listpack_value: u(3),
            set_max_intset_entries: u(4),
            zset_max_listpack_entries: u(5),
            zset_max_listpack_value: u(6),
            stream_node_max_bytes: u(7),
            stream_node_max_entries: u(8),
        }
    }
}

/// The live configuration.
pub struct Config {
    /// Canonical value of each row of [`OPTIONS`] (unused for `dir`: the current directory).
    values: RwLock<Vec<String>>,
    /// `user` lines from the config file (kept for CONFIG REWRITE).
    pub users: Mutex<Vec<String>>,
    /// The config file given at start (absolute), for CONFIG REWRITE.
    pub file: Option<std::path::PathBuf>,
    pub hot: Hot,
}

impl Default for Config {
    fn default() -> Self {
        let c = Config {
            values: RwLock::new(OPTIONS.iter().map(value::default_text).collect()),
            users: Mutex::new(Vec::new()),
            file: None,
            hot: Hot::default(),
        };
        c.refresh_hot();
        c
    }
}

/// Why CONFIG SET refused (the full error reply, without the leading '-'); it may quote
/// the client's bytes.
pub type SetError = Vec<u8>;

impl Config {
    /// Recompute [`Hot`] from the values.
    fn refresh_hot(&self) {
        self.hot
            .tracking_table_max_keys
            .store(self.get_i64("tracking-table-max-keys"), Relaxed);
        self.hot
            .min_replicas_to_write
            .store(self.get_i64("min-replicas-to-write"), Relaxed);
        self.hot
            .min_replicas_max_lag
            .store(self.get_i64("min-replicas-max-lag"), Relaxed);
        for (hot, name) in [
            (&self.hot.replica_read_only, "replica-read-only"),
            (
                &self.hot.replica_serve_stale_data,
                "replica-serve-stale-data",
            ),
            (
                &self.hot.replica_ignore_maxmemory,
                "replica-ignore-maxmemory",
            ),
        ] {
            hot.store(self.get_bool(name), Relaxed);
        }
        self.hot
            .proto_max_bulk_len
            .store(self.get_i64("proto-max-bulk-len"), Relaxed);
        self.hot
            .client_query_buffer_limit
            .store(self.get_i64("client-query-buffer-limit"), Relaxed);
        let limits = value::read_obuf(&self.get("client-output-buffer-limit"));
        for (hot, (hard, soft, secs)) in self.hot.obuf_limits.iter().zip(limits) {
            hot[0].store(hard.min(i64::MAX as u64) as i64, Relaxed);
            hot[1].store(soft.min(i64::MAX as u64) as i64, Relaxed);
            hot[2].store(secs, Relaxed);
        }
        self.hot
            .slowlog_slower_than
            .store(self.get_i64("slowlog-log-slower-than"), Relaxed);
        self.hot
            .latency_threshold_ms
            .store(self.get_i64("latency-monitor-threshold"), Relaxed);
        self.hot
            .latency_tracking
            .store(self.get_bool("latency-tracking") as i64, Relaxed);
        let events = lookup("notify-keyspace-events")
            .and_then(|e| value::keyspace_events_flags(&self.values.read()[e.index]));
        self.hot
            .notify_flags
            .store(i64::from(events.unwrap_or(0)), Relaxed);
        self.hot
            .hll_sparse_max_bytes
            .store(self.get_i64("hll-sparse-max-bytes"), Relaxed);
        for (hot, name) in self.hot.coll.iter().zip(COLL_LIMITS) {
            hot.store(self.get_i64(name), Relaxed);
        }
        self.hot
            .offload_threshold
            .store(self.get_i64("offload-threshold"), Relaxed);
        self.hot
            .offload_nice
            .store(self.get_i64("offload-nice"), Relaxed);
        self.hot
            .lazyfree_lazy_user_del
            .store(self.get_bool("lazyfree-lazy-user-del") as i64, Relaxed);
        crate::lazyfree::LAZY_EXPIRE.store(self.get_bool("lazyfree-lazy-expire"), Relaxed);
        crate::lazyfree::LAZY_SERVER_DEL.store(self.get_bool("lazyfree-lazy-server-del"), Relaxed);
        self.hot
            .busy_reply_threshold_ms
            .store(self.get_i64("busy-reply-threshold"), Relaxed);
        let level = crate::log::level_of(&self.get("loglevel"));
        self.hot.log_level.store(i64::from(level), Relaxed);
        crate::log::set_verbosity(level);
        if self.refresh_maxmemory() {
            crate::evict::limit_changed(self.hot.maxmemory.load(Relaxed));
        }
    }

    /// The maxmemory options into [`Hot`] and the engine's access-field mode; returns
    /// whether `maxmemory` changed.
    fn refresh_maxmemory(&self) -> bool {
        let max = self.get("maxmemory").parse::<u64>().unwrap_or(0);
        let policy = crate::evict::Policy::from_name(&self.get("maxmemory-policy"));
        self.hot.maxmemory_policy.store(policy.index(), Relaxed);
        let hot = &self.hot;
        hot.maxmemory_samples
            .store(self.get_i64("maxmemory-samples"), Relaxed);
        hot.maxmemory_tenacity
            .store(self.get_i64("maxmemory-eviction-tenacity"), Relaxed);
        hot.lazyfree_lazy_eviction
            .store(self.get_bool("lazyfree-lazy-eviction") as i64, Relaxed);
        hot.maxmemory_clients
            .store(self.get_i64("maxmemory-clients"), Relaxed);
        engine::evict::access::configure(
            policy.is_lfu(),
            self.get_i64("lfu-log-factor").clamp(0, u32::MAX as i64) as u32,
            self.get_i64("lfu-decay-time").clamp(0, u32::MAX as i64) as u32,
        );
        self.hot.maxmemory.swap(max, Relaxed) != max
    }

    /// The canonical value of option `i` (CONFIG GET's text).
    fn value_at(&self, i: usize) -> String {
        match OPTIONS[i].kind {
            Kind::Special(Special::Dir) => return value::current_dir(),
            Kind::Special(Special::NotifyKeyspaceEvents) => {
                let stored = self.values.read()[i].clone();
                let flags = value::keyspace_events_flags(&stored).unwrap_or(0);
                return value::keyspace_events_string(flags);
            }
            _ => {}
        }
        self.values.read()[i].clone()
    }

    /// An option's value as CONFIG GET prints it ("" for unknown names).
    pub fn get(&self, name: &str) -> String {
        lookup(name)
            .map(|e| self.value_at(e.index))
            .unwrap_or_default()
    }

    /// A numeric option's value (0 when not a number; percentages are negative).
    pub fn get_i64(&self, name: &str) -> i64 {
        match lookup(name) {
            Some(e) => match e.def().kind {
                Kind::Num { fmt, .. } => value::canonical_number(&self.value_at(e.index), fmt),
                _ => self.value_at(e.index).parse().unwrap_or(0),
            },
            None => 0,
        }
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// Store a canonical value directly (start-up loading, after checks).
    fn store(&self, index: usize, v: String) {
        if !matches!(OPTIONS[index].kind, Kind::Special(Special::Dir)) {
            self.values.write()[index] = v;
        }
    }

    /// Check `args` for option `name` and store the result, as a config-file line would.
    /// Returns Redis's reason text on error.
    pub fn set(&self, name: &str, args: &[String]) -> Result<(), String> {
        let e = lookup(name).ok_or("Bad directive or wrong number of arguments")?;
        let v = value::parse(e.def(), args, &self.value_at(e.index))?;
        self.store(e.index, apply(e.def(), v));
        self.refresh_hot();
        Ok(())
    }

    /// CONFIG SET name value [name value ...]: all or nothing, Redis's checks and errors in
    /// Redis's order. `local` says whether the client is local (enable-protected-configs).
    pub fn config_set(&self, pairs: &[(&[u8], &[u8])], local: bool) -> Result<(), SetError> {
        let text = |a: &[u8]| String::from_utf8_lossy(a).into_owned();
        let mut found: Vec<Entry> = Vec::new();
        for (raw_name, _) in pairs {
            let name = text(raw_name);
            let Some(e) = lookup(&name) else {
                return Err(crate::cmd::args::error_text(&[
                    b"ERR Unknown option or number of arguments for CONFIG SET - '",
                    crate::cmd::args::c_str(raw_name),
                    b"'",
                ]));
            };
            let def = e.def();
            let protected_ok = match self.get("enable-protected-configs").as_str() {
                "yes" => true,
                "local" => local,
                _ => false,
            };
            let reason = if def.has(IMMUTABLE) {
                Some("can't set immutable config")
            } else if def.has(PROTECTED) && !protected_ok {
                Some("can't set protected config")
            } else if found.iter().any(|f| f.name == e.name) {
                Some("duplicate parameter")
            } else {
                None
            };
            if let Some(r) = reason {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {r}"
                )
                .into());
            }
            found.push(e);
        }
        // Compute every new value against a working copy, then commit it whole.
        let old_dir = value::current_dir();
        let mut work: Vec<String> = self.values.read().clone();
        for (e, (_, raw)) in found.iter().zip(pairs) {
            let def = e.def();
            let raw = text(raw);
            let args: Vec<String> = if def.has(MULTI_ARG) {
                if raw.is_empty() {
                    Vec::new()
                } else {
                    raw.split(' ').map(String::from).collect()
                }
            } else {
                vec![raw]
            };
            let current = if matches!(def.kind, Kind::Special(Special::Dir)) {
                value::current_dir()
            } else {
                work[e.index].clone()
            };
            match value::parse(def, &args, &current) {
                Ok(v) => work[e.index] = apply(def, v),
                Err(reason) => {
                    if found.iter().any(|f| f.def().name == "dir") {
                        let _ = std::env::set_current_dir(&old_dir);
                    }
                    return Err(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{}') - {}",
                        e.name, reason
                    )
                    .into());
                }
            }
        }
        *self.values.write() = work;
        self.refresh_hot();
        Ok(())
    }

    /// CONFIG GET: (name, value) pairs for each pattern, names as Redis registers them;
    /// an exact name (no glob characters) matches case-insensitively and finds hidden
    /// options too, and is answered under the name as given.
    pub fn get_matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let seen = |out: &Vec<(String, String)>, n: &str| {
            out.iter().any(|(k, _)| k.eq_ignore_ascii_case(n))
        };
        for pat in patterns {
            let p = String::from_utf8_lossy(pat).into_owned();
            if !p.contains(['[', '*', '?']) {
                if seen(&out, &p) {
                    continue;
                }
                if let Some(e) = lookup(&p) {
                    out.push((p, self.value_at(e.index)));
                }
                continue;
            }
            for e in entries() {
                if e.def().has(HIDDEN) || seen(&out, e.name) {
                    continue;
                }
                if engine::glob::glob_match(pat, e.name.as_bytes(), true) {
                    out.push((e.name.to_string(), self.value_at(e.index)));
                }
            }
        }
        out
    }

    /// Effective worker count: `workers`, else `io-threads` if raised, else the cores.
    pub fn workers(&self) -> usize {
        let w = self.get_i64("workers");
        if w > 0 {
            return w as usize;
        }
        let io = self.get_i64("io-threads");
        if io > 1 {
            return io as usize;
        }
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    }
}

/// What Redis's apply step does to a freshly set value (hz is capped to 1..=500).
fn apply(def: &OptionDef, v: String) -> String {
    if def.name == "hz" {
        let hz: i64 = v.parse().unwrap_or(10);
        return hz.clamp(1, 500).to_string();
    }
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn coll_limits_follow_the_options() {
        let c = super::Config::default();
        assert_eq!(c.hot.coll_limits(), engine::coll::Limits::default());
        c.set("hash-max-ziplist-entries", &["7".into()]).unwrap();
        c.set("list-max-listpack-size", &["-3".into()]).unwrap();
        let l = c.hot.coll_limits();
        assert_eq!(l.hash_max_listpack_entries, 7);
        assert_eq!(l.list_max_listpack_size, -3);
    }

    use super::*;

    fn set(c: &Config, pairs: &[(&str, &str)]) -> Result<(), SetError> {
        let p: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
            .collect();
        c.config_set(&p, true)
    }

    #[test]
    fn defaults_print_as_redis() {
        let c = Config::default();
        assert_eq!(c.get("maxmemory"), "0");
        assert_eq!(c.get("proto-max-bulk-len"), "536870912");
        assert_eq!(c.get("slave-priority"), "100");
        assert_eq!(c.get("oom-score-adj"), "no");
        assert_eq!(c.get("unixsocketperm"), "0");
        assert_eq!(
            c.get("client-output-buffer-limit"),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
    }

    #[test]
    fn set_is_atomic_and_checked() {
        let c = Config::default();
        assert!(set(&c, &[("maxmemory", "1gb"), ("hz", "x")]).is_err());
        assert_eq!(c.get("maxmemory"), "0");
        set(&c, &[("maxmemory", "1gb"), ("hz", "1000")]).unwrap();
        assert_eq!(c.get("maxmemory"), "1073741824");
        assert_eq!(c.get("hz"), "500");
        assert_eq!(
            set(&c, &[("port", "1"), ("PORT", "2")]).unwrap_err(),
            b"ERR CONFIG SET failed (possibly related to argument 'PORT') - duplicate parameter"
        );
        set(&c, &[("proto-max-bulk-len", "2mb")]).unwrap();
        assert_eq!(c.hot.proto_max_bulk_len.load(Relaxed), 2 << 20);
        set(&c, &[("client-output-buffer-limit", "normal 1mb 0 0")]).unwrap();
        assert_eq!(c.hot.obuf_limits[0][0].load(Relaxed), 1 << 20);
    }
}
