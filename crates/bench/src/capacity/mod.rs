//! `skein-bench capacity`: the highest throughput at which the server holds a latency QoS,
//! found the two ways operators use, which must agree: a closed-loop sweep of concurrency
//! (connections, then pipeline depth; the highest throughput whose latency meets the QoS)
//! and an open-loop search of offered rates that starts from that answer and confirms it.
//! Points the generator failed (its own lateness, its CPU) are labelled, not charged to
//! the server; when the generator, not the server, kept the open loop from confirming the
//! sweep's answer, that answer is the capacity, labelled "not confirmed by the open loop".
//! Then alarm thresholds at the answer.

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

#[derive(Clone, Copy, Serialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
enum Source {
    OpenLoop,
    ClosedLoop,
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
    /// The generator's lateness and CPU at the open loop's failing rates, when they (not
    /// the server) failed them.
    open_loop_generator_limit: Option<OpenLoopLimit>,
    /// open / closed.
    agreement_ratio: Option<f64>,
    /// Within 10% of each other.
    agree: bool,
    /// Why the two answers differ, or that they agree.
    verdict: String,
    /// Where the answer comes from: the open loop, or the closed-loop sweep when the
    /// open loop was limited by the generator.
    capacity_source: Source,
    /// Set when the answer is the sweep's because the generator limited the open loop:
    /// "not confirmed by the open loop: generator-limited (lateness X ms, generator CPU Y%)".
    not_confirmed: Option<String>,
    /// The answer: the open loop's confirmed throughput, or the closed-loop sweep's when
    /// the generator, not the server, failed the open loop (see `not_confirmed`).
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
            p.say(format!(
                "open loop from {start:.0} ops/s on {} connections x pipeline {}",
                wo.total_clients(),
                wo.pipeline
            ));
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
        let open_best = search.best.as_ref().map(|(_, r)| r);
        let achieved = open_best.map(|r| r.totals.ops_per_sec).unwrap_or(0.0);
        let cb = sweep.best().cloned();
        let closed = cb.as_ref().map(|b| b.ops_per_sec).unwrap_or(0.0);
        let open_limit = generator_limit(self.qos, &search);
        let unconfirmed = cb
            .as_ref()
            .zip(open_limit.as_ref())
            .filter(|_| source(closed, achieved, open_limit.as_ref()) == Source::ClosedLoop);
        let at = match (unconfirmed, open_best) {
            (Some((b, _)), _) => Some(AtCapacity::of_step(b)),
            (None, Some(r)) => Some(AtCapacity::of_run(wo, r)),
            (None, None) => None,
        };
        let sustainable = at.as_ref().map(|a| a.ops_per_sec).unwrap_or(0.0);
        let (net_in, net_out) = at.as_ref().map(|a| a.net).unwrap_or((0.0, 0.0));
        let server = at.as_ref().and_then(|a| a.server.clone());
        let mut thresholds = vec![
            threshold(Measure::OpsPerSec, sustainable),
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
        let mut gen = at.as_ref().map(|a| a.headroom());
        match (gen.as_mut(), second) {
            (Some(g), Some(Ok(s))) => g.second_generator = Some(s),
            (Some(g), Some(Err(e))) => g.second_generator_error = Some(e),
            _ => {}
        }
        let ratio = (closed > 0.0 && achieved > 0.0).then(|| achieved / closed);
        let agree = ratio.is_some_and(|r| (r - 1.0).abs() <= 0.1);
        let verdict = explain(
            p,
            &sweep,
            open_limit.as_ref(),
            closed,
            achieved,
            gen.as_ref(),
            self,
        );
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
            open_loop_generator_limit: open_limit,
            agreement_ratio: ratio,
            agree,
            verdict,
            capacity_source: if unconfirmed.is_some() {
                Source::ClosedLoop
            } else {
                Source::OpenLoop
            },
            not_confirmed: unconfirmed.map(|(_, l)| l.label()),
            sustainable_ops_per_sec: sustainable,
            latency_at_capacity: at.as_ref().map(|a| a.latency),
            server_at_capacity: server,
            generator: gen,
            net_in_bytes_per_sec: net_in,
            net_out_bytes_per_sec: net_out,
            thresholds,
            limited_by_generator: limited,
        }
    }
}

/// Whose answer is the capacity. The open loop's, unless it fell more than 10% short of
/// the closed-loop sweep's only because the generator could not offer the load on
/// schedule (`limit`): that ceiling is the generator's, not the server's, so the sweep's
/// answer stands (labelled). Short of it with the generator keeping up, the open loop's
/// lower answer is the server's real limit.
fn source(closed: f64, open: f64, limit: Option<&OpenLoopLimit>) -> Source {
    if closed > 0.0 && open < closed * 0.9 && limit.is_some() {
        Source::ClosedLoop
    } else {
        Source::OpenLoop
    }
}

/// The figures of the point taken as the capacity: the open loop's highest passing rate,
/// or the closed-loop sweep's answer when the open loop could not confirm it.
struct AtCapacity {
    ops_per_sec: f64,
    latency: LatencySummary,
    server: Option<ServerSummary>,
    net: (f64, f64),
    generator_cpu_pct: f64,
    generator_cpu_us_per_op: f64,
}

impl AtCapacity {
    fn of_run(wo: &Workload, r: &RunResult) -> AtCapacity {
        let mut wr = wo.clone();
        wr.rate = r.offered_rate;
        let h = headroom::of_run(&wr, r);
        AtCapacity {
            ops_per_sec: r.totals.ops_per_sec,
            latency: r.totals.latency,
            server: r.server.clone(),
            net: r.net_in_out(),
            generator_cpu_pct: h.generator_cpu_pct,
            generator_cpu_us_per_op: h.generator_cpu_us_per_op,
        }
    }

    fn of_step(s: &SweepStep) -> AtCapacity {
        AtCapacity {
            ops_per_sec: s.ops_per_sec,
            latency: s.latency,
            server: s.server.clone(),
            net: (s.point.net_in_bytes_per_sec, s.point.net_out_bytes_per_sec),
            generator_cpu_pct: s.generator_cpu_pct,
            generator_cpu_us_per_op: s.generator_cpu_us_per_op,
        }
    }

    fn headroom(&self) -> Headroom {
        Headroom::new(self.generator_cpu_pct, self.generator_cpu_us_per_op)
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

/// The generator's figures at the open loop's failing rates, when they, not the server,
/// failed them: it sent late by over half the bound, or its load thread was saturated.
#[derive(Clone, Copy, Serialize)]
pub struct OpenLoopLimit {
    /// The worst lateness (the QoS figure of it, ms) at the failing rates.
    pub lateness_ms: f64,
    /// The busiest load thread (% of one core) at the failing rates.
    pub generator_cpu_pct: f64,
    /// The lateness explains the failures (over half the bound).
    pub late: bool,
    /// The load thread was saturated.
    pub cpu_bound: bool,
}

impl OpenLoopLimit {
    /// The label a capacity that the open loop could not confirm carries.
    pub fn label(&self) -> String {
        format!(
            "not confirmed by the open loop: generator-limited (lateness {:.3} ms, generator CPU {:.0}%)",
            self.lateness_ms, self.generator_cpu_pct
        )
    }

    fn why(&self) -> String {
        if self.late {
            format!("the open loop is limited by the generator, which sent late by {:.3} ms at the failing rates (give it more CPU or --threads)", self.lateness_ms)
        } else {
            format!("the open loop is limited by the generator's CPU ({:.0}% of a core per load thread at the failing rates; give it more --threads or cores)", self.generator_cpu_pct)
        }
    }
}

/// Whether the open loop's failing rates were the generator's failure.
fn generator_limit(qos: Qos, search: &SearchOutcome) -> Option<OpenLoopLimit> {
    let failing = || search.steps.iter().filter(|s| !s.passed);
    let lateness_ms = failing()
        .map(|s| qos_value(&s.lateness, qos.metric))
        .fold(0.0, f64::max);
    let generator_cpu_pct = failing().map(|s| s.generator_cpu_pct).fold(0.0, f64::max);
    let l = OpenLoopLimit {
        lateness_ms,
        generator_cpu_pct,
        late: lateness_ms * 1000.0 > qos.limit_us / 2.0,
        cpu_bound: generator_cpu_pct >= headroom::CPU_BOUND_PCT,
    };
    (l.late || l.cpu_bound).then_some(l)
}

/// One sentence on how the two answers relate, naming the generator when it is the limit.
fn explain(
    p: &Probe,
    sweep: &SweepOutcome,
    limit: Option<&OpenLoopLimit>,
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
            + &limit.map(|l| l.why() + "; the capacity is the closed-loop sweep's answer").unwrap_or_else(|| {
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
        if let Some(l) = limit {
            return head + &l.why() + "; the capacity is the closed-loop sweep's answer";
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
        "Sustainable throughput: {:.0} ops/s with {q}{}.",
        r.sustainable_ops_per_sec,
        source_note(r)
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

/// After the answer: whose answer it is when the open loop could not confirm it.
fn source_note(r: &CapacityResult) -> String {
    match &r.not_confirmed {
        Some(label) => format!(" (the closed-loop sweep's answer; {label})"),
        None => String::new(),
    }
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
        "{}: sustainable throughput {:.0} ops/s with {q}{}",
        r.target,
        r.sustainable_ops_per_sec,
        source_note(r)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p99_ms: f64) -> LatencySummary {
        LatencySummary {
            count: 1000,
            p99_ms,
            ..LatencySummary::default()
        }
    }

    fn step(offered: f64, passed: bool, late_p99_ms: f64, cpu: f64) -> Step {
        Step {
            offered,
            achieved: offered,
            latency: summary(late_p99_ms + 0.5),
            lateness: summary(late_p99_ms),
            server_latency: summary(0.5),
            generator_cpu_pct: cpu,
            passed,
            verdict: if passed {
                Verdict::Ok
            } else {
                Verdict::OverQos
            },
        }
    }

    fn search(steps: Vec<Step>) -> SearchOutcome {
        SearchOutcome {
            steps,
            best: None,
            never_failed: false,
        }
    }

    const QOS: Qos = Qos {
        metric: QosMetric::P99,
        limit_us: 1000.0,
    };

    #[test]
    fn late_generator_at_the_failing_rates_leaves_the_closed_answer() {
        // Failing rates sent 5 ms late against a 1 ms bound: the generator failed them.
        let s = search(vec![
            step(100e3, false, 5.0, 60.0),
            step(30e3, true, 0.1, 30.0),
        ]);
        let l = generator_limit(QOS, &s).expect("generator-limited");
        assert!(l.late && !l.cpu_bound);
        assert_eq!(source(100e3, 30e3, Some(&l)), Source::ClosedLoop);
        let label = l.label();
        assert!(label.starts_with("not confirmed by the open loop: generator-limited (lateness 5.000 ms, generator CPU 60%)"), "{label}");
    }

    #[test]
    fn saturated_generator_at_the_failing_rates_leaves_the_closed_answer() {
        let s = search(vec![step(100e3, false, 0.1, 99.0)]);
        let l = generator_limit(QOS, &s).expect("generator-limited");
        assert!(l.cpu_bound && !l.late);
        assert_eq!(source(100e3, 0.0, Some(&l)), Source::ClosedLoop);
    }

    #[test]
    fn a_server_failing_the_open_loop_gets_the_lower_answer() {
        // On schedule (lateness 0.05 ms) with CPU to spare: the server failed the rates.
        let s = search(vec![
            step(100e3, false, 0.05, 40.0),
            step(50e3, true, 0.05, 20.0),
        ]);
        assert!(generator_limit(QOS, &s).is_none());
        assert_eq!(source(100e3, 50e3, None), Source::OpenLoop);
    }

    #[test]
    fn agreeing_or_higher_open_answers_stand() {
        let l = generator_limit(QOS, &search(vec![step(1e5, false, 9.0, 99.0)]));
        assert_eq!(source(100e3, 95e3, l.as_ref()), Source::OpenLoop);
        assert_eq!(source(100e3, 130e3, l.as_ref()), Source::OpenLoop);
        // No closed answer to fall back on.
        assert_eq!(source(0.0, 10e3, l.as_ref()), Source::OpenLoop);
    }

    #[test]
    fn passing_rates_say_nothing_about_the_generator() {
        let s = search(vec![step(100e3, true, 9.0, 99.0)]);
        assert!(generator_limit(QOS, &s).is_none());
    }
}
