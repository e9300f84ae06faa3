//! `skein-bench capacity`: the highest throughput at which the server holds a latency QoS,
//! found the two ways operators use, which must agree: a closed-loop sweep of concurrency
//! (connections, then pipeline depth; the highest throughput whose latency meets the QoS)
//! and an open-loop search of offered rates that starts from that answer and confirms it.
//! Points the generator failed (its own lateness, its CPU) are labelled, not charged to
//! the server. Then alarm thresholds at the answer.

mod closed;
mod headroom;
mod open;

use crate::alerts::{self, threshold, Measure, Threshold};
use crate::hist::LatencySummary;
use crate::info::ServerSummary;
use crate::opts::{default_workload, LoadArgs, TargetArgs};
use crate::report::{f0, f2, rate_bytes, Table};
use crate::run::{run, RunFlags, RunResult};
use crate::spec::{self, Qos, QosMetric};
use crate::workload::Workload;
use clap::Args;
use closed::{SweepEnd, SweepOutcome, SweepStep};
use headroom::Headroom;
use open::{SearchOutcome, Step, Verdict};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args)]
pub struct CapacityCmd {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    /// The latency bound to hold, e.g. 'p99<1ms', 'p999<5ms', 'avg<500us'
    #[arg(long, value_parser = spec::qos, help_heading = "Capacity")]
    pub qos: Qos,
    /// Each offered rate must pass this many runs in a row (each --test-time long after --warmup)
    #[arg(long, default_value_t = 1, help_heading = "Capacity")]
    pub repeats: u32,
    /// Bisection steps between the last passing and the first failing rate
    #[arg(long, default_value_t = 4, help_heading = "Capacity")]
    pub bisect: u32,
    /// A rate passes only if it achieves at least this fraction of the offered rate
    #[arg(long, default_value_t = 0.97, help_heading = "Capacity")]
    pub sustain: f64,
    /// Highest rate to offer in the open loop
    #[arg(long, value_name = "OPS", help_heading = "Capacity")]
    pub max_rate: Option<f64>,
    /// Most connections the closed-loop sweep opens (1, 2, 4, ... per thread)
    #[arg(
        long,
        default_value_t = 256,
        value_name = "N",
        help_heading = "Capacity"
    )]
    pub max_clients: usize,
    /// Deepest pipeline the closed-loop sweep tries (2, 4, ... at the best connection count;
    /// 1 sweeps connections only)
    #[arg(
        long,
        default_value_t = 32,
        value_name = "N",
        help_heading = "Capacity"
    )]
    pub max_pipeline: usize,
    /// Skip the second generator process run beside this one at the closed-loop ceiling
    #[arg(long, help_heading = "Capacity")]
    pub no_second_generator: bool,
    /// Write the search, the point at capacity and the thresholds to this JSON file
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write an HTML report (the sweep's charts and the verdict) to this file
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Write Prometheus alerting rules (YAML) for the thresholds to this file
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub alerts: Option<PathBuf>,
    /// Label matchers for the alert expressions, e.g. 'instance="node1:9121"'
    #[arg(long, default_value = "", help_heading = "Output")]
    pub alert_selector: String,
    /// How long a threshold must be exceeded before an alert fires
    #[arg(long, default_value = "5m", help_heading = "Output")]
    pub alert_for: String,
    /// No progress lines
    #[arg(short = 'q', long, help_heading = "Output")]
    pub quiet: bool,
}

/// The second generator `capacity` starts beside itself: the same options, one closed-loop
/// run at the given concurrency, its result written as JSON.
#[derive(Args)]
pub struct PeerCmd {
    #[command(flatten)]
    pub cap: CapacityCmd,
    #[arg(long)]
    pub peer_clients: usize,
    #[arg(long)]
    pub peer_pipeline: usize,
    #[arg(long)]
    pub peer_json: PathBuf,
}

impl PeerCmd {
    pub fn exec(&self) -> Result<i32, String> {
        let mut w = self.cap.base()?;
        w.clients = self.peer_clients.max(1);
        w.pipeline = self.peer_pipeline.max(1);
        let flags = RunFlags {
            progress: false,
            sample_server: false,
        };
        let r = run(
            &self.cap.target.target(),
            &w,
            self.cap.target.select_db.unwrap_or(0),
            flags,
        )?;
        crate::report::write_json(&self.peer_json, &r)?;
        Ok(0)
    }
}

/// What every run of a capacity search shares.
pub struct Probe {
    target: crate::conn::Target,
    db: u32,
    flags: RunFlags,
    qos: Qos,
    sustain: f64,
    quiet: bool,
}

impl Probe {
    fn run(&mut self, w: &Workload) -> Result<RunResult, String> {
        run(&self.target, w, self.db, self.flags)
    }

    fn say(&self, s: String) {
        if !self.quiet {
            eprintln!("{s}");
        }
    }
}

/// The load threads' CPU over a run, in % of one core each.
pub fn gen_cpu_pct(w: &Workload, r: &RunResult) -> f64 {
    let wall = (w.warmup + r.seconds).max(1e-9) * w.threads.max(1) as f64;
    r.client_cpu_seconds / wall * 100.0
}

pub fn qos_value(l: &LatencySummary, m: QosMetric) -> f64 {
    match m {
        QosMetric::Avg => l.avg_ms,
        QosMetric::P50 => l.p50_ms,
        QosMetric::P90 => l.p90_ms,
        QosMetric::P99 => l.p99_ms,
        QosMetric::P999 => l.p999_ms,
        QosMetric::Max => l.max_ms,
    }
}

#[derive(Serialize)]
struct CapacityResult {
    target: String,
    qos: Qos,
    /// The closed-loop sweep, every point.
    sweep: Vec<SweepStep>,
    sweep_connections_end: SweepEnd,
    sweep_pipeline_end: SweepEnd,
    /// The sweep's answer: its highest throughput meeting the QoS (0: none did).
    closed_loop_ops_per_sec: f64,
    closed_loop_connections: usize,
    closed_loop_pipeline: usize,
    /// The open-loop search, every rate tried.
    steps: Vec<Step>,
    /// The open loop's answer: achieved throughput at the highest passing rate.
    open_loop_ops_per_sec: f64,
    open_loop_connections: usize,
    open_loop_pipeline: usize,
    /// open / closed.
    agreement_ratio: Option<f64>,
    /// Within 10% of each other.
    agree: bool,
    /// Why the two answers differ, or that they agree.
    verdict: String,
    /// The answer: the open loop's confirmed throughput.
    sustainable_ops_per_sec: f64,
    latency_at_capacity: Option<LatencySummary>,
    server_at_capacity: Option<ServerSummary>,
    generator: Option<Headroom>,
    net_in_bytes_per_sec: f64,
    net_out_bytes_per_sec: f64,
    thresholds: Vec<Threshold>,
    /// The generator, not the server, set a ceiling (its CPU, its connections, or every
    /// offered rate passed).
    limited_by_generator: bool,
}

impl CapacityCmd {
    fn base(&self) -> Result<Workload, String> {
        let mut base = default_workload();
        base.test_time = 5.0;
        base.warmup = 1.0;
        let w = self.load.resolve(base)?;
        if w.rate.is_some() {
            return Err(
                "capacity chooses the rate itself: leave out --rate (use --max-rate)".into(),
            );
        }
        if !(self.sustain > 0.0 && self.sustain <= 1.0) {
            return Err("--sustain must be in (0, 1]".into());
        }
        if self.repeats == 0 {
            return Err("--repeats must be at least 1".into());
        }
        if self.max_clients == 0 || self.max_pipeline == 0 {
            return Err("--max-clients and --max-pipeline must be at least 1".into());
        }
        Ok(w)
    }

    pub fn exec(&self) -> Result<i32, String> {
        let w = self.base()?;
        let mut p = Probe {
            target: self.target.target(),
            db: self.target.select_db.unwrap_or(0),
            flags: RunFlags {
                progress: false,
                sample_server: !self.target.no_server_stats,
            },
            qos: self.qos,
            sustain: self.sustain,
            quiet: self.quiet,
        };
        let sweep = closed::sweep(&mut p, &w, self.max_clients, self.max_pipeline)?;
        let closed_best = sweep.best().cloned();
        let mut second = None;
        if let (Some(b), false) = (&closed_best, self.no_second_generator) {
            let mut wb = w.clone();
            wb.clients = b.connections / w.threads;
            wb.pipeline = b.pipeline;
            let args = capacity_args();
            second = Some(headroom::second_generator(&mut p, &wb, b, &args));
        }
        // The open loop gets twice the ceiling's connections (or what -c/-P say), so a
        // request rarely waits for a free slot at the same rate.
        let mut wo = w.clone();
        let (bc, bp) = closed_best
            .as_ref()
            .map(|b| (b.connections / w.threads, b.pipeline))
            .unwrap_or((1, 1));
        wo.clients = self.load.clients.unwrap_or((bc * 2).max(4));
        wo.pipeline = self.load.pipeline.unwrap_or(bp);
        let start = match (closed_best.as_ref().map(|b| b.ops_per_sec), self.max_rate) {
            (Some(c), Some(m)) => c.min(m),
            (Some(c), None) => c,
            (None, Some(m)) => m,
            // Not even one connection met the QoS: look below what one connection got.
            (None, None) => sweep.steps.first().map(|s| s.ops_per_sec).unwrap_or(0.0),
        };
        let search = if start > 0.0 {
            open::search(&mut p, &wo, start, self.max_rate, self.repeats, self.bisect)?
        } else {
            SearchOutcome {
                steps: Vec::new(),
                best: None,
                never_failed: false,
            }
        };
        let result = self.summarize(&p, &wo, sweep, search, second);
        print!("{}", text(&result));
        if let Some(path) = &self.json {
            crate::report::write_json(path, &result)?;
        }
        if let Some(path) = &self.html {
            let html = crate::html::render(
                &format!("skein-bench capacity: {}", result.target),
                &[sweep_chart(&result, &w)],
                &notes(&result),
            )?;
            std::fs::write(path, html).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        if let Some(path) = &self.alerts {
            let note = format!(
                "{} sustained {:.0} ops/s with {}<{}us",
                result.target,
                result.sustainable_ops_per_sec,
                self.qos.metric.name(),
                self.qos.limit_us
            );
            let y = alerts::rules_yaml(
                &result.thresholds,
                &self.alert_selector,
                "1m",
                &self.alert_for,
                &note,
            );
            std::fs::write(path, y).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        Ok(if result.sustainable_ops_per_sec > 0.0 {
            0
        } else {
            1
        })
    }

    fn summarize(
        &self,
        p: &Probe,
        wo: &Workload,
        sweep: SweepOutcome,
        search: SearchOutcome,
        second: Option<Result<headroom::SecondGenerator, String>>,
    ) -> CapacityResult {
        let best = search.best.as_ref().map(|(_, r)| r);
        let (net_in, net_out) = best.map(|r| r.net_in_out()).unwrap_or((0.0, 0.0));
        let server = best.and_then(|r| r.server.clone());
        let achieved = best.map(|r| r.totals.ops_per_sec).unwrap_or(0.0);
        let mut thresholds = vec![
            threshold(Measure::OpsPerSec, achieved),
            threshold(Measure::NetInBytesPerSec, net_in),
            threshold(Measure::NetOutBytesPerSec, net_out),
        ];
        if let Some(s) = &server {
            match (s.engine_cpu_pct, s.cpu_pct()) {
                (Some(e), _) => thresholds.push(threshold(Measure::EngineCpuPct, e)),
                (None, Some(c)) => thresholds.push(threshold(Measure::ProcessCpuPct, c)),
                _ => {}
            }
        }
        let mut gen = best.map(|r| {
            let mut wr = wo.clone();
            wr.rate = r.offered_rate;
            headroom::of_run(&wr, r)
        });
        match (gen.as_mut(), second) {
            (Some(g), Some(Ok(s))) => g.second_generator = Some(s),
            (Some(g), Some(Err(e))) => g.second_generator_error = Some(e),
            _ => {}
        }
        let cb = sweep.best().cloned();
        let closed = cb.as_ref().map(|b| b.ops_per_sec).unwrap_or(0.0);
        let ratio = (closed > 0.0 && achieved > 0.0).then(|| achieved / closed);
        let agree = ratio.is_some_and(|r| (r - 1.0).abs() <= 0.1);
        let verdict = explain(p, &sweep, &search, closed, achieved, gen.as_ref(), self);
        let limited = search.never_failed
            || cb
                .as_ref()
                .is_some_and(|b| b.generator_cpu_pct >= headroom::CPU_BOUND_PCT)
            || gen.as_ref().is_some_and(|g| {
                g.cpu_bound
                    || g.second_generator
                        .as_ref()
                        .is_some_and(|s| s.limited_by_generator)
            });
        CapacityResult {
            target: p.target.describe(),
            qos: self.qos,
            closed_loop_ops_per_sec: closed,
            closed_loop_connections: cb.as_ref().map(|b| b.connections).unwrap_or(0),
            closed_loop_pipeline: cb.as_ref().map(|b| b.pipeline).unwrap_or(0),
            sweep_connections_end: sweep.end_connections,
            sweep_pipeline_end: sweep.end_pipeline,
            sweep: sweep.steps,
            steps: search.steps,
            open_loop_ops_per_sec: achieved,
            open_loop_connections: wo.total_clients(),
            open_loop_pipeline: wo.pipeline,
            agreement_ratio: ratio,
            agree,
            verdict,
            sustainable_ops_per_sec: achieved,
            latency_at_capacity: best.map(|r| r.totals.latency),
            server_at_capacity: server,
            generator: gen,
            net_in_bytes_per_sec: net_in,
            net_out_bytes_per_sec: net_out,
            thresholds,
            limited_by_generator: limited,
        }
    }
}

/// This process's arguments after the `capacity` word, for the second generator.
fn capacity_args() -> Vec<String> {
    let all: Vec<String> = std::env::args().collect();
    match all.iter().position(|a| a == "capacity") {
        Some(i) => all[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// Why the open loop's failing rates were the generator's failure, if they were: it sent
/// late by over half the bound, or its load thread was saturated.
fn generator_limit(p: &Probe, search: &SearchOutcome) -> Option<String> {
    let failing = || search.steps.iter().filter(|s| !s.passed);
    let late = failing()
        .map(|s| qos_value(&s.lateness, p.qos.metric))
        .fold(0.0, f64::max);
    let cpu = failing().map(|s| s.generator_cpu_pct).fold(0.0, f64::max);
    if late * 1000.0 > p.qos.limit_us / 2.0 {
        return Some(format!("the open loop is limited by the generator, which sent late by {late:.3} ms at the failing rates (give it more CPU or --threads)"));
    }
    if cpu >= headroom::CPU_BOUND_PCT {
        return Some(format!("the open loop is limited by the generator's CPU ({cpu:.0}% of a core per load thread at the failing rates; give it more --threads or cores)"));
    }
    None
}

/// One sentence on how the two answers relate, naming the generator when it is the limit.
fn explain(
    p: &Probe,
    sweep: &SweepOutcome,
    search: &SearchOutcome,
    closed: f64,
    open: f64,
    gen: Option<&Headroom>,
    cmd: &CapacityCmd,
) -> String {
    let q = format!("{}<{}ms", p.qos.metric.name(), p.qos.limit_us / 1000.0);
    if closed <= 0.0 && open <= 0.0 {
        return format!("neither the closed-loop sweep nor the open loop held {q}");
    }
    if closed <= 0.0 {
        return format!("no closed-loop point held {q}, even one connection; the open loop found {open:.0} ops/s");
    }
    if open <= 0.0 {
        let head =
            format!("the closed loop held {q} up to {closed:.0} ops/s but no offered rate did: ");
        return head
            + &generator_limit(p, search).unwrap_or_else(|| {
                "requests arriving at a steady rate queue while the server is busy, which a closed loop never offers it".into()
            });
    }
    let ratio = open / closed;
    if (ratio - 1.0).abs() <= 0.1 {
        return format!(
            "the closed-loop sweep ({closed:.0} ops/s) and the open loop ({open:.0} ops/s) agree within 10% (ratio {ratio:.2})"
        );
    }
    let head = format!(
        "the closed-loop sweep ({closed:.0} ops/s) and the open loop ({open:.0} ops/s) differ by more than 10% (ratio {ratio:.2}): "
    );
    if ratio < 1.0 {
        if let Some(why) = generator_limit(p, search) {
            return head + &why;
        }
        return head + "the server holds the QoS for the closed loop, which slows down with it, but not for the same rate offered steadily (requests arriving while it is busy queue): plan with the open loop's answer";
    }
    let best = sweep.best();
    if let Some(b) = best.filter(|b| b.generator_cpu_pct >= headroom::CPU_BOUND_PCT) {
        return head + &format!("the closed loop is limited by the generator's CPU ({:.0}% of a core per thread at its ceiling)", b.generator_cpu_pct);
    }
    if let Some(s) = gen
        .and_then(|g| g.second_generator.as_ref())
        .filter(|s| s.limited_by_generator)
    {
        return head + &format!("the closed loop is limited by the generator: a second generator beside it got {:.0}% more within the QoS", (s.gain - 1.0) * 100.0);
    }
    if sweep.end_connections == SweepEnd::Limit && sweep.end_pipeline == SweepEnd::Limit {
        return head + &format!("the closed loop reached --max-clients {} and --max-pipeline {} before the QoS stopped it", cmd.max_clients, cmd.max_pipeline);
    }
    head + "the closed loop moves in doubling steps of concurrency and its next step missed the QoS; the open loop's rate lies between them and is the finer answer"
}

fn notes(r: &CapacityResult) -> Vec<String> {
    let q = format!("{}<{}ms", r.qos.metric.name(), r.qos.limit_us / 1000.0);
    let mut n = vec![format!(
        "Sustainable throughput: {:.0} ops/s with {q}.",
        r.sustainable_ops_per_sec
    )];
    n.push(format!("Verdict: {}.", r.verdict));
    if let Some(g) = &r.generator {
        n.push(generator_line(g));
    }
    for s in &r.steps {
        n.push(format!(
            "Open loop offered {:.0} ops/s: achieved {:.0}, {} {:.3} ms, less the generator's lateness {:.3} ms (lateness p99 {:.3} ms): {}.",
            s.offered,
            s.achieved,
            r.qos.metric.name(),
            qos_value(&s.latency, r.qos.metric),
            qos_value(&s.server_latency, r.qos.metric),
            s.lateness.p99_ms,
            s.verdict.text()
        ));
    }
    n
}

fn generator_line(g: &Headroom) -> String {
    let mut s = format!(
        "Generator: {:.0}% of a core per load thread, {:.2} us CPU per request{}.",
        g.generator_cpu_pct,
        g.generator_cpu_us_per_op,
        if g.cpu_bound { " (saturated)" } else { "" }
    );
    if let Some(p) = &g.second_generator {
        let _ = write!(
            s,
            " A second generator beside it at the closed-loop ceiling ({} connections x pipeline {}): {:.0} ops/s together against {:.0} alone ({:+.0}%), {}.",
            p.connections,
            p.pipeline,
            p.together_ops_per_sec,
            p.alone_ops_per_sec,
            (p.gain - 1.0) * 100.0,
            if p.limited_by_generator {
                "so one generator was the limit"
            } else {
                "so the server, not the generator, was the limit"
            }
        );
    }
    if let Some(e) = &g.second_generator_error {
        let _ = write!(s, " Second generator: {e}.");
    }
    s
}

fn sweep_chart(r: &CapacityResult, w: &Workload) -> crate::sweep::Sweep {
    crate::sweep::Sweep {
        label: r.target.clone(),
        target: r.target.clone(),
        dimension: "inflight".into(),
        workload: crate::sweep::describe(w),
        points: r.sweep.iter().map(|s| s.point.clone()).collect(),
    }
}

fn text(r: &CapacityResult) -> String {
    let mut out = String::new();
    let q = format!("{}<{}ms", r.qos.metric.name(), r.qos.limit_us / 1000.0);
    let mut t = Table::new(&[
        "Connections",
        "Pipeline",
        "Ops/s",
        "QoS ms",
        "Gen CPU %",
        "",
    ]);
    for s in &r.sweep {
        t.row(vec![
            s.connections.to_string(),
            s.pipeline.to_string(),
            f0(s.ops_per_sec),
            format!("{:.3}", qos_value(&s.latency, r.qos.metric)),
            f0(s.generator_cpu_pct),
            if s.passed { "ok" } else { "over QoS" }.into(),
        ]);
    }
    let _ = writeln!(out, "closed-loop sweep ({q}):");
    out.push_str(&t.render());
    let mut t = Table::new(&[
        "Offered",
        "Achieved",
        "QoS ms",
        "Less lateness",
        "Lateness p99",
        "Verdict",
    ]);
    for s in &r.steps {
        t.row(vec![
            f0(s.offered),
            f0(s.achieved),
            format!("{:.3}", qos_value(&s.latency, r.qos.metric)),
            format!("{:.3}", qos_value(&s.server_latency, r.qos.metric)),
            format!("{:.3}", s.lateness.p99_ms),
            s.verdict.text().into(),
        ]);
    }
    let _ = writeln!(
        out,
        "open loop ({} connections x pipeline {}):",
        r.open_loop_connections, r.open_loop_pipeline
    );
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "closed loop: {:.0} ops/s at {} connections x pipeline {}; open loop: {:.0} ops/s",
        r.closed_loop_ops_per_sec,
        r.closed_loop_connections,
        r.closed_loop_pipeline,
        r.open_loop_ops_per_sec
    );
    let _ = writeln!(out, "verdict: {}", r.verdict);
    if r.steps.iter().any(|s| s.verdict == Verdict::GeneratorLate) {
        let _ = writeln!(out, "note: some rates missed {q} only by the generator's own lateness; they count as passed (see 'Less lateness')");
    }
    if let Some(g) = &r.generator {
        let _ = writeln!(out, "{}", generator_line(g));
    }
    if r.latency_at_capacity.is_none() {
        let _ = writeln!(
            out,
            "{}: no tested rate held {q} (lowest tried: {:.0} ops/s)",
            r.target,
            r.steps
                .iter()
                .map(|s| s.offered)
                .fold(f64::INFINITY, f64::min)
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{}: sustainable throughput {:.0} ops/s with {q}",
        r.target, r.sustainable_ops_per_sec
    );
    if let Some(l) = &r.latency_at_capacity {
        let _ = writeln!(
            out,
            "latency there: avg {:.3} ms, p50 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3}",
            l.avg_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        );
    }
    let _ = writeln!(
        out,
        "network there: in {}, out {}",
        rate_bytes(r.net_in_bytes_per_sec),
        rate_bytes(r.net_out_bytes_per_sec)
    );
    if let Some(s) = &r.server_at_capacity {
        out.push_str(&crate::report::server_lines(s, r.sustainable_ops_per_sec));
    }
    if r.limited_by_generator {
        out.push_str("note: the generator, not the server, set a ceiling here (see the verdict and the generator line): raise --threads, --max-clients, --max-pipeline or --max-rate, or run it from another machine\n");
    }
    let mut t = Table::new(&["Alarm on", "100%", "90%", "80%", "metric (PromQL)"]);
    for th in &r.thresholds {
        let fmt = |v: f64| if th.label.contains('%') { f2(v) } else { f0(v) };
        let mut row = vec![th.label.clone()];
        row.extend(th.levels.iter().map(|(_, v)| fmt(*v)));
        row.push(th.metric.clone());
        t.row(row);
    }
    out.push_str(&t.render());
    out
}
