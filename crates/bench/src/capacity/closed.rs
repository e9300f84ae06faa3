//! The operators' sweep: closed-loop runs at rising concurrency (connections, then pipeline
//! depth at the best connection count); the answer is the highest throughput whose latency
//! meets the QoS.

use super::{gen_cpu_pct, qos_value, Probe};
use crate::hist::LatencySummary;
use crate::run::RunResult;
use crate::sweep::Point;
use crate::workload::Workload;
use serde::Serialize;

/// One closed-loop point.
#[derive(Clone, Serialize)]
pub struct SweepStep {
    pub connections: usize,
    pub pipeline: usize,
    pub ops_per_sec: f64,
    pub latency: LatencySummary,
    /// The load threads' CPU, in % of one core each (near 100: the generator is the limit).
    pub generator_cpu_pct: f64,
    pub passed: bool,
    /// The figures drawn in the HTML report.
    #[serde(skip)]
    pub point: Point,
}

/// Where the sweep stopped rising and why.
#[derive(Clone, Copy, Serialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum SweepEnd {
    /// A point missed the QoS.
    OverQos,
    /// Two steps in a row added under 5% throughput.
    Plateau,
    /// --max-clients or --max-pipeline reached.
    Limit,
}

pub struct SweepOutcome {
    pub steps: Vec<SweepStep>,
    /// Index into `steps` of the highest passing throughput.
    pub best: Option<usize>,
    pub end_connections: SweepEnd,
    pub end_pipeline: SweepEnd,
}

impl SweepOutcome {
    pub fn best(&self) -> Option<&SweepStep> {
        self.best.map(|i| &self.steps[i])
    }
}

/// Raises one dimension (doubling) until a point fails the QoS, the throughput stops
/// rising, or `max` is reached.
fn climb(
    p: &mut Probe,
    base: &Workload,
    from: usize,
    max: usize,
    set: impl Fn(&mut Workload, usize),
    out: &mut SweepOutcome,
) -> Result<SweepEnd, String> {
    let mut flat = 0;
    let mut x = from;
    loop {
        let mut w = base.clone();
        set(&mut w, x);
        let r = p.run(&w)?;
        let step = step_of(p, &w, &r);
        p.say(format!(
            "closed loop {:>5} connections x pipeline {:<3} {:>10.0} ops/s  {} {:>8.3} ms  {}",
            step.connections,
            step.pipeline,
            step.ops_per_sec,
            p.qos.metric.name(),
            qos_value(&step.latency, p.qos.metric),
            if step.passed { "ok" } else { "over QoS" }
        ));
        let best_ops = out.best().map(|b| b.ops_per_sec).unwrap_or(0.0);
        let passed = step.passed;
        let rising = step.ops_per_sec >= best_ops * 1.05;
        if passed && step.ops_per_sec > best_ops {
            out.best = Some(out.steps.len());
        }
        out.steps.push(step);
        if !passed {
            return Ok(SweepEnd::OverQos);
        }
        flat = if rising { 0 } else { flat + 1 };
        if flat >= 2 {
            return Ok(SweepEnd::Plateau);
        }
        if x.saturating_mul(2) > max {
            return Ok(SweepEnd::Limit);
        }
        x *= 2;
    }
}

fn step_of(p: &Probe, w: &Workload, r: &RunResult) -> SweepStep {
    SweepStep {
        connections: w.total_clients(),
        pipeline: w.pipeline,
        ops_per_sec: r.totals.ops_per_sec,
        latency: r.totals.latency,
        generator_cpu_pct: gen_cpu_pct(w, r),
        passed: qos_value(&r.totals.latency, p.qos.metric) * 1000.0 <= p.qos.limit_us
            && r.totals.ops > 0,
        point: Point::of_run((w.total_clients() * w.pipeline) as f64, w, r),
    }
}

/// Connections 1, 2, 4, ... per load thread at pipeline 1, then pipeline 2, 4, ... at the
/// best connection count.
pub fn sweep(
    p: &mut Probe,
    base: &Workload,
    max_connections: usize,
    max_pipeline: usize,
) -> Result<SweepOutcome, String> {
    let mut w = base.clone();
    w.rate = None;
    w.pipeline = 1;
    let mut out = SweepOutcome {
        steps: Vec::new(),
        best: None,
        end_connections: SweepEnd::Limit,
        end_pipeline: SweepEnd::Limit,
    };
    let per_thread_max = (max_connections / w.threads).max(1);
    out.end_connections = climb(p, &w, 1, per_thread_max, |w, c| w.clients = c, &mut out)?;
    let Some(b) = out.best() else {
        return Ok(out);
    };
    w.clients = b.connections / w.threads;
    if max_pipeline >= 2 {
        out.end_pipeline = climb(p, &w, 2, max_pipeline, |w, d| w.pipeline = d, &mut out)?;
    }
    Ok(out)
}
