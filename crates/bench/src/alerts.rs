//! Alarm thresholds (100/90/80% of what a node sustained) and their Prometheus alerting
//! rules.
//!
//! Metric names are the ones Skein's own `/metrics` endpoint (`metrics-port`) serves, which
//! are the ones redis_exporter derives from the same INFO fields of any Redis
//! (`redis_commands_processed_total` from `total_commands_processed`,
//! `redis_net_input_bytes_total`, `redis_net_output_bytes_total`,
//! `redis_cpu_user_seconds_total`, `redis_cpu_sys_seconds_total`), plus Skein's per-worker
//! engine CPU, `skein_worker_cpu_seconds_total{worker, mode="user"|"sys"}` (INFO's
//! `workerN_cpu_user`/`workerN_cpu_sys`). tests/test_metrics.py checks that every name
//! below is on Skein's endpoint.

use serde::Serialize;
use std::fmt::Write as _;

pub const OPS: &str = "redis_commands_processed_total";
pub const NET_IN: &str = "redis_net_input_bytes_total";
pub const NET_OUT: &str = "redis_net_output_bytes_total";
pub const CPU_USER: &str = "redis_cpu_user_seconds_total";
pub const CPU_SYS: &str = "redis_cpu_sys_seconds_total";
pub const WORKER_CPU: &str = "skein_worker_cpu_seconds_total";

/// The levels alarms are set at, with the severity each gets.
pub const LEVELS: [(u32, &str); 3] = [(100, "critical"), (90, "warning"), (80, "info")];

/// What a threshold watches.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub enum Measure {
    OpsPerSec,
    NetInBytesPerSec,
    NetOutBytesPerSec,
    /// Skein's engine CPU (sum over workers), percent of one core.
    EngineCpuPct,
    /// The whole process's CPU, percent of one core (servers without engine CPU).
    ProcessCpuPct,
}

impl Measure {
    pub fn label(self) -> &'static str {
        match self {
            Measure::OpsPerSec => "ops/s",
            Measure::NetInBytesPerSec => "bytes/s in",
            Measure::NetOutBytesPerSec => "bytes/s out",
            Measure::EngineCpuPct => "engine CPU %",
            Measure::ProcessCpuPct => "server CPU %",
        }
    }

    fn alert_name(self) -> &'static str {
        match self {
            Measure::OpsPerSec => "SkeinThroughput",
            Measure::NetInBytesPerSec => "SkeinNetworkIn",
            Measure::NetOutBytesPerSec => "SkeinNetworkOut",
            Measure::EngineCpuPct => "SkeinEngineCpu",
            Measure::ProcessCpuPct => "SkeinServerCpu",
        }
    }

    /// The metric names the alert reads.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            Measure::OpsPerSec => &[OPS],
            Measure::NetInBytesPerSec => &[NET_IN],
            Measure::NetOutBytesPerSec => &[NET_OUT],
            Measure::EngineCpuPct => &[WORKER_CPU],
            Measure::ProcessCpuPct => &[CPU_USER, CPU_SYS],
        }
    }

    /// The PromQL giving this measure per instance, over `window`.
    pub fn promql(self, selector: &str, window: &str) -> String {
        let sel = if selector.is_empty() {
            String::new()
        } else {
            format!("{{{selector}}}")
        };
        let rate = |m: &str| format!("rate({m}{sel}[{window}])");
        match self {
            Measure::OpsPerSec => rate(OPS),
            Measure::NetInBytesPerSec => rate(NET_IN),
            Measure::NetOutBytesPerSec => rate(NET_OUT),
            Measure::EngineCpuPct => format!("sum by (instance) ({}) * 100", rate(WORKER_CPU)),
            Measure::ProcessCpuPct => format!("({} + {}) * 100", rate(CPU_USER), rate(CPU_SYS)),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Threshold {
    pub measure: Measure,
    pub label: String,
    /// The PromQL of the measure (over 1m, no selector), on the names `/metrics` serves.
    pub metric: String,
    /// The value at capacity (100%).
    pub capacity: f64,
    /// `[(percent, value)]` for 100, 90 and 80%.
    pub levels: Vec<(u32, f64)>,
}

pub fn threshold(measure: Measure, capacity: f64) -> Threshold {
    Threshold {
        measure,
        label: measure.label().into(),
        metric: measure.promql("", "1m"),
        capacity,
        levels: LEVELS
            .iter()
            .map(|(p, _)| (*p, capacity * *p as f64 / 100.0))
            .collect(),
    }
}

fn yaml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A Prometheus rules file: one alert per measure and level.
pub fn rules_yaml(
    th: &[Threshold],
    selector: &str,
    window: &str,
    hold: &str,
    note: &str,
) -> String {
    let mut y = String::new();
    let _ = writeln!(y, "# Alerting rules from skein-bench capacity: {note}");
    y.push_str("groups:\n  - name: skein-capacity\n    rules:\n");
    for t in th {
        for (pct, sev) in LEVELS {
            let value = t.capacity * pct as f64 / 100.0;
            let _ = writeln!(y, "      - alert: {}{pct}", t.measure.alert_name());
            let _ = writeln!(
                y,
                "        expr: {}",
                yaml_str(&format!(
                    "{} > {value:.2}",
                    t.measure.promql(selector, window)
                ))
            );
            let _ = writeln!(y, "        for: {hold}");
            let _ = writeln!(
                y,
                "        labels:\n          severity: {sev}\n          metric: {}",
                yaml_str(&t.measure.metrics().join(","))
            );
            let _ = writeln!(
                y,
                "        annotations:\n          summary: {}",
                yaml_str(&format!(
                    "{} above {pct}% of measured capacity ({value:.0} of {:.0})",
                    t.label, t.capacity
                ))
            );
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_fractions() {
        let t = threshold(Measure::OpsPerSec, 1000.0);
        assert_eq!(t.levels, vec![(100, 1000.0), (90, 900.0), (80, 800.0)]);
    }

    #[test]
    fn rules_name_exported_metrics() {
        let th = [
            threshold(Measure::OpsPerSec, 50_000.0),
            threshold(Measure::EngineCpuPct, 180.0),
        ];
        let y = rules_yaml(&th, "instance=\"n1:6379\"", "1m", "5m", "p99<1ms");
        assert!(y.contains("- alert: SkeinThroughput90"));
        assert!(y.contains(
            r#"expr: "rate(redis_commands_processed_total{instance=\"n1:6379\"}[1m]) > 45000.00""#
        ));
        assert!(y.contains("sum by (instance) (rate(skein_worker_cpu_seconds_total"));
        assert!(y.contains("severity: critical"));
        assert!(y.contains("metric: \"skein_worker_cpu_seconds_total\""));
        assert_eq!(
            th[0].metric,
            "rate(redis_commands_processed_total[1m])".to_string()
        );
        assert_eq!(y.matches("- alert:").count(), 6);
    }

    #[test]
    fn process_cpu_without_selector() {
        assert_eq!(
            Measure::ProcessCpuPct.promql("", "1m"),
            "(rate(redis_cpu_user_seconds_total[1m]) + rate(redis_cpu_sys_seconds_total[1m])) * 100"
        );
    }
}
