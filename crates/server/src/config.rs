//! Configuration: Redis's `redis.conf` syntax, `--name value` overrides, CONFIG GET/SET.
//!
//! Every option is a row of [`OPTIONS`]: its name, aliases, kind (bool, integer with bounds,
//! memory size, enum, string) and default. Values are kept as their canonical text (what
//! CONFIG GET prints) and parsed by typed getters.

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// How an option's value is checked and printed.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    /// Integer within [min, max].
    Int(i64, i64),
    /// Memory amount (`1gb`, `100mb`, plain bytes) within [min, max] bytes.
    Mem(i64, i64),
    /// One of the listed words.
    Enum(&'static [&'static str]),
    Str,
    /// Space-separated list (bind, save...).
    List,
}

/// One configuration option.
pub struct OptionDef {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    /// Can CONFIG SET change it at run time?
    pub mutable: bool,
}

const fn opt(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> OptionDef {
    OptionDef {
        name,
        alias: None,
        kind,
        default,
        mutable,
    }
}

const I64MAX: i64 = i64::MAX;
const INTMAX: i64 = i32::MAX as i64;

/// The options Skein knows, Redis's names and defaults.
pub static OPTIONS: &[OptionDef] = &[
    opt("bind", Kind::List, "* -::*", true),
    opt("port", Kind::Int(0, 65535), "6379", true),
    opt("unixsocket", Kind::Str, "", false),
    opt("unixsocketperm", Kind::Int(0, 0o777), "0", false),
    opt("protected-mode", Kind::Bool, "yes", true),
    opt("timeout", Kind::Int(0, INTMAX), "0", true),
    opt("tcp-keepalive", Kind::Int(0, INTMAX), "300", true),
    opt("tcp-backlog", Kind::Int(0, INTMAX), "511", false),
    opt("maxclients", Kind::Int(1, INTMAX), "10000", true),
    opt("databases", Kind::Int(1, INTMAX), "16", false),
    opt("requirepass", Kind::Str, "", true),
    opt(
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        "notice",
        true,
    ),
    opt("logfile", Kind::Str, "", false),
    opt("pidfile", Kind::Str, "", false),
    opt("dir", Kind::Str, ".", true),
    opt("daemonize", Kind::Bool, "no", false),
    opt("io-threads", Kind::Int(1, 128), "1", false),
    opt("io-threads-do-reads", Kind::Bool, "no", false),
    opt("hz", Kind::Int(0, INTMAX), "10", true),
    opt("dynamic-hz", Kind::Bool, "yes", true),
    opt(
        "proto-max-bulk-len",
        Kind::Mem(1024 * 1024, I64MAX),
        "536870912",
        true,
    ),
    opt(
        "client-query-buffer-limit",
        Kind::Mem(1024 * 1024, I64MAX),
        "1073741824",
        true,
    ),
    opt(
        "client-output-buffer-limit",
        Kind::List,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
    ),
    opt("maxmemory", Kind::Mem(0, I64MAX), "0", true),
    opt(
        "maxmemory-policy",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        "noeviction",
        true,
    ),
    opt("maxmemory-samples", Kind::Int(1, INTMAX), "5", true),
    opt(
        "slowlog-log-slower-than",
        Kind::Int(-1, I64MAX),
        "10000",
        true,
    ),
    opt("slowlog-max-len", Kind::Int(0, I64MAX), "128", true),
    opt("latency-monitor-threshold", Kind::Int(0, I64MAX), "0", true),
    opt("latency-tracking", Kind::Bool, "yes", true),
    opt(
        "latency-tracking-info-percentiles",
        Kind::List,
        "50 99 99.9",
        true,
    ),
    opt("active-expire-effort", Kind::Int(1, 10), "1", true),
    opt("lazyfree-lazy-user-del", Kind::Bool, "no", true),
    opt("lazyfree-lazy-user-flush", Kind::Bool, "no", true),
    opt("lazyfree-lazy-expire", Kind::Bool, "no", true),
    opt("lazyfree-lazy-eviction", Kind::Bool, "no", true),
    opt("lazyfree-lazy-server-del", Kind::Bool, "no", true),
    opt("save", Kind::List, "3600 1 300 100 60 10000", true),
    opt("appendonly", Kind::Bool, "no", true),
    opt("dbfilename", Kind::Str, "dump.rdb", true),
    opt("appendfilename", Kind::Str, "appendonly.aof", false),
    opt(
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    opt(
        "enable-protected-configs",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    opt(
        "supervised",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        "no",
        false,
    ),
    opt("always-show-logo", Kind::Bool, "no", false),
    opt("set-proc-title", Kind::Bool, "yes", false),
    opt("lfu-log-factor", Kind::Int(0, INTMAX), "10", true),
    opt("lfu-decay-time", Kind::Int(0, INTMAX), "1", true),
    opt("notify-keyspace-events", Kind::Str, "", true),
    // Skein's own options.
    opt("workers", Kind::Int(0, 1024), "0", false),
    opt("shards-per-db", Kind::Int(1, 65536), "1024", false),
];

pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    let lower = name.to_ascii_lowercase();
    OPTIONS
        .iter()
        .find(|o| o.name == lower || o.alias == Some(lower.as_str()))
}

/// Parse a memory amount the way Redis's memtoull does: `1gb`, `10k`, `512`.
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let (num, mul): (&str, i64) = [
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1_000),
        ("b", 1),
    ]
    .iter()
    .find(|(suf, _)| lower.ends_with(suf))
    .map(|(suf, m)| (&lower[..lower.len() - suf.len()], *m))
    .unwrap_or((lower.as_str(), 1));
    let n: i64 = resp::parse::parse_i64(num.as_bytes())?;
    if n < 0 {
        return None;
    }
    n.checked_mul(mul)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Check and canonicalize `value` for `def`, or give Redis's error text.
pub fn normalize(def: &OptionDef, args: &[String]) -> Result<String, String> {
    match def.kind {
        Kind::List => Ok(args.join(" ")),
        _ if args.len() != 1 => Err("wrong number of arguments".to_string()),
        Kind::Bool => parse_bool(&args[0])
            .map(|b| if b { "yes" } else { "no" }.to_string())
            .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
        Kind::Int(min, max) => {
            let n = resp::parse::parse_i64(args[0].as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Mem(min, max) => {
            let n = parse_memory(&args[0])
                .ok_or_else(|| "argument must be a memory value".to_string())?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Enum(words) => {
            let lower = args[0].to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                ))
            }
        }
        Kind::Str => Ok(args[0].clone()),
    }
}

/// Values read on every command, kept as atomics so the command path takes no lock.
#[derive(Default)]
pub struct Hot {
    pub proto_max_bulk_len: AtomicI64,
    pub client_query_buffer_limit: AtomicI64,
    /// Hard output-buffer limit for normal clients (0 = none).
    pub output_hard_limit: AtomicI64,
    /// slowlog-log-slower-than (µs; negative disables the slow log).
    pub slowlog_slower_than: AtomicI64,
    /// latency-monitor-threshold (ms; 0 disables the latency monitor).
    pub latency_threshold_ms: AtomicI64,
    /// latency-tracking (1 = yes): per-command latency histograms.
    pub latency_tracking: AtomicI64,
}

/// The live configuration.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    /// The config file given at start, for CONFIG REWRITE.
    pub file: Option<std::path::PathBuf>,
    pub hot: Hot,
}

impl Default for Config {
    fn default() -> Self {
        let c = Config {
            values: RwLock::new(
                OPTIONS
                    .iter()
                    .map(|o| (o.name, o.default.to_string()))
                    .collect(),
            ),
            file: None,
            hot: Hot::default(),
        };
        c.refresh_hot();
        c
    }
}

impl Config {
    /// Recompute [`Hot`] from the values.
    fn refresh_hot(&self) {
        self.hot
            .proto_max_bulk_len
            .store(self.get_i64("proto-max-bulk-len"), Relaxed);
        self.hot
            .client_query_buffer_limit
            .store(self.get_i64("client-query-buffer-limit"), Relaxed);
        let spec = self.get("client-output-buffer-limit");
        let words: Vec<&str> = spec.split_whitespace().collect();
        let hard = words
            .iter()
            .position(|w| *w == "normal")
            .and_then(|i| words.get(i + 1))
            .and_then(|w| parse_memory(w))
            .unwrap_or(0);
        self.hot.output_hard_limit.store(hard, Relaxed);
        self.hot
            .slowlog_slower_than
            .store(self.get_i64("slowlog-log-slower-than"), Relaxed);
        self.hot
            .latency_threshold_ms
            .store(self.get_i64("latency-monitor-threshold"), Relaxed);
        self.hot
            .latency_tracking
            .store(self.get_bool("latency-tracking") as i64, Relaxed);
    }

    pub fn get(&self, name: &str) -> String {
        self.values.read().get(name).cloned().unwrap_or_default()
    }

    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(0)
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// Set after checking; `args` are the directive's arguments.
    pub fn set(&self, name: &str, args: &[String]) -> Result<(), String> {
        let def = find_option(name)
            .ok_or_else(|| "Bad directive or wrong number of arguments".to_string())?;
        let v = normalize(def, args)?;
        self.values.write().insert(def.name, v);
        self.refresh_hot();
        Ok(())
    }

    /// All (name, value) pairs whose name matches `pattern` (CONFIG GET).
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let values = self.values.read();
        OPTIONS
            .iter()
            .filter(|o| {
                engine::glob::glob_match(pattern, o.name.as_bytes(), true)
                    || o.alias
                        .is_some_and(|a| engine::glob::glob_match(pattern, a.as_bytes(), true))
            })
            .map(|o| (o.name, values.get(o.name).cloned().unwrap_or_default()))
            .collect()
    }

    /// Load `text` (a config file's contents, then the command-line overrides), reporting
    /// errors as Redis does at startup.
    pub fn load_text(
        &self,
        text: &str,
        base_dir: &std::path::Path,
        depth: usize,
    ) -> Result<(), String> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    i + 1,
                    line,
                    msg
                )
            };
            let Some(args) = resp::parse::split_args(line.as_bytes()) else {
                return Err(fail("Unbalanced quotes in configuration line"));
            };
            let args: Vec<String> = args
                .into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect();
            if args.is_empty() {
                continue;
            }
            let name = args[0].to_ascii_lowercase();
            if name == "include" {
                if args.len() != 2 {
                    return Err(fail("Bad directive or wrong number of arguments"));
                }
                if depth > 16 {
                    return Err(fail("Too many nested includes"));
                }
                let path = base_dir.join(&args[1]);
                let inner = std::fs::read_to_string(&path).map_err(|e| {
                    format!(
                        "Fatal error, can't open config file '{}': {}",
                        path.display(),
                        e
                    )
                })?;
                self.load_text(&inner, base_dir, depth + 1)?;
                continue;
            }
            let Some(def) = find_option(&name) else {
                return Err(fail("Bad directive or wrong number of arguments"));
            };
            let value = normalize(def, &args[1..]).map_err(|e| fail(&e))?;
            self.values.write().insert(def.name, value);
        }
        self.refresh_hot();
        Ok(())
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

/// Turn `skein-server [file] [--name value ...] [-]` into config text, as Redis does:
/// each `--name` starts a new line and the words after it are its arguments.
pub fn args_to_text(args: &[String]) -> (Option<String>, String) {
    let mut file = None;
    let mut rest = args;
    if let Some(first) = args.first() {
        if !first.starts_with("--") {
            file = Some(first.clone());
            rest = &args[1..];
        }
    }
    let mut text = String::new();
    for a in rest {
        if let Some(name) = a.strip_prefix("--") {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(name);
        } else {
            text.push(' ');
            text.push_str(&quote_arg(a));
        }
    }
    (file, text)
}

/// Quote an argument for the config line splitter (Redis's sdscatrepr).
pub fn quote_arg(a: &str) -> String {
    let mut s = String::from("\"");
    for c in a.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("512"), Some(512));
        assert_eq!(parse_memory("x"), None);
    }

    #[test]
    fn overrides_and_errors() {
        let c = Config::default();
        let (file, text) =
            args_to_text(&["--port".into(), "7000".into(), "--save".into(), "".into()]);
        assert!(file.is_none());
        c.load_text(&text, std::path::Path::new("."), 0).unwrap();
        assert_eq!(c.get("port"), "7000");
        assert_eq!(c.get("save"), "");
        let err = c
            .load_text("bogus 1", std::path::Path::new("."), 0)
            .unwrap_err();
        assert!(err.contains("Bad directive or wrong number of arguments"));
        assert!(err.contains(">>> 'bogus 1'"));
    }
}
