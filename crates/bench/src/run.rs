//! One measured run: start the load threads and the INFO sampler, print a progress line
//! each second, stop, and gather everything into a `RunResult`.

use crate::conn::Target;
use crate::driver::{run_thread, CmdStats, Shared, ThreadSpec};
use crate::hist::LatencySummary;
use crate::info::{Sample, Sampler, ServerSummary};
use crate::workload::Workload;
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Switches for one run.
#[derive(Clone, Copy)]
pub struct RunFlags {
    pub progress: bool,
    pub sample_server: bool,
}

/// One row of the result table.
#[derive(Clone, Debug, Serialize)]
pub struct CmdResult {
    pub command: String,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub hits: u64,
    pub misses: u64,
    pub hits_per_sec: f64,
    pub misses_per_sec: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub kb_in_per_sec: f64,
    pub kb_out_per_sec: f64,
    pub latency: LatencySummary,
    /// The full histogram: `[latency_us, count]` for every recorded bucket.
    pub histogram_us: Vec<[u64; 2]>,
}

/// What an open-loop run adds: how late the generator itself sent, and the latency with
/// that lateness taken out, so a percentile the generator caused is not charged to the
/// server.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct OpenLoopFigures {
    /// Of the wait between a request's due time and its send, the part when a connection
    /// slot was free: the generator's own lateness (the pacing precision achieved).
    pub lateness: LatencySummary,
    /// Latency from the due time, less the lateness: the server's service time plus any
    /// wait for a free connection slot.
    pub server_latency: LatencySummary,
}

impl OpenLoopFigures {
    /// Whether the generator's lateness, not the server, explains a latency percentile:
    /// with the lateness taken out it is under half of what was measured.
    pub fn lateness_explains(&self, measured_ms: f64, server_ms: f64) -> bool {
        measured_ms > 0.0 && server_ms < measured_ms / 2.0
    }
}

/// One second of the progress line.
#[derive(Clone, Debug, Serialize)]
pub struct Tick {
    pub t: f64,
    pub ops_per_sec: f64,
    pub avg_latency_ms: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub target: String,
    pub db: u32,
    pub workload: Workload,
    /// Measured seconds (after warm-up).
    pub seconds: f64,
    pub commands: Vec<CmdResult>,
    pub totals: CmdResult,
    /// Open loop: the offered rate, and requests due that never left (server too slow).
    pub offered_rate: Option<f64>,
    pub unsent: u64,
    pub open_loop: Option<OpenLoopFigures>,
    pub server: Option<ServerSummary>,
    pub server_samples: Vec<Sample>,
    pub server_sampling_error: Option<String>,
    pub timeline: Vec<Tick>,
    /// The generator's own CPU seconds (user + sys) over the whole run.
    pub client_cpu_seconds: f64,
}

impl RunResult {
    /// Bytes/s the server received and sent: from INFO when it has them, else what this
    /// generator sent and received (the same bytes, seen from the other end).
    pub fn net_in_out(&self) -> (f64, f64) {
        let s = self.server.as_ref();
        (
            s.and_then(|s| s.net_in_bytes_per_sec)
                .unwrap_or(self.totals.kb_out_per_sec * 1024.0),
            s.and_then(|s| s.net_out_bytes_per_sec)
                .unwrap_or(self.totals.kb_in_per_sec * 1024.0),
        )
    }
}

fn cmd_result(name: &str, s: &CmdStats, secs: f64) -> CmdResult {
    let per = |n: u64| n as f64 / secs.max(1e-9);
    CmdResult {
        command: name.to_string(),
        ops: s.ops,
        ops_per_sec: per(s.ops),
        hits: s.hits,
        misses: s.misses,
        hits_per_sec: per(s.hits),
        misses_per_sec: per(s.misses),
        errors: s.errors,
        first_error: s.first_error.clone(),
        kb_in_per_sec: per(s.bytes_in) / 1024.0,
        kb_out_per_sec: per(s.bytes_out) / 1024.0,
        latency: s.hist.summary(),
        histogram_us: s.hist.buckets(),
    }
}

/// This process's CPU seconds (user + sys), from /proc/self/stat.
pub fn self_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at ") ".
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / rustix::param::clock_ticks_per_second() as f64
}

/// Runs `w` against `target` on database `db`.
pub fn run(target: &Target, w: &Workload, db: u32, flags: RunFlags) -> Result<RunResult, String> {
    if w.requests.is_none() && w.test_time <= 0.0 {
        return Err("give --requests or a --test-time above 0".into());
    }
    crate::conn::raise_fd_limit();
    let cpu0 = self_cpu_seconds();
    let shared = Arc::new(Shared::default());
    let go = Arc::new(Barrier::new(w.threads + 1));
    let (wl, tg) = (Arc::new(w.clone()), Arc::new(target.clone()));
    let (plan, data) = (Arc::new(w.plan()), Arc::new(w.data_block()));
    let handles: Vec<_> = (0..w.threads)
        .map(|i| {
            let spec = ThreadSpec {
                index: i,
                workload: wl.clone(),
                target: tg.clone(),
                db,
                plan: plan.clone(),
                data: data.clone(),
                shared: shared.clone(),
                go: go.clone(),
            };
            std::thread::spawn(move || run_thread(spec))
        })
        .collect();
    // With no warm-up, count from the first reply: set before the threads are released
    // (setting it after would race with replies arriving while the sampler connects).
    if w.warmup <= 0.0 {
        shared.measuring.store(true, Relaxed);
    }
    go.wait();
    let start = Instant::now();
    let sampler = flags.sample_server.then(|| Sampler::start(target, start));
    let mut measure_start = start;
    let mut timeline = Vec::new();
    let (mut last_ops, mut last_lat, mut last_t) = (0u64, 0u64, start);
    let mut next_tick = start + Duration::from_secs(1);
    let stop_at =
        (w.requests.is_none()).then(|| start + Duration::from_secs_f64(w.warmup + w.test_time));
    let mut stopped_at = None;
    while handles.iter().any(|h| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(5));
        let now = Instant::now();
        if !shared.measuring.load(Relaxed)
            && !shared.stop.load(Relaxed)
            && now >= start + Duration::from_secs_f64(w.warmup)
        {
            measure_start = now;
            shared.measuring.store(true, Relaxed);
        }
        if stopped_at.is_none() && stop_at.is_some_and(|t| now >= t) {
            shared.measuring.store(false, Relaxed);
            shared.stop.store(true, Relaxed);
            stopped_at = Some(now);
        }
        if now >= next_tick {
            next_tick += Duration::from_secs(1);
            let (ops, lat) = (shared.ops.load(Relaxed), shared.lat_sum_us.load(Relaxed));
            let dt = (now - last_t).as_secs_f64();
            let d_ops = ops - last_ops;
            let tick = Tick {
                t: (now - start).as_secs_f64(),
                ops_per_sec: d_ops as f64 / dt,
                avg_latency_ms: if d_ops > 0 {
                    (lat - last_lat) as f64 / d_ops as f64 / 1000.0
                } else {
                    0.0
                },
            };
            if flags.progress {
                print_progress(&tick, w, &stop_at);
            }
            timeline.push(tick);
            (last_ops, last_lat, last_t) = (ops, lat, now);
        }
    }
    let end = stopped_at.unwrap_or_else(Instant::now);
    shared.measuring.store(false, Relaxed);
    if flags.progress && std::io::stderr().is_terminal() {
        eprintln!();
    }
    let sampled = sampler.map(|s| s.finish()).unwrap_or_default();
    let mut stats = vec![CmdStats::default(); w.templates.len()];
    let mut unsent = 0;
    let mut errors = Vec::new();
    for h in handles {
        let r = h.join().map_err(|_| "a load thread panicked".to_string())?;
        for (acc, s) in stats.iter_mut().zip(&r.stats) {
            acc.add(s);
        }
        unsent += r.unsent;
        errors.extend(r.error);
    }
    let total_ops: u64 = stats.iter().map(|s| s.ops).sum();
    if let Some(e) = errors.first() {
        if total_ops == 0 {
            return Err(e.clone());
        }
        eprintln!("warning: {e}");
    }
    let secs = (end - measure_start).as_secs_f64();
    let mut totals = CmdStats::default();
    for s in &stats {
        totals.add(s);
    }
    let from = (measure_start - start).as_secs_f64();
    let to = (end - start).as_secs_f64();
    Ok(RunResult {
        target: target.describe(),
        db,
        workload: w.clone(),
        seconds: secs,
        commands: w
            .templates
            .iter()
            .zip(&stats)
            .map(|(t, s)| cmd_result(&t.label, s, secs))
            .collect(),
        totals: cmd_result("Totals", &totals, secs),
        offered_rate: w.rate,
        unsent,
        open_loop: w.rate.map(|_| OpenLoopFigures {
            lateness: totals.late_hist.summary(),
            server_latency: totals.server_hist.summary(),
        }),
        server: ServerSummary::between(&sampled.samples, from, to),
        server_samples: sampled.samples,
        server_sampling_error: sampled.error,
        timeline,
        client_cpu_seconds: self_cpu_seconds() - cpu0,
    })
}

fn print_progress(t: &Tick, w: &Workload, stop_at: &Option<Instant>) {
    let left = match stop_at {
        Some(s) => format!(
            "{:.0}s left",
            s.saturating_duration_since(Instant::now()).as_secs_f64()
        ),
        None => format!("{} requests per client", w.requests.unwrap_or(0)),
    };
    let line = format!(
        "[{:>4.0}s] {:>10.0} ops/s  avg {:>8.3} ms  {}",
        t.t, t.ops_per_sec, t.avg_latency_ms, left
    );
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r{line}      ");
    } else {
        let _ = writeln!(err, "{line}");
    }
    let _ = err.flush();
}
