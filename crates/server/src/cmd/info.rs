//! INFO [section ...]: Redis 7.0's sections and field names (server, clients, memory,
//! persistence, stats, replication, cpu, modules, commandstats, errorstats, latencystats,
//! cluster, keyspace), plus Skein's per-worker `threads` section.

use super::{Ctx, Handler};
use crate::memory;
use crate::server::Server;
use crate::stats::{totals, Metric, WorkerStats};
use engine::Locked;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub const COMMANDS: &[(&str, Handler)] = &[("info", info)];

/// Sections INFO (no argument) and INFO default show.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "module_list",
    "errorstats",
    "cluster",
    "keyspace",
    "threads",
];

/// Which sections were asked for (Redis's genInfoSectionDict).
struct Wanted {
    names: Vec<String>,
    all: bool,
}

impl Wanted {
    fn parse(args: &[&[u8]]) -> Wanted {
        let mut w = Wanted {
            names: Vec::new(),
            all: false,
        };
        if args.is_empty() {
            w.names = DEFAULT_SECTIONS.iter().map(|s| s.to_string()).collect();
        }
        for a in args {
            let a = String::from_utf8_lossy(a).to_lowercase();
            match a.as_str() {
                "default" => w
                    .names
                    .extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string())),
                "all" | "everything" => w.all = true,
                _ => w.names.push(a),
            }
        }
        w
    }

    fn has(&self, name: &str) -> bool {
        self.all || self.names.iter().any(|n| n == name)
    }
}

/// The INFO text, sections separated by a blank line as Redis does.
struct Report {
    text: String,
    sections: usize,
}

impl Report {
    fn section(&mut self, title: &str) {
        if self.sections > 0 {
            self.text.push_str("\r\n");
        }
        self.sections += 1;
        let _ = write!(self.text, "# {title}\r\n");
    }

    fn field(&mut self, name: &str, value: impl std::fmt::Display) {
        let _ = write!(self.text, "{name}:{value}\r\n");
    }

    /// Fields Skein has no use for (yet) and reports as 0.
    fn zeros(&mut self, names: &[&str]) {
        for n in names {
            self.field(n, 0);
        }
    }
}

fn info(ctx: &mut Ctx, argv: &[&[u8]]) {
    let text = generate(ctx.srv, ctx.keys, &argv[1..]);
    ctx.out.verbatim(text.as_bytes(), "txt");
}

/// Writes one section.
type SectionFn = fn(&Server, &mut Report);

/// The INFO text for `args` (section names, `default`, `all`, `everything`).
pub fn generate(srv: &Server, keys: &mut Locked, args: &[&[u8]]) -> String {
    let want = Wanted::parse(args);
    let mut r = Report {
        text: String::new(),
        sections: 0,
    };
    let sections: &[(&str, SectionFn)] = &[
        ("server", server),
        ("clients", clients),
        ("memory", memory_section),
        ("persistence", persistence),
        ("stats", stats),
        ("replication", replication),
        ("cpu", cpu),
    ];
    for (name, f) in sections {
        if want.has(name) {
            f(srv, &mut r);
        }
    }
    if want.has("module_list") || want.has("modules") {
        r.section("Modules");
    }
    if want.has("commandstats") {
        commandstats(srv, &mut r);
    }
    if want.has("errorstats") {
        r.section("Errorstats");
        for (code, n) in srv.stats.error_counts() {
            r.field(&format!("errorstat_{code}"), format!("count={n}"));
        }
    }
    if want.has("latencystats") {
        latencystats(srv, &mut r);
    }
    if want.has("cluster") {
        r.section("Cluster");
        r.field("cluster_enabled", 0);
    }
    if want.has("keyspace") {
        keyspace(srv, keys, &mut r);
    }
    if want.has("threads") {
        threads(srv, &mut r);
    }
    r.text
}

fn proc_text(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn server(srv: &Server, r: &mut Report) {
    let uptime = srv.started.elapsed().as_secs();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    r.section("Server");
    r.field("redis_version", crate::REDIS_VERSION);
    r.field("redis_git_sha1", "00000000");
    r.field("redis_git_dirty", 0);
    r.field("redis_build_id", "0");
    r.field("redis_mode", "standalone");
    r.field(
        "os",
        format!(
            "{} {} {}",
            proc_text("/proc/sys/kernel/ostype"),
            proc_text("/proc/sys/kernel/osrelease"),
            std::env::consts::ARCH
        ),
    );
    r.field("arch_bits", 64);
    r.field("monotonic_clock", "POSIX clock_gettime");
    r.field("multiplexing_api", "epoll");
    r.field("atomicvar_api", "c11-builtin");
    r.field("gcc_version", "0.0.0");
    r.field("process_id", std::process::id());
    r.field("process_supervised", "no");
    r.field("run_id", &srv.run_id);
    r.field("tcp_port", srv.tcp_port.load(Relaxed));
    r.field("server_time_usec", now_us);
    r.field("uptime_in_seconds", uptime);
    r.field("uptime_in_days", uptime / 86400);
    r.field("hz", srv.config.get_i64("hz"));
    r.field("configured_hz", srv.config.get_i64("hz"));
    r.field("lru_clock", engine::lru_clock());
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    r.field("executable", exe);
    let conf = srv
        .config
        .file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    r.field("config_file", conf);
    r.field("io_threads_active", 0);
    r.field("skein_version", env!("CARGO_PKG_VERSION"));
    r.field("skein_workers", srv.stats.workers.len());
}

fn clients(srv: &Server, r: &mut Report) {
    let all = srv.clients.all();
    let max_in = all.iter().map(|c| c.qbuf.load(Relaxed)).max().unwrap_or(0);
    let max_out = all.iter().map(|c| c.obuf.load(Relaxed)).max().unwrap_or(0);
    r.section("Clients");
    // Replicas are listed but not counted (the master's link of a replica is).
    let replicas = all.iter().filter(|c| c.has(crate::clients::flag::REPLICA));
    r.field("connected_clients", all.len() - replicas.count());
    r.field("cluster_connections", 0);
    r.field("maxclients", srv.config.get_i64("maxclients"));
    r.field("client_recent_max_input_buffer", max_in);
    r.field("client_recent_max_output_buffer", max_out);
    r.field("blocked_clients", srv.blocking.count() + srv.repl.waiting());
    r.field("tracking_clients", srv.tracking.clients());
    r.field("clients_in_timeout_table", 0);
}

fn perc(part: u64, whole: u64) -> String {
    let p = if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    };
    format!("{p:.2}%")
}

fn ratio(a: u64, b: u64) -> String {
    let v = if b == 0 { 0.0 } else { a as f64 / b as f64 };
    format!("{v:.2}")
}

fn memory_section(srv: &Server, r: &mut Report) {
    let mh = crate::overhead::Overhead::measure(srv);
    let (a, used, peak, startup, rss) = (mh.alloc, mh.total, mh.peak, mh.startup, mh.rss);
    let total = memory::total_system_memory();
    let maxmemory = srv.config.get_i64("maxmemory").max(0) as u64;
    let dataset = mh.dataset;
    let net = used.saturating_sub(startup);
    r.section("Memory");
    r.field("used_memory", used);
    r.field("used_memory_human", memory::human(used));
    r.field("used_memory_rss", rss);
    r.field("used_memory_rss_human", memory::human(rss));
    r.field("used_memory_peak", peak);
    r.field("used_memory_peak_human", memory::human(peak));
    r.field("used_memory_peak_perc", perc(used, peak));
    r.field("used_memory_overhead", mh.overhead_total);
    r.field("used_memory_startup", startup);
    r.field("used_memory_dataset", dataset);
    r.field("used_memory_dataset_perc", perc(dataset, net.max(1)));
    r.field("allocator_allocated", a.allocated);
    r.field("allocator_active", a.active);
    r.field("allocator_resident", a.resident);
    r.field("total_system_memory", total);
    r.field("total_system_memory_human", memory::human(total));
    let scripts = &srv.scripts;
    let (vm, cached) = (scripts.vm_bytes() as u64, scripts.bytes() as u64);
    r.field("used_memory_lua", vm);
    r.field("used_memory_vm_eval", vm);
    r.field("used_memory_lua_human", memory::human(vm));
    r.field("used_memory_scripts_eval", cached);
    r.field("number_of_cached_scripts", scripts.len());
    let (libraries, functions) = scripts.functions.counts();
    r.field("number_of_functions", functions);
    r.field("number_of_libraries", libraries);
    // Libraries are compiled into the workers' Lua states, counted above.
    r.field("used_memory_vm_functions", 0);
    r.field("used_memory_vm_total", vm);
    r.field("used_memory_vm_total_human", memory::human(vm));
    r.field("used_memory_functions", mh.functions_caches);
    let scripts_bytes = cached + mh.functions_caches;
    r.field("used_memory_scripts", scripts_bytes);
    r.field("used_memory_scripts_human", memory::human(scripts_bytes));
    r.field("maxmemory", maxmemory);
    r.field("maxmemory_human", memory::human(maxmemory));
    r.field("maxmemory_policy", srv.config.get("maxmemory-policy"));
    r.field("allocator_frag_ratio", ratio(a.active, a.allocated));
    r.field("allocator_frag_bytes", a.active.saturating_sub(a.allocated));
    r.field("allocator_rss_ratio", ratio(a.resident, a.active));
    r.field("allocator_rss_bytes", a.resident as i64 - a.active as i64);
    r.field("rss_overhead_ratio", ratio(rss, a.resident));
    r.field("rss_overhead_bytes", rss as i64 - a.resident as i64);
    r.field("mem_fragmentation_ratio", ratio(rss, used));
    r.field("mem_fragmentation_bytes", rss as i64 - used as i64);
    r.field("mem_not_counted_for_evict", crate::evict::not_counted(srv));
    let backlog = srv.propagation.backlog.bytes();
    r.field("mem_replication_backlog", backlog);
    r.field("mem_total_replication_buffers", backlog);
    r.field("mem_clients_slaves", 0);
    r.field("mem_clients_normal", mh.clients_normal);
    r.field("mem_cluster_links", 0);
    r.field("mem_aof_buffer", mh.aof_buffer);
    r.field("mem_allocator", memory::allocator_name());
    r.field("active_defrag_running", 0);
    r.field("lazyfree_pending_objects", crate::lazyfree::pending());
    r.field("lazyfreed_objects", crate::lazyfree::freed());
}

fn persistence(srv: &Server, r: &mut Report) {
    use std::sync::atomic::Ordering::Relaxed;
    let p = &srv.persist;
    r.section("Persistence");
    let ok = |b: bool| if b { "ok" } else { "err" };
    r.field("loading", u8::from(p.is_loading()));
    r.zeros(&[
        "async_loading",
        "current_cow_peak",
        "current_cow_size",
        "current_cow_size_age",
    ]);
    let snap = srv.keyspace.snapshot().filter(|_| p.bgsave_in_progress());
    let total = if snap.is_some() {
        p.save_keys_total.load(Relaxed)
    } else {
        0
    };
    let done = snap.as_ref().map_or(0, |s| s.keys_done());
    let perc = if total > 0 {
        done as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    r.field("current_fork_perc", format!("{perc:.2}"));
    r.field("current_save_keys_processed", done);
    r.field("current_save_keys_total", total);
    r.field(
        "rdb_changes_since_last_save",
        crate::persist::changes_since_save(srv),
    );
    r.field("rdb_bgsave_in_progress", u8::from(p.bgsave_in_progress()));
    r.field("rdb_last_save_time", p.lastsave.load(Relaxed));
    r.field("rdb_last_bgsave_status", ok(p.last_bgsave_ok.load(Relaxed)));
    r.field("rdb_last_bgsave_time_sec", p.last_bgsave_secs.load(Relaxed));
    // Seconds since a start time kept as -1 when nothing runs.
    let running_for = |started: i64| {
        if started >= 0 {
            crate::persist::unix_secs() - started
        } else {
            -1
        }
    };
    r.field(
        "rdb_current_bgsave_time_sec",
        running_for(p.bgsave_started.load(Relaxed)),
    );
    r.field("rdb_saves", p.saves.load(Relaxed));
    r.field("rdb_last_cow_size", 0);
    r.field(
        "rdb_last_load_keys_expired",
        p.last_load_expired.load(Relaxed),
    );
    r.field(
        "rdb_last_load_keys_loaded",
        p.last_load_loaded.load(Relaxed),
    );
    let aof = &p.aof;
    let rw = &aof.rw;
    r.field("aof_enabled", u8::from(aof.is_on()));
    r.field("aof_rewrite_in_progress", u8::from(rw.in_progress()));
    r.field(
        "aof_rewrite_scheduled",
        u8::from(rw.scheduled.load(Relaxed)),
    );
    r.field("aof_last_rewrite_time_sec", rw.last_secs.load(Relaxed));
    r.field(
        "aof_current_rewrite_time_sec",
        running_for(rw.started.load(Relaxed)),
    );
    r.field("aof_last_bgrewrite_status", ok(rw.last_ok.load(Relaxed)));
    r.field("aof_rewrites", rw.rewrites.load(Relaxed));
    r.field(
        "aof_rewrites_consecutive_failures",
        rw.consecutive_failures.load(Relaxed),
    );
    r.field("aof_last_write_status", ok(aof.last_write_ok.load(Relaxed)));
    r.field("aof_last_cow_size", 0);
    r.field("module_fork_in_progress", 0);
    r.field("module_fork_last_cow_size", 0);
    if aof.is_on() {
        r.field("aof_current_size", aof.current_size.load(Relaxed));
        r.field("aof_base_size", aof.base_size.load(Relaxed));
        r.field("aof_pending_rewrite", u8::from(rw.scheduled.load(Relaxed)));
        r.field("aof_buffer_length", aof.inner.lock().pending_len());
        r.field("aof_pending_bio_fsync", 0);
        r.field("aof_delayed_fsync", 0);
    }
    // Skein's: keys (or, for SWAPDB, shards' remainders), and their bytes, written out by
    // writers before modifying them during the last BGSAVE (copy-on-write).
    r.field("skein_rdb_last_cow_writes", p.last_cow_writes.load(Relaxed));
    r.field("skein_rdb_last_cow_bytes", p.last_cow_bytes.load(Relaxed));
    // Skein's: commands written to the AOF and fsyncs of it (with `appendfsync always`,
    // their ratio is how many writes shared an fsync).
    r.field("skein_aof_writes", aof.calls_written.load(Relaxed));
    r.field("skein_aof_fsyncs", aof.fsyncs.load(Relaxed));
}

fn stats(srv: &Server, r: &mut Report) {
    let st = &srv.stats;
    let sum = |f: fn(&WorkerStats) -> &AtomicU64| st.sum(f);
    let (ops, kin, kout) = {
        let m = st.metrics.lock();
        (
            m.get(Metric::Commands),
            m.get(Metric::NetInput) as f64 / 1024.0,
            m.get(Metric::NetOutput) as f64 / 1024.0,
        )
    };
    r.section("Stats");
    r.field("total_connections_received", sum(|w| &w.connections));
    r.field("total_commands_processed", sum(|w| &w.commands));
    r.field("instantaneous_ops_per_sec", ops);
    r.field("total_net_input_bytes", sum(|w| &w.net_in));
    r.field("total_net_output_bytes", sum(|w| &w.net_out));
    r.field("total_net_repl_input_bytes", 0);
    r.field("total_net_repl_output_bytes", 0);
    r.field("instantaneous_input_kbps", format!("{kin:.2}"));
    r.field("instantaneous_output_kbps", format!("{kout:.2}"));
    r.field("instantaneous_input_repl_kbps", "0.00");
    r.field("instantaneous_output_repl_kbps", "0.00");
    r.field(
        "rejected_connections",
        st.rejected_connections.load(Relaxed),
    );
    let repl = &srv.repl;
    r.field("sync_full", repl.sync_full.load(Relaxed));
    r.field("sync_partial_ok", repl.sync_partial_ok.load(Relaxed));
    r.field("sync_partial_err", repl.sync_partial_err.load(Relaxed));
    r.field("expired_keys", sum(|w| &w.expired_keys));
    let stale = f64::from_bits(st.expired_stale.load(Relaxed)) * 100.0;
    r.field("expired_stale_perc", format!("{stale:.2}"));
    r.field(
        "expired_time_cap_reached_count",
        st.expire_time_cap_reached.load(Relaxed),
    );
    r.field(
        "expire_cycle_cpu_milliseconds",
        st.expire_cycle_us.load(Relaxed) / 1000,
    );
    r.field("evicted_keys", sum(|w| &w.evicted_keys));
    r.field("evicted_clients", sum(|w| &w.evicted_clients));
    let (total, current) = crate::evict::exceeded_ms(srv);
    r.field("total_eviction_exceeded_time", total);
    r.field("current_eviction_exceeded_time", current);
    r.field("keyspace_hits", sum(|w| &w.keyspace_hits));
    r.field("keyspace_misses", sum(|w| &w.keyspace_misses));
    r.field("pubsub_channels", srv.pubsub.channels.len());
    r.field("pubsub_patterns", srv.pubsub.patterns.len());
    r.field("pubsubshard_channels", srv.pubsub.shard_channels.len());
    r.zeros(&[
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ]);
    r.field("tracking_total_keys", srv.tracking.table.keys());
    r.field("tracking_total_items", srv.tracking.table.items());
    r.field("tracking_total_prefixes", srv.tracking.prefixes.len());
    r.zeros(&["unexpected_error_replies"]);
    r.field("total_error_replies", st.total_error_replies.load(Relaxed));
    r.field("dump_payload_sanitizations", 0);
    r.field("total_reads_processed", sum(|w| &w.commands));
    r.field("total_writes_processed", sum(|w| &w.commands));
    r.field("io_threaded_reads_processed", 0);
    r.field("io_threaded_writes_processed", 0);
    r.field("reply_buffer_shrinks", 0);
    r.field("reply_buffer_expands", 0);
}

fn replication(srv: &Server, r: &mut Report) {
    r.section("Replication");
    let link = crate::repl::link::info_lines(srv);
    r.field("role", if link.is_empty() { "master" } else { "slave" });
    for (name, value) in link {
        r.field(name, value);
    }
    for (name, value) in crate::repl::info_lines(srv) {
        r.field(&name, value);
    }
    r.field("master_failover_state", srv.repl.failover.state_name());
    let following = srv.repl.link.is_replica();
    let master_id = srv.repl.link.master_replid.lock().clone();
    if following && !master_id.is_empty() {
        r.field("master_replid", master_id);
    } else {
        r.field("master_replid", srv.stats.replid.lock().clone());
    }
    let replid2 = srv.repl.replid2.lock().clone();
    match &replid2 {
        Some((id, _)) => r.field("master_replid2", id.clone()),
        None => r.field("master_replid2", "0".repeat(40)),
    }
    let backlog = &srv.propagation.backlog;
    if following {
        r.field(
            "master_repl_offset",
            srv.repl.link.offset.load(Relaxed).max(0),
        );
    } else {
        r.field("master_repl_offset", crate::repl::offset(srv));
    }
    r.field(
        "second_repl_offset",
        replid2.map_or(-1, |(_, upto)| upto as i64),
    );
    r.field("repl_backlog_active", i64::from(backlog.is_active()));
    r.field("repl_backlog_size", crate::repl::backlog_size(srv));
    let (first, histlen) = if backlog.is_active() {
        backlog.history()
    } else {
        (0, 0)
    };
    r.field("repl_backlog_first_byte_offset", first);
    r.field("repl_backlog_histlen", histlen);
}

fn secs(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

fn cpu(srv: &Server, r: &mut Report) {
    let (user, sys) = crate::stats::process_cpu_us();
    let main_user: u64 = srv.stats.sum(|w| &w.cpu_user_us);
    let main_sys: u64 = srv.stats.sum(|w| &w.cpu_sys_us);
    r.section("CPU");
    r.field("used_cpu_sys", secs(sys));
    r.field("used_cpu_user", secs(user));
    r.field("used_cpu_sys_children", "0.000000");
    r.field("used_cpu_user_children", "0.000000");
    r.field("used_cpu_sys_main_thread", secs(main_sys));
    r.field("used_cpu_user_main_thread", secs(main_user));
}

/// Every command and subcommand, containers first then their subcommands, by name.
fn each_command(srv: &Server) -> Vec<&super::table::CommandDef> {
    let mut v = Vec::new();
    for c in srv.commands.top_level() {
        v.push(&**c);
        v.extend(c.sorted_subcommands().into_iter().map(|s| &**s));
    }
    v
}

/// Redis's getSafeInfoString: `:`, `\r`, `\n` become `_`.
fn safe(name: &str) -> String {
    name.replace([':', '\r', '\n'], "_")
}

fn commandstats(srv: &Server, r: &mut Report) {
    r.section("Commandstats");
    for c in each_command(srv) {
        let t = totals(&c.counters, false);
        if t.calls == 0 && t.failed == 0 && t.rejected == 0 {
            continue;
        }
        let per_call = if t.calls == 0 {
            0.0
        } else {
            t.usec as f32 / t.calls as f32
        };
        r.field(
            &format!("cmdstat_{}", safe(&c.fullname)),
            format!(
                "calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}",
                t.calls, t.usec, per_call, t.rejected, t.failed
            ),
        );
    }
}

/// A percentile as Redis prints its label: `%f` with trailing zeros (and dot) removed.
fn percentile_label(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn latencystats(srv: &Server, r: &mut Report) {
    r.section("Latencystats");
    let percentiles: Vec<f64> = srv
        .config
        .get("latency-tracking-info-percentiles")
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    for c in each_command(srv) {
        let Some(h) = totals(&c.counters, true).hist else {
            continue;
        };
        let parts: Vec<String> = percentiles
            .iter()
            .map(|p| {
                let v = h.value_at_quantile(p / 100.0) as f64 / 1000.0;
                format!("p{}={v:.3}", percentile_label(*p))
            })
            .collect();
        r.field(
            &format!("latency_percentiles_usec_{}", safe(&c.fullname)),
            parts.join(","),
        );
    }
}

/// An estimate of the mean remaining TTL (ms) of keys with one, from a bounded sample
/// (shards another command holds are left out of it rather than waited for).
fn avg_ttl(keys: &mut Locked, db: usize) -> i64 {
    const SAMPLE: usize = 1024;
    let now = keys.now();
    // (i128: a TTL may be near i64::MAX ms, and a few of them overflow an i64 sum.)
    let (mut sum, mut n) = (0i128, 0i128);
    let mut seen = 0;
    keys.walk_free_in(db, |shard| {
        if shard.expires_len() == 0 {
            return true;
        }
        for e in shard.iter() {
            seen += 1;
            let at = e.expire_at();
            if at >= 0 && at > now {
                sum += i128::from(at - now);
                n += 1;
            }
            if seen >= SAMPLE {
                return false;
            }
        }
        true
    });
    if n == 0 {
        0
    } else {
        i64::try_from(sum / n).unwrap_or(i64::MAX)
    }
}

fn keyspace(srv: &Server, keys: &mut Locked, r: &mut Report) {
    r.section("Keyspace");
    for i in 0..srv.keyspace.len() {
        let n = keys.len_in(i);
        if n == 0 {
            continue;
        }
        let expires = keys.expires_len_in(i);
        let ttl = if expires > 0 { avg_ttl(keys, i) } else { 0 };
        r.field(
            &format!("db{i}"),
            format!("keys={n},expires={expires},avg_ttl={ttl}"),
        );
    }
}

/// Skein's own: the engine threads' CPU utilization (percent, over the last 1.6 s), and
/// each worker's CPU time, load, commands, clients and traffic (see `threadload`).
fn threads(srv: &Server, r: &mut Report) {
    let loads = srv.stats.loads();
    r.section("Threads");
    r.field("workers", srv.stats.workers.len());
    r.field(
        "engine_cpu_utilization",
        format!("{:.2}", crate::threadload::engine_cpu_utilization(&loads)),
    );
    let offload = &srv.offload;
    r.field("offload_threads", offload.threads.load(Relaxed));
    r.field("offloaded_commands", offload.total.load(Relaxed));
    r.field("offload_pending", offload.pending.load(Relaxed));
    let pool = &srv.stats.offload;
    r.field("offload_cpu_seconds", secs(pool.cpu_ns() / 1000));
    r.field("offload_busy_seconds", secs(pool.busy_ns() / 1000));
    for (i, (w, load)) in srv.stats.workers.iter().zip(&loads).enumerate() {
        let get = |a: &AtomicU64| a.load(Relaxed);
        r.field(&format!("worker{i}_cpu_user"), secs(get(&w.cpu_user_us)));
        r.field(&format!("worker{i}_cpu_sys"), secs(get(&w.cpu_sys_us)));
        r.field(
            &format!("worker{i}_cpu_utilization"),
            format!("{:.2}", load.cpu_pct),
        );
        r.field(
            &format!("worker{i}_busy_ratio"),
            format!("{:.4}", load.busy_ratio),
        );
        r.field(
            &format!("worker{i}_busy_seconds"),
            secs(get(&w.busy_ns) / 1000),
        );
        r.field(
            &format!("worker{i}_awake_seconds"),
            secs(get(&w.awake_ns) / 1000),
        );
        r.field(&format!("worker{i}_commands"), get(&w.commands));
        r.field(&format!("worker{i}_clients"), get(&w.clients));
        r.field(&format!("worker{i}_connections"), get(&w.connections));
        r.field(&format!("worker{i}_net_input_bytes"), get(&w.net_in));
        r.field(&format!("worker{i}_net_output_bytes"), get(&w.net_out));
    }
}
