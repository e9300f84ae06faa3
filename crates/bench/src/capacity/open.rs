//! The open-loop search: offered rates from the closed-loop answer, up while they pass and
//! down while they fail, then bisection. A rate passes when it is sustained and its latency
//! meets the QoS; a rate over the QoS only because the generator sent late (the latency less
//! the generator's lateness meets it) passes, labelled, and is not counted as the server's
//! failure.

use super::{gen_cpu_pct, qos_value, Probe};
use crate::hist::LatencySummary;
use crate::run::RunResult;
use crate::workload::Workload;
use serde::Serialize;

#[derive(Clone, Copy, Serialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Sustained, and the latency meets the QoS.
    Ok,
    /// Sustained; over the QoS only by the generator's own lateness (counted as passed).
    GeneratorLate,
    /// The server's latency (lateness taken out) misses the QoS.
    OverQos,
    /// Under the --sustain fraction of the offered rate achieved, or requests never sent.
    NotSustained,
}

impl Verdict {
    pub fn passed(self) -> bool {
        matches!(self, Verdict::Ok | Verdict::GeneratorLate)
    }

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::GeneratorLate => "ok (over the QoS only by the generator's lateness)",
            Verdict::OverQos => "FAIL: over QoS",
            Verdict::NotSustained => "FAIL: rate not sustained",
        }
    }
}

#[derive(Serialize)]
pub struct Step {
    pub offered: f64,
    pub achieved: f64,
    pub latency: LatencySummary,
    /// The generator's lateness in sending (send time minus due time, a slot free).
    pub lateness: LatencySummary,
    /// Latency less that lateness.
    pub server_latency: LatencySummary,
    pub generator_cpu_pct: f64,
    pub passed: bool,
    pub verdict: Verdict,
}

pub struct SearchOutcome {
    pub steps: Vec<Step>,
    /// The highest passing rate and its run.
    pub best: Option<(f64, RunResult)>,
    /// Every rate tried passed (the search never found the ceiling).
    pub never_failed: bool,
}

fn judge(p: &Probe, rate: f64, r: &RunResult) -> Verdict {
    let limit = p.qos.limit_us / 1000.0;
    if r.totals.ops_per_sec < p.sustain * rate || r.unsent > 0 {
        return Verdict::NotSustained;
    }
    if qos_value(&r.totals.latency, p.qos.metric) <= limit {
        return Verdict::Ok;
    }
    match &r.open_loop {
        Some(o) if qos_value(&o.server_latency, p.qos.metric) <= limit => Verdict::GeneratorLate,
        _ => Verdict::OverQos,
    }
}

/// Runs one rate `repeats` times; the last run if every one passed.
fn attempt(
    p: &mut Probe,
    w: &Workload,
    rate: f64,
    repeats: u32,
    steps: &mut Vec<Step>,
) -> Result<Option<RunResult>, String> {
    let mut wr = w.clone();
    wr.rate = Some(rate);
    let mut last = None;
    for _ in 0..repeats {
        let r = p.run(&wr)?;
        let verdict = judge(p, rate, &r);
        let o = r.open_loop.unwrap_or_else(|| crate::run::OpenLoopFigures {
            lateness: LatencySummary::default(),
            server_latency: r.totals.latency,
        });
        p.say(format!(
            "open loop offered {:>10.0} ops/s  achieved {:>10.0}  {} {:>8.3} ms (less lateness {:.3})  {}",
            rate,
            r.totals.ops_per_sec,
            p.qos.metric.name(),
            qos_value(&r.totals.latency, p.qos.metric),
            qos_value(&o.server_latency, p.qos.metric),
            verdict.text()
        ));
        steps.push(Step {
            offered: rate,
            achieved: r.totals.ops_per_sec,
            latency: r.totals.latency,
            lateness: o.lateness,
            server_latency: o.server_latency,
            generator_cpu_pct: gen_cpu_pct(&wr, &r),
            passed: verdict.passed(),
            verdict,
        });
        if !verdict.passed() {
            return Ok(None);
        }
        last = Some(r);
    }
    Ok(last)
}

/// From `start`: up in 10% steps while passing (at most 3, never above `max`), or down
/// while failing (to 1% of it); then `bisect` halvings between the last pass and the first
/// failure.
pub fn search(
    p: &mut Probe,
    w: &Workload,
    start: f64,
    max: Option<f64>,
    repeats: u32,
    bisect: u32,
) -> Result<SearchOutcome, String> {
    let mut steps = Vec::new();
    let mut best: Option<(f64, RunResult)> = None;
    let mut fail: Option<f64> = None;
    match attempt(p, w, start, repeats, &mut steps)? {
        Some(r) => {
            best = Some((start, r));
            for k in 1..=3 {
                let rate = start * (1.0 + 0.1 * f64::from(k));
                if max.is_some_and(|m| rate > m) {
                    break;
                }
                match attempt(p, w, rate, repeats, &mut steps)? {
                    Some(r) => best = Some((rate, r)),
                    None => {
                        fail = Some(rate);
                        break;
                    }
                }
            }
        }
        None => {
            fail = Some(start);
            for f in [0.8, 0.6, 0.4, 0.2, 0.1, 0.05, 0.01] {
                let rate = start * f;
                match attempt(p, w, rate, repeats, &mut steps)? {
                    Some(r) => {
                        best = Some((rate, r));
                        break;
                    }
                    None => fail = Some(rate),
                }
            }
        }
    }
    if let (Some(mut hi), Some((lo0, _))) = (fail, &best) {
        let mut lo = *lo0;
        for _ in 0..bisect {
            if hi - lo <= hi * 0.02 {
                break;
            }
            let mid = (lo + hi) / 2.0;
            match attempt(p, w, mid, repeats, &mut steps)? {
                Some(r) => {
                    lo = mid;
                    best = Some((mid, r));
                }
                None => hi = mid,
            }
        }
    }
    Ok(SearchOutcome {
        steps,
        best,
        never_failed: fail.is_none(),
    })
}
