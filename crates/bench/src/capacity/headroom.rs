//! Is the generator the bottleneck? Its CPU per load thread and per request, and a second
//! generator process run beside it at the closed-loop ceiling: if the two together get
//! clearly more while still meeting the QoS, the server had room one generator could not use.

use super::closed::SweepStep;
use super::{gen_cpu_pct, qos_value, Probe};
use crate::run::RunResult;
use crate::spec::QosMetric;
use crate::workload::Workload;
use serde::Serialize;
use std::process::{Command, Stdio};

/// A load thread busier than this (% of a core) is taken to be saturated.
pub const CPU_BOUND_PCT: f64 = 85.0;

#[derive(Serialize)]
pub struct Headroom {
    /// CPU of the load threads at the capacity point, in % of one core each.
    pub generator_cpu_pct: f64,
    /// The generator's CPU microseconds per request there.
    pub generator_cpu_us_per_op: f64,
    pub cpu_bound: bool,
    pub second_generator: Option<SecondGenerator>,
    pub second_generator_error: Option<String>,
}

#[derive(Serialize)]
pub struct SecondGenerator {
    pub connections: usize,
    pub pipeline: usize,
    /// This generator alone at the closed-loop ceiling (the sweep's figure).
    pub alone_ops_per_sec: f64,
    /// Both generators at once, each with the ceiling's connections and pipeline.
    pub together_ops_per_sec: f64,
    pub gain: f64,
    /// The worse of the two generators' QoS figures while together, ms.
    pub together_qos_ms: f64,
    /// Together they got over 10% more and still met the QoS.
    pub limited_by_generator: bool,
}

impl Headroom {
    pub fn new(generator_cpu_pct: f64, generator_cpu_us_per_op: f64) -> Headroom {
        Headroom {
            generator_cpu_pct,
            generator_cpu_us_per_op,
            cpu_bound: generator_cpu_pct >= CPU_BOUND_PCT,
            second_generator: None,
            second_generator_error: None,
        }
    }
}

pub fn of_run(w: &Workload, r: &RunResult) -> Headroom {
    // The CPU figure covers the warm-up too: count the requests of the whole run.
    let ops = r.totals.ops_per_sec * (w.warmup + r.seconds);
    let per_op = if ops > 0.0 {
        r.client_cpu_seconds / ops * 1e6
    } else {
        0.0
    };
    Headroom::new(gen_cpu_pct(w, r), per_op)
}

fn metric_field(m: QosMetric) -> &'static str {
    match m {
        QosMetric::Avg => "avg_ms",
        QosMetric::P50 => "p50_ms",
        QosMetric::P90 => "p90_ms",
        QosMetric::P99 => "p99_ms",
        QosMetric::P999 => "p999_ms",
        QosMetric::Max => "max_ms",
    }
}

/// Runs `w` (the ceiling's configuration) here and in a second `skein-bench` process at
/// once; `capacity_args` are this process's own `capacity` arguments, which the peer
/// parses the same way.
pub fn second_generator(
    p: &mut Probe,
    w: &Workload,
    alone: &SweepStep,
    capacity_args: &[String],
) -> Result<SecondGenerator, String> {
    let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
    let out = std::env::temp_dir().join(format!("skein-bench-peer-{}.json", std::process::id()));
    let child = Command::new(exe)
        .arg("capacity-peer")
        .args(capacity_args)
        .args(["--peer-clients", &w.clients.to_string()])
        .args(["--peer-pipeline", &w.pipeline.to_string()])
        .arg("--peer-json")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start a second generator: {e}"))?;
    let mine = p.run(w);
    let status = child
        .wait_with_output()
        .map_err(|e| format!("second generator: {e}"))?;
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    let mine = mine?;
    if !status.status.success() {
        return Err(format!(
            "second generator failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    let peer: serde_json::Value = serde_json::from_str(&text.map_err(|e| e.to_string())?)
        .map_err(|e| format!("second generator's JSON: {e}"))?;
    let totals = &peer["totals"];
    let peer_ops = totals["ops_per_sec"].as_f64().unwrap_or(0.0);
    let peer_q = totals["latency"][metric_field(p.qos.metric)]
        .as_f64()
        .unwrap_or(f64::INFINITY);
    let together = mine.totals.ops_per_sec + peer_ops;
    let q = qos_value(&mine.totals.latency, p.qos.metric).max(peer_q);
    let gain = together / alone.ops_per_sec.max(1e-9);
    Ok(SecondGenerator {
        connections: w.total_clients(),
        pipeline: w.pipeline,
        alone_ops_per_sec: alone.ops_per_sec,
        together_ops_per_sec: together,
        gain,
        together_qos_ms: q,
        limited_by_generator: gain > 1.1 && q * 1000.0 <= p.qos.limit_us,
    })
}
