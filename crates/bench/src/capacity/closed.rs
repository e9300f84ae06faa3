//! The operators' sweep: closed-loop runs at rising concurrency (connections, then pipeline
//! depth at the best connection count); the answer is the highest throughput whose latency
//! meets the QoS.

use super::{headroom, qos_value, Probe};
use crate::hist::LatencySummary;
use crate::info::ServerSummary;
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
    /// The generator's CPU microseconds per request.
    pub generator_cpu_us_per_op: f64,
    pub passed: bool,
    /// The figures drawn in the HTML report.
    #[serde(skip)]
    pub point: Point,
    /// What the server did (INFO), for the thresholds when this point is the answer.
    #[serde(skip)]
    pub server: Option<ServerSummary>,
}

/// Where the sweep stopped rising and why.
#[derive(Clone, Copy, Serialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum SweepEnd {
    /// Two points in a row missed the QoS.
    OverQos,
    /// The last two steps together added under 5% throughput.
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

/// Raises one dimension (doubling) until two points in a row fail the QoS, the
/// throughput stops rising, or `max` is reached.
fn climb(
    p: &mut Probe,
    base: &Workload,
    from: usize,
    max: usize,
    set: impl Fn(&mut Workload, usize),
    out: &mut SweepOutcome,
) -> Result<SweepEnd, String> {
    // The best passing throughput before each passing step of this climb.
    let mut bests = Vec::new();
    let mut misses = 0;
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
        if passed {
            bests.push(best_ops);
        }
        if passed && step.ops_per_sec > best_ops {
            out.best = Some(out.steps.len());
        }
        out.steps.push(step);
        misses = if passed { 0 } else { misses + 1 };
        let now = out.best().map(|b| b.ops_per_sec).unwrap_or(0.0);
        if let Some(end) = end_of_climb(misses, &bests, now, x.saturating_mul(2) > max) {
            return Ok(end);
        }
        x *= 2;
    }
}

/// Whether a climb ends after its last point: `misses` points in a row over the QoS,
/// `bests` and `now` as for [`plateau`] (passing points only), `at_max` when the next
/// doubling passes the limit. Like the hand sweep, which keeps every passing point, one
/// point over the QoS (a latency spike from a busy machine) does not end the climb; two in
/// a row do.
fn end_of_climb(misses: u32, bests: &[f64], now: f64, at_max: bool) -> Option<SweepEnd> {
    if misses >= 2 {
        Some(SweepEnd::OverQos)
    } else if misses == 0 && plateau(bests, now) {
        Some(SweepEnd::Plateau)
    } else if at_max {
        Some(SweepEnd::Limit)
    } else {
        None
    }
}

/// The last two passing doublings together added under 5% to the best throughput
/// (`bests`: the best before each passing step so far, `now`: the best after the last). Two steps, not one,
/// so a single low point (noise, a busy core) does not end the climb, and two small gains
/// that add up to a meaningful one do not either.
fn plateau(bests: &[f64], now: f64) -> bool {
    bests.len() >= 2 && now < bests[bests.len() - 2] * 1.05
}

fn step_of(p: &Probe, w: &Workload, r: &RunResult) -> SweepStep {
    let gen = headroom::of_run(w, r);
    SweepStep {
        connections: w.total_clients(),
        pipeline: w.pipeline,
        ops_per_sec: r.totals.ops_per_sec,
        latency: r.totals.latency,
        generator_cpu_pct: gen.generator_cpu_pct,
        generator_cpu_us_per_op: gen.generator_cpu_us_per_op,
        passed: qos_value(&r.totals.latency, p.qos.metric) * 1000.0 <= p.qos.limit_us
            && r.totals.ops > 0,
        point: Point::of_run((w.total_clients() * w.pipeline) as f64, w, r),
        server: r.server.clone(),
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

#[cfg(test)]
mod tests {
    use super::{end_of_climb, plateau, SweepEnd};

    #[test]
    fn one_point_over_the_qos_does_not_end_the_climb() {
        // 10k passed, then a point over the QoS: go on, even with the best flat.
        assert_eq!(end_of_climb(1, &[0.0, 10e3], 10e3, false), None);
        assert_eq!(end_of_climb(1, &[5e3, 10e3], 10e3, false), None);
        // A second one in a row: stop.
        assert_eq!(
            end_of_climb(2, &[0.0, 10e3, 10e3], 10e3, false),
            Some(SweepEnd::OverQos)
        );
        // Still rising but the next doubling passes --max-clients.
        assert_eq!(
            end_of_climb(0, &[0.0, 10e3], 40e3, true),
            Some(SweepEnd::Limit)
        );
        assert_eq!(
            end_of_climb(0, &[100.0, 101.0], 102.0, false),
            Some(SweepEnd::Plateau)
        );
    }

    #[test]
    fn plateau_needs_two_steps_that_together_add_under_five_percent() {
        // One step: never a plateau.
        assert!(!plateau(&[100.0], 101.0));
        // 100 -> 102 -> 103: 3% over two steps.
        assert!(plateau(&[100.0, 102.0], 103.0));
        // 100 -> 104 -> 108: each step under 5%, together 8%: still rising.
        assert!(!plateau(&[100.0, 104.0], 108.0));
        // A low point, then a gain: judged on the best, which the low point kept.
        assert!(!plateau(&[100.0, 100.0], 120.0));
        // Growing by 30% a step.
        assert!(!plateau(&[0.0, 100.0, 130.0], 169.0));
    }
}
