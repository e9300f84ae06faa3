//! `skein-bench capacity`: the highest offered rate (open loop) at which the server holds a
//! latency QoS, found by stepping the rate up and then bisecting; then alarm thresholds.

use crate::alerts::{self, threshold, Measure, Threshold};
use crate::hist::LatencySummary;
use crate::info::ServerSummary;
use crate::opts::{default_workload, LoadArgs, TargetArgs};
use crate::report::{f0, f2, rate_bytes, Table};
use crate::run::{run, RunFlags, RunResult};
use crate::spec::{self, Qos, QosMetric};
use clap::Args;
use serde::Serialize;
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
    /// Each rate must pass this many runs in a row (each --test-time long after --warmup)
    #[arg(long, default_value_t = 2, help_heading = "Capacity")]
    pub repeats: u32,
    /// Bisection steps between the last passing and the first failing rate
    #[arg(long, default_value_t = 5, help_heading = "Capacity")]
    pub bisect: u32,
    /// A rate passes only if it achieves at least this fraction of the offered rate
    #[arg(long, default_value_t = 0.97, help_heading = "Capacity")]
    pub sustain: f64,
    /// Highest rate to try (default: what a closed-loop probe reaches)
    #[arg(long, value_name = "OPS", help_heading = "Capacity")]
    pub max_rate: Option<f64>,
    /// Write the search, the point at capacity and the thresholds to this JSON file
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
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

#[derive(Serialize)]
struct Step {
    offered: f64,
    achieved: f64,
    latency: LatencySummary,
    passed: bool,
}

#[derive(Serialize)]
struct CapacityResult {
    target: String,
    qos: Qos,
    probe_ops_per_sec: f64,
    steps: Vec<Step>,
    sustainable_ops_per_sec: f64,
    latency_at_capacity: Option<LatencySummary>,
    server_at_capacity: Option<ServerSummary>,
    net_in_bytes_per_sec: f64,
    net_out_bytes_per_sec: f64,
    thresholds: Vec<Threshold>,
    /// Set when even the top rate passed: the generator's connections were the limit.
    limited_by_generator: bool,
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

impl CapacityCmd {
    fn base(&self) -> Result<crate::workload::Workload, String> {
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
        Ok(w)
    }

    pub fn exec(&self) -> Result<i32, String> {
        let w = self.base()?;
        let target = self.target.target();
        let db = self.target.select_db.unwrap_or(0);
        let flags = RunFlags {
            progress: false,
            sample_server: !self.target.no_server_stats,
        };
        let say = |s: String| {
            if !self.quiet {
                eprintln!("{s}");
            }
        };
        let probe = match self.max_rate {
            Some(r) => r,
            None => {
                let r = run(&target, &w, db, flags)?;
                say(format!(
                    "closed-loop probe: {:.0} ops/s, {} {:.3} ms",
                    r.totals.ops_per_sec,
                    self.qos.metric.name(),
                    qos_value(&r.totals.latency, self.qos.metric)
                ));
                r.totals.ops_per_sec
            }
        };
        if probe <= 0.0 {
            return Err("the probe completed no requests".into());
        }
        let mut steps = Vec::new();
        // Try a rate `repeats` times; keep the last passing run.
        let attempt = |rate: f64, steps: &mut Vec<Step>| -> Result<Option<RunResult>, String> {
            let mut wr = w.clone();
            wr.rate = Some(rate);
            let mut last = None;
            for _ in 0..self.repeats {
                let r = run(&target, &wr, db, flags)?;
                let lat = qos_value(&r.totals.latency, self.qos.metric) * 1000.0;
                let passed = lat <= self.qos.limit_us
                    && r.totals.ops_per_sec >= self.sustain * rate
                    && r.unsent == 0;
                say(format!(
                    "offered {:>10.0} ops/s  achieved {:>10.0}  {} {:>8.3} ms  {}",
                    rate,
                    r.totals.ops_per_sec,
                    self.qos.metric.name(),
                    lat / 1000.0,
                    if passed { "ok" } else { "FAIL" }
                ));
                steps.push(Step {
                    offered: rate,
                    achieved: r.totals.ops_per_sec,
                    latency: r.totals.latency,
                    passed,
                });
                if !passed {
                    return Ok(None);
                }
                last = Some(r);
            }
            Ok(last)
        };
        let (mut lo, mut best, mut hi) = (0.0, None, None);
        for frac in [0.25, 0.5, 0.75, 0.9, 1.0] {
            let rate = probe * frac;
            match attempt(rate, &mut steps)? {
                Some(r) => (lo, best) = (rate, Some(r)),
                None => {
                    hi = Some(rate);
                    break;
                }
            }
        }
        let limited = hi.is_none();
        if let Some(mut h) = hi {
            for _ in 0..self.bisect {
                if h - lo <= h * 0.01 {
                    break;
                }
                let mid = (lo + h) / 2.0;
                match attempt(mid, &mut steps)? {
                    Some(r) => (lo, best) = (mid, Some(r)),
                    None => h = mid,
                }
            }
        }
        let result = self.summarize(&target.describe(), probe, steps, best.as_ref(), limited);
        print!("{}", text(&result));
        if let Some(p) = &self.json {
            crate::report::write_json(p, &result)?;
        }
        if let Some(p) = &self.alerts {
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
            std::fs::write(p, y).map_err(|e| format!("write {}: {e}", p.display()))?;
        }
        Ok(if best.is_some() { 0 } else { 1 })
    }

    fn summarize(
        &self,
        target: &str,
        probe: f64,
        steps: Vec<Step>,
        best: Option<&RunResult>,
        limited: bool,
    ) -> CapacityResult {
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
        CapacityResult {
            target: target.to_string(),
            qos: self.qos,
            probe_ops_per_sec: probe,
            steps,
            sustainable_ops_per_sec: achieved,
            latency_at_capacity: best.map(|r| r.totals.latency),
            server_at_capacity: server,
            net_in_bytes_per_sec: net_in,
            net_out_bytes_per_sec: net_out,
            thresholds,
            limited_by_generator: limited,
        }
    }
}

fn text(r: &CapacityResult) -> String {
    let mut out = String::new();
    let q = format!("{}<{}ms", r.qos.metric.name(), r.qos.limit_us / 1000.0);
    if r.latency_at_capacity.is_none() {
        out.push_str(&format!(
            "{}: no tested rate held {q} (lowest tried: {:.0} ops/s)\n",
            r.target,
            r.steps.first().map(|s| s.offered).unwrap_or(0.0)
        ));
        return out;
    }
    out.push_str(&format!(
        "{}: sustainable throughput {:.0} ops/s with {q}\n",
        r.target, r.sustainable_ops_per_sec
    ));
    if let Some(l) = &r.latency_at_capacity {
        out.push_str(&format!(
            "latency there: avg {:.3} ms, p50 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3}\n",
            l.avg_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        ));
    }
    out.push_str(&format!(
        "network there: in {}, out {}\n",
        rate_bytes(r.net_in_bytes_per_sec),
        rate_bytes(r.net_out_bytes_per_sec)
    ));
    if let Some(s) = &r.server_at_capacity {
        out.push_str(&crate::report::server_lines(s, r.sustainable_ops_per_sec));
    }
    if r.limited_by_generator {
        out.push_str("note: the highest rate tried still passed; the generator's connections were the limit (raise --clients, --pipeline or --max-rate)\n");
    }
    let mut t = Table::new(&["Alarm on", "100%", "90%", "80%"]);
    for th in &r.thresholds {
        let fmt = |v: f64| if th.label.contains('%') { f2(v) } else { f0(v) };
        let mut row = vec![th.label.clone()];
        row.extend(th.levels.iter().map(|(_, v)| fmt(*v)));
        t.row(row);
    }
    out.push_str(&t.render());
    out
}
