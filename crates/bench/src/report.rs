//! Text tables and JSON files.

use crate::info::ServerSummary;
use crate::run::{CmdResult, RunResult};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// A plain-text table with right-aligned columns (the first left-aligned).
pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let n = self.head.len();
        let mut width = vec![0; n];
        for r in std::iter::once(&self.head).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, r: &[String]| {
            for (i, c) in r.iter().enumerate().take(n) {
                let pad = width[i] - c.chars().count();
                if i == 0 {
                    out.push_str(c);
                    out.push_str(&" ".repeat(pad));
                } else {
                    out.push_str("  ");
                    out.push_str(&" ".repeat(pad));
                    out.push_str(c);
                }
            }
            out.push('\n');
        };
        line(&mut out, &self.head);
        let total: usize = width.iter().sum::<usize>() + 2 * (n - 1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        for r in &self.rows {
            line(&mut out, r);
        }
        out
    }
}

pub fn f0(v: f64) -> String {
    format!("{v:.0}")
}

pub fn f2(v: f64) -> String {
    format!("{v:.2}")
}

pub fn f3(v: f64) -> String {
    format!("{v:.3}")
}

/// `12.3 MB/s`-style bytes per second.
pub fn rate_bytes(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} GB/s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB/s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} KB/s", v / 1e3)
    } else {
        format!("{v:.0} B/s")
    }
}

fn cmd_row(c: &CmdResult) -> Vec<String> {
    let l = &c.latency;
    vec![
        c.command.clone(),
        f0(c.ops_per_sec),
        f2(c.hits_per_sec),
        f2(c.misses_per_sec),
        f3(l.avg_ms),
        f3(l.p50_ms),
        f3(l.p90_ms),
        f3(l.p99_ms),
        f3(l.p999_ms),
        f3(l.max_ms),
        f2(c.kb_in_per_sec),
        f2(c.kb_out_per_sec),
    ]
}

/// The result table of one run, then the server's side of it.
pub fn run_table(r: &RunResult) -> String {
    let mut t = Table::new(&[
        "Command", "Ops/s", "Hits/s", "Misses/s", "Avg ms", "p50 ms", "p90 ms", "p99 ms",
        "p99.9 ms", "Max ms", "KB/s in", "KB/s out",
    ]);
    for c in &r.commands {
        t.row(cmd_row(c));
    }
    t.row(cmd_row(&r.totals));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {} db {}: {:.1} s measured, {} threads x {} clients, pipeline {}{}",
        r.totals.ops,
        r.target,
        r.db,
        r.seconds,
        r.workload.threads,
        r.workload.clients,
        r.workload.pipeline,
        match r.offered_rate {
            Some(rate) => format!(", open loop at {rate:.0} ops/s offered"),
            None => String::new(),
        }
    );
    out.push_str(&t.render());
    out.push_str("(KB/s in: replies received; KB/s out: requests sent)\n");
    for c in &r.commands {
        if let Some(e) = &c.first_error {
            let _ = writeln!(out, "{}: {} error replies, first: {e}", c.command, c.errors);
        }
    }
    if let Some(o) = &r.open_loop {
        let (l, s) = (&o.lateness, &o.server_latency);
        let _ = writeln!(
            out,
            "generator lateness (due, a connection free, not yet sent): p50 {:.3} ms, p99 {:.3}, max {:.3}",
            l.p50_ms, l.p99_ms, l.max_ms
        );
        let _ = writeln!(
            out,
            "latency less that lateness: avg {:.3} ms, p50 {:.3}, p99 {:.3}, p99.9 {:.3}",
            s.avg_ms, s.p50_ms, s.p99_ms, s.p999_ms
        );
        if o.lateness_explains(r.totals.latency.p99_ms, s.p99_ms) {
            let _ = writeln!(
                out,
                "note: the generator's lateness, not the server, explains the p99 ({:.3} ms measured, {:.3} ms without it): give the generator more CPU or threads",
                r.totals.latency.p99_ms, s.p99_ms
            );
        }
    }
    if r.unsent > 0 {
        let _ = writeln!(
            out,
            "{} requests were due but never sent: the server did not keep up with the offered rate",
            r.unsent
        );
    }
    let _ = writeln!(
        out,
        "generator CPU: {:.2} s ({:.0} ops per generator CPU second)",
        r.client_cpu_seconds,
        r.totals.ops as f64 / r.client_cpu_seconds.max(1e-3)
    );
    match (&r.server, &r.server_sampling_error) {
        (Some(s), _) => out.push_str(&server_lines(s, r.totals.ops_per_sec)),
        (None, Some(e)) => {
            let _ = writeln!(out, "server stats: unavailable ({e})");
        }
        (None, None) => {}
    }
    out
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "n/a".into())
}

pub fn server_lines(s: &ServerSummary, ops_per_sec: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "server: CPU user {}% sys {}% (of one core){}",
        opt(s.cpu_user_pct, |v| format!("{v:.1}")),
        opt(s.cpu_sys_pct, |v| format!("{v:.1}")),
        match s.cpu_pct() {
            Some(c) if ops_per_sec > 0.0 => {
                format!(", {:.2} us CPU per op", c / 100.0 / ops_per_sec * 1e6)
            }
            _ => String::new(),
        }
    );
    if let Some(e) = s.engine_cpu_pct {
        let per: Vec<String> = s
            .worker_cpu_pct
            .iter()
            .map(|(w, v)| format!("w{w} {v:.1}%"))
            .collect();
        let _ = writeln!(out, "server: engine CPU {e:.1}% ({})", per.join(", "));
    }
    let _ = writeln!(
        out,
        "server: net in {} out {}, {} clients connected, used_memory {}",
        opt(s.net_in_bytes_per_sec, rate_bytes),
        opt(s.net_out_bytes_per_sec, rate_bytes),
        opt(s.connected_clients, f0),
        opt(s.used_memory, |v| format!("{:.1} MB", v / 1e6)),
    );
    out
}

/// Writes any result as pretty JSON.
pub fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| format!("JSON: {e}"))?;
    std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns() {
        let mut t = Table::new(&["A", "Num"]);
        t.row(vec!["long name".into(), "1".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "A          Num");
        assert_eq!(lines[2], "long name    1");
    }

    #[test]
    fn byte_rates() {
        assert_eq!(rate_bytes(512.0), "512 B/s");
        assert_eq!(rate_bytes(2_500_000.0), "2.50 MB/s");
    }
}
