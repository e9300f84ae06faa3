//! What `/metrics` shows: INFO's figures under the names the widely used Prometheus
//! exporter for Redis (oliver006/redis_exporter) gives them, so its dashboards and alert
//! rules work unchanged, plus Skein's own: the engine threads' CPU and load, and shard
//! lock waits.
//!
//! INFO stays the one place each figure is computed: the page is made from the text of
//! `INFO default commandstats`, field by field through [`FIELDS`] (the exporter's renames), and
//! its commandstats, errorstats and keyspace lines as the exporter reads them. Per-command
//! latency histograms come from the same HdrHistograms as LATENCY HISTOGRAM.

use super::exposition::{Kind, Page};
use super::names::FIELDS;
use crate::server::Server;
use crate::stats::totals;
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

/// Upper bounds of the latency histograms' buckets, µs: powers of two from 1 µs to about
/// one second (the exporter's `redis_commands_latencies_usec` buckets are LATENCY
/// HISTOGRAM's, also powers of two in µs).
const LATENCY_BUCKETS_US: [u64; 21] = {
    let mut b = [0u64; 21];
    let mut i = 0;
    while i < b.len() {
        b[i] = 1 << i;
        i += 1;
    }
    b
};

/// The whole `/metrics` page.
pub fn page(srv: &Server) -> String {
    let mut changes = engine::Changes::default();
    let mut keys = srv.keyspace.unlocked(0, &mut changes);
    let sections: [&[u8]; 2] = [b"default", b"commandstats"];
    let info = crate::cmd::info::generate(srv, &mut keys, &sections);
    let parsed = Info::parse(&info);
    let mut p = Page::default();
    p.single("redis_up", Kind::Gauge, "Whether the server is up.", 1.0);
    info_fields(&parsed, &mut p);
    instance(&parsed, &mut p);
    config(srv, &mut p);
    commands(&parsed, &mut p);
    latency_histograms(srv, &mut p);
    errors(&parsed, &mut p);
    keyspace(&parsed, &mut p);
    workers(srv, &mut p);
    offload(srv, &mut p);
    lock_waits(srv, &mut p);
    p.into_text()
}

/// INFO text as sections of (field, value) lines, in order.
struct Info<'a> {
    sections: Vec<(&'a str, Vec<(&'a str, &'a str)>)>,
    fields: HashMap<&'a str, &'a str>,
}

impl<'a> Info<'a> {
    fn parse(text: &'a str) -> Info<'a> {
        let mut sections: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
        let mut fields = HashMap::new();
        for line in text.split("\r\n") {
            if let Some(title) = line.strip_prefix("# ") {
                sections.push((title, Vec::new()));
            } else if let Some((k, v)) = line.split_once(':') {
                if let Some((_, s)) = sections.last_mut() {
                    s.push((k, v));
                }
                fields.insert(k, v);
            }
        }
        Info { sections, fields }
    }

    fn section(&self, title: &str) -> &[(&'a str, &'a str)] {
        self.sections
            .iter()
            .find(|(t, _)| *t == title)
            .map_or(&[], |(_, s)| s.as_slice())
    }
}

/// A field's value as the exporter reads it: a number, or ok/err as 1/0.
fn value(v: &str) -> Option<f64> {
    match v {
        "ok" | "true" => Some(1.0),
        "err" | "fail" | "false" => Some(0.0),
        _ => v.parse().ok(),
    }
}

fn info_fields(info: &Info, p: &mut Page) {
    for (field, name, kind) in FIELDS {
        let Some(v) = info.fields.get(field).and_then(|v| value(v)) else {
            continue;
        };
        let (name, v) = if *field == "latest_fork_usec" {
            ("latest_fork_seconds", v / 1e6)
        } else {
            (*name, v)
        };
        let name = format!("redis_{name}");
        p.single(&name, *kind, &format!("INFO {field}"), v);
    }
    if let Some(up) = info.fields.get("uptime_in_seconds").and_then(|v| value(v)) {
        let now = crate::persist::unix_secs() as f64;
        p.single(
            "redis_start_time_seconds",
            Kind::Gauge,
            "Start time of the server since unix epoch in seconds.",
            now - up,
        );
    }
}

fn instance(info: &Info, p: &mut Page) {
    const LABELS: [&str; 10] = [
        "role",
        "redis_version",
        "redis_build_id",
        "redis_mode",
        "os",
        "maxmemory_policy",
        "tcp_port",
        "run_id",
        "process_id",
        "master_replid",
    ];
    let mut labels: Vec<(&str, &str)> = LABELS
        .iter()
        .map(|l| (*l, info.fields.get(l).copied().unwrap_or("")))
        .collect();
    labels.push((
        "skein_version",
        info.fields.get("skein_version").copied().unwrap_or(""),
    ));
    p.family(
        "redis_instance_info",
        Kind::Gauge,
        "Information about the server.",
    );
    p.sample("redis_instance_info", &labels, 1.0);
}

/// The exporter's `redis_config_*` (from CONFIG GET).
fn config(srv: &Server, p: &mut Page) {
    for name in ["maxmemory", "maxclients"] {
        p.single(
            &format!("redis_config_{name}"),
            Kind::Gauge,
            &format!("CONFIG {name}"),
            srv.config.get_i64(name) as f64,
        );
    }
}

/// `cmdstat_<cmd>:calls=..,usec=..,usec_per_call=..,rejected_calls=..,failed_calls=..`.
fn commands(info: &Info, p: &mut Page) {
    let stats: Vec<(&str, HashMap<&str, f64>)> = info
        .section("Commandstats")
        .iter()
        .filter_map(|(k, v)| {
            let cmd = k.strip_prefix("cmdstat_")?;
            let kv = v
                .split(',')
                .filter_map(|p| p.split_once('='))
                .filter_map(|(a, b)| Some((a, b.parse().ok()?)))
                .collect();
            Some((cmd, kv))
        })
        .collect();
    let families: [(&str, &str, &str, f64); 4] = [
        ("redis_commands_total", "calls", "Calls per command.", 1.0),
        (
            "redis_commands_duration_seconds_total",
            "usec",
            "Time spent per command, seconds.",
            1e-6,
        ),
        (
            "redis_commands_rejected_calls_total",
            "rejected_calls",
            "Calls refused before running, per command.",
            1.0,
        ),
        (
            "redis_commands_failed_calls_total",
            "failed_calls",
            "Calls that ran and failed, per command.",
            1.0,
        ),
    ];
    for (name, field, help, scale) in families {
        p.family(name, Kind::Counter, help);
        for (cmd, kv) in &stats {
            p.sample(name, &[("cmd", cmd)], kv.get(field).unwrap_or(&0.0) * scale);
        }
    }
}

/// `redis_commands_latencies_usec{cmd}`: each command's latency histogram (µs buckets,
/// `_sum` in µs as the exporter does), from the HdrHistograms LATENCY HISTOGRAM reads;
/// bucket counts are within HdrHistogram's 1% precision at the bounds.
fn latency_histograms(srv: &Server, p: &mut Page) {
    const NAME: &str = "redis_commands_latencies_usec";
    p.family(
        NAME,
        Kind::Histogram,
        "A histogram of latencies per command.",
    );
    for c in srv.commands.all.iter() {
        let t = totals(&c.counters, true);
        let Some(h) = t.hist else {
            continue;
        };
        let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_US
            .iter()
            .map(|&us| (us as f64, h.count_between(0, us * 1000)))
            .collect();
        p.histogram(
            NAME,
            &[("cmd", &c.fullname)],
            &buckets,
            t.usec as f64,
            h.len(),
        );
    }
}

/// `errorstat_<ERR>:count=N`.
fn errors(info: &Info, p: &mut Page) {
    const NAME: &str = "redis_errors_total";
    p.family(NAME, Kind::Counter, "Error replies per error prefix.");
    for (k, v) in info.section("Errorstats") {
        let (Some(err), Some(n)) = (
            k.strip_prefix("errorstat_"),
            v.strip_prefix("count=").and_then(|n| n.parse().ok()),
        ) else {
            continue;
        };
        p.sample(NAME, &[("err", err)], n);
    }
}

/// `db<N>:keys=..,expires=..,avg_ttl=..`.
fn keyspace(info: &Info, p: &mut Page) {
    let dbs: Vec<(&str, HashMap<&str, f64>)> = info
        .section("Keyspace")
        .iter()
        .map(|(db, v)| {
            let kv = v
                .split(',')
                .filter_map(|p| p.split_once('='))
                .filter_map(|(a, b)| Some((a, b.parse().ok()?)))
                .collect();
            (*db, kv)
        })
        .collect();
    let families = [
        ("redis_db_keys", "keys", "Keys per database.", 1.0),
        (
            "redis_db_keys_expiring",
            "expires",
            "Keys with a TTL per database.",
            1.0,
        ),
        (
            "redis_db_avg_ttl_seconds",
            "avg_ttl",
            "Mean TTL of keys with one, seconds.",
            1e-3,
        ),
    ];
    for (name, field, help, scale) in families {
        p.family(name, Kind::Gauge, help);
        for (db, kv) in &dbs {
            p.sample(name, &[("db", db)], kv.get(field).unwrap_or(&0.0) * scale);
        }
    }
}

/// Skein's engine threads: CPU, load and traffic per worker.
fn workers(srv: &Server, p: &mut Page) {
    let loads = srv.stats.loads();
    p.single(
        "skein_engine_cpu_utilization",
        Kind::Gauge,
        "Engine (worker) threads' CPU, percent of their cores, over the last 1.6 s.",
        crate::threadload::engine_cpu_utilization(&loads),
    );
    let ws = &srv.stats.workers;
    let ids: Vec<String> = (0..ws.len()).map(|i| i.to_string()).collect();
    let secs = |us: u64| us as f64 / 1e6;
    p.family(
        "skein_worker_cpu_seconds_total",
        Kind::Counter,
        "CPU time of each worker thread, seconds, by mode.",
    );
    for (w, id) in ws.iter().zip(&ids) {
        for (mode, us) in [("user", &w.cpu_user_us), ("sys", &w.cpu_sys_us)] {
            p.sample(
                "skein_worker_cpu_seconds_total",
                &[("worker", id), ("mode", mode)],
                secs(us.load(Relaxed)),
            );
        }
    }
    type Of = fn(&crate::threadload::Load) -> f64;
    let gauges: [(&str, &str, Of); 2] = [
        (
            "skein_worker_cpu_utilization",
            "CPU of each worker thread, percent of one core, over the last 1.6 s.",
            |l| l.cpu_pct,
        ),
        (
            "skein_worker_busy_ratio",
            "Time each worker ran commands / time it was awake, over the last 1.6 s.",
            |l| l.busy_ratio,
        ),
    ];
    for (name, help, f) in gauges {
        p.family(name, Kind::Gauge, help);
        for (l, id) in loads.iter().zip(&ids) {
            p.sample(name, &[("worker", id)], f(l));
        }
    }
    type Field = fn(&crate::stats::WorkerStats) -> f64;
    let per_worker: [(&str, Kind, &str, Field); 7] = [
        (
            "skein_worker_busy_seconds_total",
            Kind::Counter,
            "Time each worker's handlers ran, seconds.",
            |w| w.busy_ns.load(Relaxed) as f64 / 1e9,
        ),
        (
            "skein_worker_awake_seconds_total",
            Kind::Counter,
            "Time each worker's event loop was awake (out of its poll wait), seconds.",
            |w| w.awake_ns.load(Relaxed) as f64 / 1e9,
        ),
        (
            "skein_worker_commands_processed_total",
            Kind::Counter,
            "Commands each worker ran.",
            |w| w.commands.load(Relaxed) as f64,
        ),
        (
            "skein_worker_connected_clients",
            Kind::Gauge,
            "Clients each worker serves.",
            |w| w.clients.load(Relaxed) as f64,
        ),
        (
            "skein_worker_connections_received_total",
            Kind::Counter,
            "Connections each worker accepted.",
            |w| w.connections.load(Relaxed) as f64,
        ),
        (
            "skein_worker_net_input_bytes_total",
            Kind::Counter,
            "Bytes each worker read from clients.",
            |w| w.net_in.load(Relaxed) as f64,
        ),
        (
            "skein_worker_net_output_bytes_total",
            Kind::Counter,
            "Bytes each worker wrote to clients.",
            |w| w.net_out.load(Relaxed) as f64,
        ),
    ];
    for (name, kind, help, f) in per_worker {
        p.family(name, kind, help);
        for (w, id) in ws.iter().zip(&ids) {
            p.sample(name, &[("worker", id)], f(w));
        }
    }
}

fn offload(srv: &Server, p: &mut Page) {
    let pool = &srv.stats.offload;
    p.single(
        "skein_offload_cpu_seconds_total",
        Kind::Counter,
        "CPU time of the offload pool's threads, seconds.",
        pool.cpu_ns() as f64 / 1e9,
    );
    p.single(
        "skein_offload_busy_seconds_total",
        Kind::Counter,
        "Time the offload pool spent running heavy commands, seconds.",
        pool.busy_ns() as f64 / 1e9,
    );
}

fn lock_waits(srv: &Server, p: &mut Page) {
    let t = srv.keyspace.lock_waits.get();
    p.single(
        "skein_shard_lock_waits_total",
        Kind::Counter,
        "Shard lock acquisitions that found the shard held and waited.",
        t.waits as f64,
    );
    p.single(
        "skein_shard_lock_wait_seconds_total",
        Kind::Counter,
        "Time spent waiting for shard locks, seconds.",
        t.wait_ns as f64 / 1e9,
    );
}
