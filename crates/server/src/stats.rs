//! Counters. Each worker writes only its own slot (no shared cache line on the command
//! path); readers (INFO) sum the slots.

use crate::latency::LatencyMonitor;
use crate::server::Server;
use crate::slowlog::SlowLog;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// Latency histogram bounds and precision, in nanoseconds (as Redis's hdr_init).
const HIST_MIN_NS: u64 = 1;
const HIST_MAX_NS: u64 = 1_000_000_000;
const HIST_SIGFIG: u8 = 2;

/// Per-command counters of one worker (a cache line of its own).
#[derive(Default)]
#[repr(align(64))]
pub struct CmdCounters {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
    /// Latency histogram (ns), created on first use. Only its worker writes it; INFO and
    /// LATENCY HISTOGRAM lock it briefly to merge, so the lock is uncontended.
    pub hist: Mutex<Option<Histogram<u64>>>,
}

impl CmdCounters {
    /// Record one call's latency (Redis's updateCommandLatencyHistogram).
    pub fn record_latency(&self, ns: u64) {
        let ns = ns.clamp(HIST_MIN_NS, HIST_MAX_NS);
        let mut h = self.hist.lock();
        if h.is_none() {
            *h = Histogram::new_with_bounds(HIST_MIN_NS, HIST_MAX_NS, HIST_SIGFIG).ok();
        }
        if let Some(h) = h.as_mut() {
            let _ = h.record(ns);
        }
    }

    fn reset(&self) {
        self.calls.store(0, Relaxed);
        self.usec.store(0, Relaxed);
        self.rejected.store(0, Relaxed);
        self.failed.store(0, Relaxed);
        *self.hist.lock() = None;
    }
}

/// The sum of one command's counters over all workers.
#[derive(Default)]
pub struct CmdTotals {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
    /// The merged latency histogram; `None` if no call was recorded.
    pub hist: Option<Histogram<u64>>,
}

/// Sum per-worker counters (and merge histograms when `with_hist`).
pub fn totals(slots: &[CmdCounters], with_hist: bool) -> CmdTotals {
    let mut t = CmdTotals::default();
    for c in slots {
        t.calls += c.calls.load(Relaxed);
        t.usec += c.usec.load(Relaxed);
        t.rejected += c.rejected.load(Relaxed);
        t.failed += c.failed.load(Relaxed);
        if !with_hist {
            continue;
        }
        if let Some(h) = c.hist.lock().as_ref() {
            match t.hist.as_mut() {
                Some(m) => {
                    let _ = m.add(h);
                }
                None => t.hist = Some(h.clone()),
            }
        }
    }
    t
}

/// Counters one worker owns.
pub struct WorkerStats {
    pub commands: AtomicU64,
    pub connections: AtomicU64,
    pub net_in: AtomicU64,
    pub net_out: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub expired_keys: AtomicU64,
    /// Keys evicted for maxmemory (evicted_keys).
    pub evicted_keys: AtomicU64,
    /// Clients disconnected for maxmemory-clients (evicted_clients).
    pub evicted_clients: AtomicU64,
    /// The sum of this worker's connections' `tot_mem` (kept by the worker as each
    /// changes), so that client eviction can weigh every client before each command
    /// without visiting them.
    pub clients_mem: AtomicU64,
    /// Changes to the dataset (rdb_changes_since_last_save), as Redis's `dirty`.
    pub dirty: AtomicU64,
    /// Thread CPU time, microseconds (user, system), refreshed by the worker.
    pub cpu_user_us: AtomicU64,
    pub cpu_sys_us: AtomicU64,
    pub clients: AtomicU64,
    /// Time this worker's handlers ran (top-level commands), ns (see `threadload`).
    pub busy_ns: AtomicU64,
    /// Time this worker's event loop spent outside its poll wait, ns.
    pub awake_ns: AtomicU64,
    /// The worker thread's CPU clock (`threadload::current_thread_clock`), or
    /// `threadload::NO_CLOCK`.
    pub cpu_clock: AtomicI64,
    /// Error replies by prefix (INFO errorstats); touched only when an error is sent.
    pub errors: Mutex<HashMap<String, u64>>,
}

impl Default for WorkerStats {
    fn default() -> WorkerStats {
        WorkerStats {
            commands: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            net_in: AtomicU64::new(0),
            net_out: AtomicU64::new(0),
            keyspace_hits: AtomicU64::new(0),
            keyspace_misses: AtomicU64::new(0),
            expired_keys: AtomicU64::new(0),
            evicted_keys: AtomicU64::new(0),
            evicted_clients: AtomicU64::new(0),
            clients_mem: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            cpu_user_us: AtomicU64::new(0),
            cpu_sys_us: AtomicU64::new(0),
            clients: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            awake_ns: AtomicU64::new(0),
            cpu_clock: AtomicI64::new(crate::threadload::NO_CLOCK),
            errors: Mutex::new(HashMap::new()),
        }
    }
}

impl WorkerStats {
    /// The event loop was awake from `since` until now.
    pub fn add_awake(&self, since: std::time::Instant) {
        self.awake_ns
            .fetch_add(since.elapsed().as_nanos() as u64, Relaxed);
    }

    /// A top-level command's handler ran for `d`.
    pub fn add_busy(&self, d: std::time::Duration) {
        self.busy_ns.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    /// Count an error reply (its text after the `-`) under its prefix, as Redis's
    /// afterErrorReply: the text up to a space among the reply's first 32 bytes (the `-`
    /// included), else `ERR`.
    pub fn count_error(&self, msg: &[u8]) {
        let line = &msg[..msg.iter().position(|&b| b == b'\r').unwrap_or(msg.len())];
        let code = match line.iter().take(31).position(|&b| b == b' ') {
            Some(end) => String::from_utf8_lossy(&line[..end]).into_owned(),
            None => "ERR".to_string(),
        };
        *self.errors.lock().entry(code).or_insert(0) += 1;
    }
}

pub struct Stats {
    pub workers: Box<[WorkerStats]>,
    /// Counters written off the worker threads (cron, acceptor).
    pub global: WorkerStats,
    pub rejected_connections: AtomicU64,
    pub total_error_replies: AtomicU64,
    pub slowlog: SlowLog,
    pub latency: LatencyMonitor,
    /// DEBUG SET-ACTIVE-EXPIRE: whether the cron expires keys actively.
    pub active_expire: AtomicBool,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE payloads and RDB files are loaded
    /// without checking their CRC64.
    pub skip_checksum: AtomicBool,
    /// Time the cron spent in expiry cycles, µs (expire_cycle_cpu_milliseconds).
    pub expire_cycle_us: AtomicU64,
    /// The expiry cycles' running share of sampled keys found expired, an f64's bits
    /// (expired_stale_perc).
    pub expired_stale: AtomicU64,
    /// Expiry cycles that stopped at their time budget (expired_time_cap_reached_count).
    pub expire_time_cap_reached: AtomicU64,
    /// Time spent over maxmemory: since when (µs since start, 0 = not over now) and in
    /// total before that (total/current_eviction_exceeded_time).
    pub eviction_exceeded_since_us: AtomicU64,
    pub eviction_exceeded_total_us: AtomicU64,
    /// Highest used_memory seen (by the cron or INFO).
    pub peak_memory: AtomicU64,
    /// used_memory when the cron first ran (used_memory_startup).
    pub startup_memory: AtomicU64,
    /// Samples for the instantaneous_* figures; written by the cron, read by INFO.
    pub metrics: Mutex<Metrics>,
    /// Samples of the workers' busy, awake and CPU time (INFO threads, /metrics).
    pub load: Mutex<crate::threadload::Window>,
    /// The offload pool's job time and CPU.
    pub offload: crate::threadload::Pool,
    /// The replication ID (master_replid); DEBUG CHANGE-REPL-ID draws a new one.
    pub replid: Mutex<String>,
}

/// 40 random hex digits (a run ID or replication ID).
pub fn random_hex40() -> String {
    crate::hex::to_string(&rand::random::<[u8; 20]>())
}

/// Samples kept per instantaneous metric (STATS_METRIC_SAMPLES).
const METRIC_SAMPLES: usize = 16;

/// Which instantaneous figure.
#[derive(Clone, Copy)]
pub enum Metric {
    Commands = 0,
    NetInput = 1,
    NetOutput = 2,
}

/// Redis's trackInstantaneousMetric state, for each [`Metric`].
#[derive(Default)]
pub struct Metrics {
    last_ms: [i64; 3],
    last_count: [u64; 3],
    samples: [[u64; METRIC_SAMPLES]; 3],
    idx: [usize; 3],
}

impl Metrics {
    fn track(&mut self, m: Metric, now_ms: i64, count: u64) {
        let i = m as usize;
        let t = now_ms - self.last_ms[i];
        let delta = count.saturating_sub(self.last_count[i]);
        let per_sec = if t > 0 && self.last_ms[i] > 0 {
            delta * 1000 / t as u64
        } else {
            0
        };
        self.samples[i][self.idx[i]] = per_sec;
        self.idx[i] = (self.idx[i] + 1) % METRIC_SAMPLES;
        self.last_ms[i] = now_ms;
        self.last_count[i] = count;
    }

    /// The mean of the samples (getInstantaneousMetric).
    pub fn get(&self, m: Metric) -> u64 {
        self.samples[m as usize].iter().sum::<u64>() / METRIC_SAMPLES as u64
    }
}

impl Stats {
    pub fn new(workers: usize) -> Stats {
        Stats {
            workers: (0..workers.max(1))
                .map(|_| WorkerStats::default())
                .collect(),
            global: WorkerStats::default(),
            rejected_connections: AtomicU64::new(0),
            total_error_replies: AtomicU64::new(0),
            slowlog: SlowLog::default(),
            latency: LatencyMonitor::default(),
            active_expire: AtomicBool::new(true),
            skip_checksum: AtomicBool::new(false),
            expire_cycle_us: AtomicU64::new(0),
            expired_stale: AtomicU64::new(0),
            expire_time_cap_reached: AtomicU64::new(0),
            eviction_exceeded_since_us: AtomicU64::new(0),
            eviction_exceeded_total_us: AtomicU64::new(0),
            peak_memory: AtomicU64::new(0),
            startup_memory: AtomicU64::new(0),
            metrics: Mutex::new(Metrics::default()),
            load: Mutex::new(Default::default()),
            offload: Default::default(),
            replid: Mutex::new(random_hex40()),
        }
    }

    /// Whether DEBUG SET-SKIP-CHECKSUM-VALIDATION is on: RESTORE payloads and RDB files
    /// are then loaded without checking their CRC64.
    pub fn skip_checksum(&self) -> bool {
        self.skip_checksum.load(Relaxed)
    }

    /// Each worker's load over the last samples (see `threadload`).
    pub fn loads(&self) -> Vec<crate::threadload::Load> {
        self.load.lock().loads(self.workers.len())
    }

    /// Sum one field over all workers and the global slot.
    pub fn sum(&self, f: impl Fn(&WorkerStats) -> &AtomicU64) -> u64 {
        self.workers
            .iter()
            .chain(std::iter::once(&self.global))
            .map(|w| f(w).load(Relaxed))
            .sum()
    }

    pub fn reset(&self) {
        for w in self.workers.iter().chain(std::iter::once(&self.global)) {
            for c in [
                &w.commands,
                &w.connections,
                &w.net_in,
                &w.net_out,
                &w.keyspace_hits,
                &w.keyspace_misses,
                &w.expired_keys,
                &w.evicted_keys,
                &w.evicted_clients,
            ] {
                c.store(0, Relaxed);
            }
            w.errors.lock().clear();
        }
        self.rejected_connections.store(0, Relaxed);
        self.total_error_replies.store(0, Relaxed);
        self.expire_cycle_us.store(0, Relaxed);
        self.expired_stale.store(0, Relaxed);
        self.expire_time_cap_reached.store(0, Relaxed);
        self.eviction_exceeded_since_us.store(0, Relaxed);
        self.eviction_exceeded_total_us.store(0, Relaxed);
    }

    /// Cron, every 100 ms: the instantaneous metrics, the workers' load and the memory
    /// peak.
    pub fn sample(&self) {
        let now = engine::now_ms();
        let commands = self.sum(|w| &w.commands);
        let net_in = self.sum(|w| &w.net_in);
        let net_out = self.sum(|w| &w.net_out);
        {
            let mut m = self.metrics.lock();
            m.track(Metric::Commands, now, commands);
            m.track(Metric::NetInput, now, net_in);
            m.track(Metric::NetOutput, now, net_out);
        }
        self.load.lock().sample(&self.workers);
        self.note_memory(crate::memory::used_memory());
    }

    /// Raise the memory peak to `used` if higher (and note the startup figure once).
    pub fn note_memory(&self, used: u64) {
        self.peak_memory.fetch_max(used, Relaxed);
        let _ = self
            .startup_memory
            .compare_exchange(0, used, Relaxed, Relaxed);
    }

    /// Error counts by prefix, summed over workers, sorted by prefix.
    pub fn error_counts(&self) -> Vec<(String, u64)> {
        let mut all: std::collections::BTreeMap<String, u64> = Default::default();
        for w in self.workers.iter().chain(std::iter::once(&self.global)) {
            for (k, v) in w.errors.lock().iter() {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all.into_iter().collect()
    }
}

/// CONFIG RESETSTAT: server counters, per-command counters and latency histograms, and
/// error statistics (not the slow log nor the latency monitor, as in Redis).
pub fn reset_stats(srv: &Server) {
    srv.stats.reset();
    srv.repl.reset_sync_stats();
    reset_command_counters(srv);
}

fn reset_command_counters(srv: &Server) {
    for c in &srv.commands.all {
        for slot in c.counters.iter() {
            slot.reset();
        }
    }
}

/// Forget the calls counted so far (commandstats, and `worker`'s total of commands): the
/// AOF's replay at start-up, which Redis runs outside its call statistics.
pub fn forget_calls(srv: &Server, worker: usize) {
    reset_command_counters(srv);
    srv.stats.workers[worker].commands.store(0, Relaxed);
}

/// CPU time of the calling thread: (user µs, system µs).
pub fn thread_cpu_us() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage struct into the pointer we pass; the memory
    // is ours, zero-initialised and the right size. RUSAGE_THREAD is Linux-specific.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct.
    let ru = unsafe { ru.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// CPU time of the whole process: (user µs, system µs).
pub fn process_cpu_us() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: as in thread_cpu_us.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct.
    let ru = unsafe { ru.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}
