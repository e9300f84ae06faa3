//! The option table: every option of Redis 7.0.15's `standardConfig` table (names,
//! aliases, flags, types, defaults, bounds, enum words), plus Skein's own. Data only:
//! how a kind is parsed and printed lives in [`super::value`].

use super::value::{check, Check};

/// CONFIG SET refuses it ("can't set immutable config").
pub const IMMUTABLE: u32 = 1 << 0;
/// CONFIG SET allows it only with `enable-protected-configs`.
pub const PROTECTED: u32 = 1 << 1;
/// Its value is redacted from logs (slowlog, monitor).
pub const SENSITIVE: u32 = 1 << 2;
/// CONFIG SET refuses it while loading a dataset.
pub const DENY_LOADING: u32 = 1 << 3;
/// CONFIG GET shows it only for its exact name, never for a pattern.
pub const HIDDEN: u32 = 1 << 4;
/// Takes several arguments (`save 3600 1 300 100`); CONFIG SET splits its value on spaces.
pub const MULTI_ARG: u32 = 1 << 5;
/// Listed by Redis's DEBUG config dump (informational).
pub const DEBUG: u32 = 1 << 6;
/// Setting it to the same value still counts as a change.
pub const VOLATILE: u32 = 1 << 7;

/// How a numeric option is written and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumFmt {
    Int,
    /// Memory units accepted (`1gb`), printed in bytes, rewritten with units.
    Mem,
    /// Memory, or a percentage (`10%`, kept as a negative number).
    MemPercent,
    /// Written and printed in octal (`unixsocketperm`).
    Octal,
}

/// The options whose value is not a single typed word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    Dir,
    Save,
    ClientOutputBufferLimit,
    OomScoreAdjValues,
    NotifyKeyspaceEvents,
    Bind,
    ReplicaOf,
    LatencyPercentiles,
}

/// An enumeration's words and values (several may share a value; bit flags for
/// MULTI_ARG enums).
pub type EnumWords = &'static [(&'static str, i32)];

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool {
        default: bool,
        check: Option<Check>,
    },
    /// `default: None` is Redis's NULL; `empty_null`: an empty value is stored as NULL.
    Str {
        default: Option<&'static str>,
        empty_null: bool,
        check: Option<Check>,
    },
    Enum {
        words: EnumWords,
        default: i32,
        check: Option<Check>,
    },
    /// Integer within [min, max] (C `long long` bits); `unsigned`: compared as unsigned.
    Num {
        min: i64,
        max: i64,
        default: i64,
        unsigned: bool,
        fmt: NumFmt,
    },
    Special(Special),
}

pub struct OptionDef {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub flags: u32,
    pub kind: Kind,
}

impl OptionDef {
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

const fn b(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    default: bool,
) -> OptionDef {
    OptionDef {
        name,
        alias,
        flags,
        kind: Kind::Bool {
            default,
            check: None,
        },
    }
}

const fn bc(name: &'static str, flags: u32, default: bool, check: Check) -> OptionDef {
    OptionDef {
        name,
        alias: None,
        flags,
        kind: Kind::Bool {
            default,
            check: Some(check),
        },
    }
}

/// A string option; `empty_null` as Redis's EMPTY_STRING_IS_NULL.
const fn s(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    empty_null: bool,
    default: Option<&'static str>,
    check: Option<Check>,
) -> OptionDef {
    OptionDef {
        name,
        alias,
        flags,
        kind: Kind::Str {
            default,
            empty_null,
            check,
        },
    }
}

const fn e(name: &'static str, flags: u32, words: EnumWords, default: i32) -> OptionDef {
    OptionDef {
        name,
        alias: None,
        flags,
        kind: Kind::Enum {
            words,
            default,
            check: None,
        },
    }
}

const fn ec(name: &'static str, flags: u32, words: EnumWords, default: i32, c: Check) -> OptionDef {
    OptionDef {
        name,
        alias: None,
        flags,
        kind: Kind::Enum {
            words,
            default,
            check: Some(c),
        },
    }
}

/// A numeric option; `unsigned` for C unsigned int, unsigned long long and size_t.
#[allow(clippy::too_many_arguments)]
const fn num(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    min: i64,
    max: i64,
    default: i64,
    fmt: NumFmt,
    unsigned: bool,
) -> OptionDef {
    OptionDef {
        name,
        alias,
        flags,
        kind: Kind::Num {
            min,
            max,
            default,
            unsigned,
            fmt,
        },
    }
}

/// A signed numeric option.
const fn n(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    min: i64,
    max: i64,
    default: i64,
    fmt: NumFmt,
) -> OptionDef {
    num(name, alias, flags, min, max, default, fmt, false)
}

/// An unsigned numeric option (C unsigned int, unsigned long long, size_t).
const fn u(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    min: i64,
    max: i64,
    default: i64,
    fmt: NumFmt,
) -> OptionDef {
    num(name, alias, flags, min, max, default, fmt, true)
}

const fn sp(name: &'static str, alias: Option<&'static str>, flags: u32, k: Special) -> OptionDef {
    OptionDef {
        name,
        alias,
        flags,
        kind: Kind::Special(k),
    }
}

const M: u32 = 0; // MODIFIABLE_CONFIG
const I: u32 = IMMUTABLE;
const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const UINT_MAX: i64 = u32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
/// ULLONG_MAX as C stores it in a `long long` bound.
const ULLONG_MAX: i64 = -1;
const MB: i64 = 1024 * 1024;

use NumFmt::{Int, Mem, MemPercent, Octal};

pub const MAXMEMORY_POLICY: EnumWords = &[
    ("volatile-lru", 1),
    ("volatile-lfu", 2),
    ("volatile-random", 3),
    ("volatile-ttl", 4),
    ("allkeys-lru", 5),
    ("allkeys-lfu", 6),
    ("allkeys-random", 7),
    ("noeviction", 8),
];
const SYSLOG_FACILITY: EnumWords = &[
    ("user", 8),
    ("local0", 128),
    ("local1", 136),
    ("local2", 144),
    ("local3", 152),
    ("local4", 160),
    ("local5", 168),
    ("local6", 176),
    ("local7", 184),
];
pub const LOGLEVEL: EnumWords = &[("debug", 0), ("verbose", 1), ("notice", 2), ("warning", 3)];
const SUPERVISED: EnumWords = &[("upstart", 1), ("systemd", 2), ("auto", 3), ("no", 0)];
const AOF_FSYNC: EnumWords = &[("everysec", 2), ("always", 1), ("no", 0)];
pub const SHUTDOWN_ON_SIG: EnumWords = &[
    ("default", 0),
    ("save", 1),
    ("nosave", 2),
    ("now", 4),
    ("force", 8),
];
const REPL_DISKLESS_LOAD: EnumWords = &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)];
const TLS_AUTH_CLIENTS: EnumWords = &[("no", 0), ("yes", 1), ("optional", 2)];
const OOM_SCORE_ADJ: EnumWords = &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)];
const ACL_PUBSUB_DEFAULT: EnumWords = &[("allchannels", 8), ("resetchannels", 0)];
const SANITIZE_DUMP: EnumWords = &[("no", 0), ("yes", 1), ("clients", 2)];
pub const PROTECTED_ACTION: EnumWords = &[("no", 0), ("yes", 1), ("local", 2)];
const ENDPOINT_TYPE: EnumWords = &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)];
const PROPAGATION_ERROR: EnumWords = &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)];

/// Every option, in Redis's table order, then Skein's own.
#[rustfmt::skip]
pub static OPTIONS: &[OptionDef] = &[
    // Bool configs
    b("rdbchecksum", None, I, true),
    b("daemonize", None, I, false),
    b("io-threads-do-reads", None, DEBUG | I, false),
    b("always-show-logo", None, I, false),
    b("protected-mode", None, M, true),
    b("rdbcompression", None, M, true),
    b("rdb-del-sync-files", None, M, false),
    b("activerehashing", None, M, true),
    b("stop-writes-on-bgsave-error", None, M, true),
    b("set-proc-title", None, I, true),
    b("dynamic-hz", None, M, true),
    b("lazyfree-lazy-eviction", None, DEBUG | M, false),
    b("lazyfree-lazy-expire", None, DEBUG | M, false),
    b("lazyfree-lazy-server-del", None, DEBUG | M, false),
    b("lazyfree-lazy-user-del", None, DEBUG | M, false),
    b("lazyfree-lazy-user-flush", None, DEBUG | M, false),
    b("repl-disable-tcp-nodelay", None, M, false),
    b("repl-diskless-sync", None, DEBUG | M, true),
    b("aof-rewrite-incremental-fsync", None, M, true),
    b("no-appendfsync-on-rewrite", None, M, false),
    b("cluster-require-full-coverage", None, M, true),
    b("rdb-save-incremental-fsync", None, M, true),
    b("aof-load-truncated", None, M, true),
    b("aof-use-rdb-preamble", None, M, true),
    b("aof-timestamp-enabled", None, M, false),
    b("cluster-replica-no-failover", Some("cluster-slave-no-failover"), M, false),
    b("replica-lazy-flush", Some("slave-lazy-flush"), M, false),
    b("replica-serve-stale-data", Some("slave-serve-stale-data"), M, true),
    b("replica-read-only", Some("slave-read-only"), DEBUG | M, true),
    b("replica-ignore-maxmemory", Some("slave-ignore-maxmemory"), M, true),
    b("jemalloc-bg-thread", None, M, true),
    bc("activedefrag", DEBUG | M, false, check::active_defrag),
    b("syslog-enabled", None, I, false),
    b("cluster-enabled", None, I, false),
    b("appendonly", None, M | DENY_LOADING, false),
    b("cluster-allow-reads-when-down", None, M, false),
    b("cluster-allow-pubsubshard-when-down", None, M, true),
    b("crash-log-enabled", None, M, true),
    b("crash-memcheck-enabled", None, M, true),
    b("use-exit-on-panic", None, M | HIDDEN, false),
    b("disable-thp", None, I, true),
    b("cluster-allow-replica-migration", None, M, true),
    b("replica-announced", None, M, true),
    b("latency-tracking", None, M, true),
    b("aof-disable-auto-gc", None, M, false),
    b("replica-ignore-disk-write-errors", None, M, false),

    // String configs
    s("aclfile", None, I, false, Some(""), None),
    s("unixsocket", None, I, true, None, None),
    s("pidfile", None, I, true, None, None),
    s("replica-announce-ip", Some("slave-announce-ip"), M, true, None, None),
    s("masteruser", None, M | SENSITIVE, true, None, None),
    s("cluster-announce-ip", None, M, true, None, None),
    s("cluster-config-file", None, I, false, Some("nodes.conf"), None),
    s("cluster-announce-hostname", None, M, true, None, Some(check::hostname)),
    s("syslog-ident", None, I, false, Some("redis"), None),
    s("dbfilename", None, M | PROTECTED, false, Some("dump.rdb"), Some(check::db_filename)),
    s("appendfilename", None, I, false, Some("appendonly.aof"), Some(check::aof_filename)),
    s("appenddirname", None, I, false, Some("appendonlydir"), Some(check::aof_dirname)),
    s("server_cpulist", None, I, true, None, None),
    s("bio_cpulist", None, I, true, None, None),
    s("aof_rewrite_cpulist", None, I, true, None, None),
    s("bgsave_cpulist", None, I, true, None, None),
    s("ignore-warnings", None, M, false, Some(""), None),
    s("proc-title-template", None, M, false, Some("{title} {listen-addr} {server-mode}"), Some(check::proc_title)),
    s("bind-source-addr", None, M, true, None, None),
    s("logfile", None, I, false, Some(""), None),
    // SDS configs
    s("masterauth", None, M | SENSITIVE, true, None, None),
    s("requirepass", None, M | SENSITIVE, true, None, None),

    // Enum configs
    e("supervised", I, SUPERVISED, 0),
    e("syslog-facility", I, SYSLOG_FACILITY, 128),
    e("repl-diskless-load", DEBUG | M | DENY_LOADING, REPL_DISKLESS_LOAD, 0),
    e("loglevel", M, LOGLEVEL, 2),
    e("maxmemory-policy", M, MAXMEMORY_POLICY, 8),
    e("appendfsync", M, AOF_FSYNC, 2),
    e("oom-score-adj", M, OOM_SCORE_ADJ, 0),
    e("acl-pubsub-default", M, ACL_PUBSUB_DEFAULT, 0),
    e("sanitize-dump-payload", DEBUG | M, SANITIZE_DUMP, 0),
    e("enable-protected-configs", I, PROTECTED_ACTION, 0),
    e("enable-debug-command", I, PROTECTED_ACTION, 0),
    e("enable-module-command", I, PROTECTED_ACTION, 0),
    e("cluster-preferred-endpoint-type", M, ENDPOINT_TYPE, 0),
    e("propagation-error-behavior", M, PROPAGATION_ERROR, 0),
    ec("shutdown-on-sigint", M | MULTI_ARG, SHUTDOWN_ON_SIG, 0, check::shutdown_flags),
    ec("shutdown-on-sigterm", M | MULTI_ARG, SHUTDOWN_ON_SIG, 0, check::shutdown_flags),

    // Integer configs
    n("databases", None, I, 1, INT_MAX, 16, Int),
    n("port", None, M, 0, 65535, 6379, Int),
    n("io-threads", None, DEBUG | I, 1, 128, 1, Int),
    n("auto-aof-rewrite-percentage", None, M, 0, INT_MAX, 100, Int),
    n("cluster-replica-validity-factor", Some("cluster-slave-validity-factor"), M, 0, INT_MAX, 10, Int),
    n("list-max-listpack-size", Some("list-max-ziplist-size"), M, INT_MIN, INT_MAX, -2, Int),
    n("tcp-keepalive", None, M, 0, INT_MAX, 300, Int),
    n("cluster-migration-barrier", None, M, 0, INT_MAX, 1, Int),
    n("active-defrag-cycle-min", None, M, 1, 99, 1, Int),
    n("active-defrag-cycle-max", None, M, 1, 99, 25, Int),
    n("active-defrag-threshold-lower", None, M, 0, 1000, 10, Int),
    n("active-defrag-threshold-upper", None, M, 0, 1000, 100, Int),
    n("lfu-log-factor", None, M, 0, INT_MAX, 10, Int),
    n("lfu-decay-time", None, M, 0, INT_MAX, 1, Int),
    n("replica-priority", Some("slave-priority"), M, 0, INT_MAX, 100, Int),
    n("repl-diskless-sync-delay", None, M, 0, INT_MAX, 5, Int),
    n("maxmemory-samples", None, M, 1, INT_MAX, 5, Int),
    n("maxmemory-eviction-tenacity", None, M, 0, 100, 10, Int),
    n("timeout", None, M, 0, INT_MAX, 0, Int),
    n("replica-announce-port", Some("slave-announce-port"), M, 0, 65535, 0, Int),
    n("tcp-backlog", None, I, 0, INT_MAX, 511, Int),
    n("cluster-port", None, I, 0, 65535, 0, Int),
    n("cluster-announce-bus-port", None, M, 0, 65535, 0, Int),
    n("cluster-announce-port", None, M, 0, 65535, 0, Int),
    n("cluster-announce-tls-port", None, M, 0, 65535, 0, Int),
    n("repl-timeout", None, M, 1, INT_MAX, 60, Int),
    n("repl-ping-replica-period", Some("repl-ping-slave-period"), M, 1, INT_MAX, 10, Int),
    n("list-compress-depth", None, DEBUG | M, 0, INT_MAX, 0, Int),
    n("rdb-key-save-delay", None, M | HIDDEN, INT_MIN, INT_MAX, 0, Int),
    n("key-load-delay", None, M | HIDDEN, INT_MIN, INT_MAX, 0, Int),
    n("active-expire-effort", None, M, 1, 10, 1, Int),
    n("hz", None, M, 0, INT_MAX, 10, Int),
    n("min-replicas-to-write", Some("min-slaves-to-write"), M, 0, INT_MAX, 0, Int),
    n("min-replicas-max-lag", Some("min-slaves-max-lag"), M, 0, INT_MAX, 10, Int),
    n("watchdog-period", None, M | HIDDEN, 0, INT_MAX, 0, Int),
    n("shutdown-timeout", None, M, 0, INT_MAX, 10, Int),
    n("repl-diskless-sync-max-replicas", None, M, 0, INT_MAX, 0, Int),
    // Unsigned int configs
    u("maxclients", None, M, 1, UINT_MAX, 10000, Int),
    u("unixsocketperm", None, I, 0, 0o777, 0, Octal),
    u("socket-mark-id", None, I, 0, UINT_MAX, 0, Int),
    // Unsigned long configs (checked as signed, as Redis does)
    n("active-defrag-max-scan-fields", None, M, 1, LONG_MAX, 1000, Int),
    n("slowlog-max-len", None, M, 0, LONG_MAX, 128, Int),
    n("acllog-max-len", None, M, 0, LONG_MAX, 128, Int),
    // Long long configs
    n("busy-reply-threshold", Some("lua-time-limit"), M, 0, LONG_MAX, 5000, Int),
    n("cluster-node-timeout", None, M, 0, LONG_MAX, 15000, Int),
    n("slowlog-log-slower-than", None, M, -1, LONG_MAX, 10000, Int),
    n("latency-monitor-threshold", None, M, 0, LONG_MAX, 0, Int),
    n("proto-max-bulk-len", None, DEBUG | M, MB, LONG_MAX, 512 * MB, Mem),
    n("stream-node-max-entries", None, M, 0, LONG_MAX, 100, Int),
    n("repl-backlog-size", None, M, 1, LONG_MAX, MB, Mem),
    // Unsigned long long configs
    u("maxmemory", None, M, 0, ULLONG_MAX, 0, Mem),
    u("cluster-link-sendbuf-limit", None, M, 0, ULLONG_MAX, 0, Mem),
    // Size_t configs
    u("hash-max-listpack-entries", Some("hash-max-ziplist-entries"), M, 0, LONG_MAX, 512, Int),
    u("set-max-intset-entries", None, M, 0, LONG_MAX, 512, Int),
    u("zset-max-listpack-entries", Some("zset-max-ziplist-entries"), M, 0, LONG_MAX, 128, Int),
    u("active-defrag-ignore-bytes", None, M, 1, LONG_MAX, 100 * MB, Mem),
    u("hash-max-listpack-value", Some("hash-max-ziplist-value"), M, 0, LONG_MAX, 64, Mem),
    u("stream-node-max-bytes", None, M, 0, LONG_MAX, 4096, Mem),
    u("zset-max-listpack-value", Some("zset-max-ziplist-value"), M, 0, LONG_MAX, 64, Mem),
    u("hll-sparse-max-bytes", None, M, 0, LONG_MAX, 3000, Mem),
    u("tracking-table-max-keys", None, M, 0, LONG_MAX, 1_000_000, Int),
    u("client-query-buffer-limit", None, DEBUG | M, MB, LONG_MAX, 1024 * MB, Mem),
    n("maxmemory-clients", None, M, -100, LONG_MAX, 0, MemPercent),
    // Other configs
    n("repl-backlog-ttl", None, M, 0, LONG_MAX, 3600, Int),
    n("auto-aof-rewrite-min-size", None, M, 0, LONG_MAX, 64 * MB, Mem),
    n("loading-process-events-interval-bytes", None, M | HIDDEN, 1024, INT_MAX, 2 * MB, Int),

    // TLS configs (Debian's redis-server is built with TLS)
    n("tls-port", None, M, 0, 65535, 0, Int),
    n("tls-session-cache-size", None, M, 0, INT_MAX, 20 * 1024, Int),
    n("tls-session-cache-timeout", None, M, 0, INT_MAX, 300, Int),
    b("tls-cluster", None, M, false),
    b("tls-replication", None, M, false),
    e("tls-auth-clients", M, TLS_AUTH_CLIENTS, 1),
    b("tls-prefer-server-ciphers", None, M, false),
    b("tls-session-caching", None, M, true),
    s("tls-cert-file", None, VOLATILE | M, true, None, None),
    s("tls-key-file", None, VOLATILE | M, true, None, None),
    s("tls-key-file-pass", None, M, true, None, None),
    s("tls-client-cert-file", None, VOLATILE | M, true, None, None),
    s("tls-client-key-file", None, VOLATILE | M, true, None, None),
    s("tls-client-key-file-pass", None, M, true, None, None),
    s("tls-dh-params-file", None, VOLATILE | M, true, None, None),
    s("tls-ca-cert-file", None, VOLATILE | M, true, None, None),
    s("tls-ca-cert-dir", None, VOLATILE | M, true, None, None),
    s("tls-protocols", None, M, true, None, None),
    s("tls-ciphers", None, M, true, None, None),
    s("tls-ciphersuites", None, M, true, None, None),

    // Special configs
    sp("dir", None, M | PROTECTED | DENY_LOADING, Special::Dir),
    sp("save", None, M | MULTI_ARG, Special::Save),
    sp("client-output-buffer-limit", None, M | MULTI_ARG, Special::ClientOutputBufferLimit),
    sp("oom-score-adj-values", None, M | MULTI_ARG, Special::OomScoreAdjValues),
    sp("notify-keyspace-events", None, M, Special::NotifyKeyspaceEvents),
    sp("bind", None, M | MULTI_ARG, Special::Bind),
    sp("replicaof", Some("slaveof"), I | MULTI_ARG, Special::ReplicaOf),
    sp("latency-tracking-info-percentiles", None, M | MULTI_ARG, Special::LatencyPercentiles),

    // Skein's own options
    n("workers", None, I, 0, 1024, 0, Int),
    n("shards-per-db", None, I, 1, 65536, 1024, Int),
    n("metrics-port", None, M, 0, 65535, 0, Int),
    s("metrics-bind", None, M, false, Some("127.0.0.1"), None),
    n("offload-threshold", None, M, 0, i64::MAX, 20000, Int),
    n("offload-threads", None, I, 0, 1024, 0, Int),
    n("offload-nice", None, M, -20, 19, 10, Int),
];

/// Lines Redis 7.0 still accepts and ignores (name, min args, max args incl. the name).
pub const DEPRECATED: &[(&str, usize, usize)] = &[
    ("list-max-ziplist-entries", 2, 2),
    ("list-max-ziplist-value", 2, 2),
    ("lua-replicate-commands", 2, 2),
];
