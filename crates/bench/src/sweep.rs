//! `skein-bench sweep`: one workload over a list of value sizes, client counts or pipeline
//! depths; each point's figures go into a JSON file and a self-contained HTML report.

use crate::opts::{default_workload, LoadArgs, TargetArgs};
use crate::report::{f0, f2, f3, Table};
use crate::run::{run, RunFlags, RunResult};
use crate::spec::{self, DataSize};
use crate::workload::Workload;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Args)]
pub struct SweepCmd {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Value sizes to sweep, e.g. 100,1K,10K,100K
    #[arg(long, value_parser = spec::size_list, value_name = "LIST", help_heading = "Sweep",
          group = "dimension")]
    pub data_sizes: Option<spec::List>,
    /// Total connection counts to sweep (spread over --threads), e.g. 50,400,2000,5200
    #[arg(long, value_parser = spec::count_list, value_name = "LIST", help_heading = "Sweep",
          group = "dimension")]
    pub clients_list: Option<spec::List>,
    /// Pipeline depths to sweep, e.g. 1,4,16,64
    #[arg(long, value_parser = spec::count_list, value_name = "LIST", help_heading = "Sweep",
          group = "dimension")]
    pub pipelines: Option<spec::List>,
    /// Name of this sweep in charts and tables (default: the server address)
    #[arg(long, help_heading = "Sweep")]
    pub label: Option<String>,
    /// Earlier sweep JSON files to draw on the same charts (e.g. Redis next to Skein)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub compare: Vec<PathBuf>,
    /// Write the HTML report here
    #[arg(
        long,
        value_name = "FILE",
        default_value = "skein-bench-report.html",
        help_heading = "Output"
    )]
    pub html: PathBuf,
    /// Write this sweep's points as JSON (to --compare later)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Report title
    #[arg(long, default_value = "skein-bench sweep", help_heading = "Output")]
    pub title: String,
    /// No progress lines
    #[arg(short = 'q', long, help_heading = "Output")]
    pub quiet: bool,
}

#[derive(Args)]
pub struct ReportCmd {
    /// Sweep JSON files (written by `sweep --json`)
    #[arg(required = true, value_name = "SWEEP_JSON")]
    pub files: Vec<PathBuf>,
    /// Write the HTML report here
    #[arg(long, value_name = "FILE", default_value = "skein-bench-report.html")]
    pub html: PathBuf,
    /// Report title
    #[arg(long, default_value = "skein-bench sweep")]
    pub title: String,
}

/// The figures of one point of a sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    pub connections: usize,
    pub pipeline: usize,
    pub data_size: usize,
    pub ops_per_sec: f64,
    pub net_in_bytes_per_sec: f64,
    pub net_out_bytes_per_sec: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub server_cpu_pct: Option<f64>,
    pub cpu_us_per_op: Option<f64>,
    pub errors: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sweep {
    pub label: String,
    pub target: String,
    /// `data_size`, `clients` or `pipeline`.
    pub dimension: String,
    pub workload: String,
    pub points: Vec<Point>,
}

impl Point {
    /// The figures of one run, drawn at `x`.
    pub fn of_run(x: f64, w: &Workload, r: &RunResult) -> Point {
        let (net_in, net_out) = r.net_in_out();
        let cpu = r.server.as_ref().and_then(|s| s.cpu_pct());
        Point {
            x,
            connections: w.total_clients(),
            pipeline: w.pipeline,
            data_size: w.data_size.max(),
            ops_per_sec: r.totals.ops_per_sec,
            net_in_bytes_per_sec: net_in,
            net_out_bytes_per_sec: net_out,
            avg_ms: r.totals.latency.avg_ms,
            p50_ms: r.totals.latency.p50_ms,
            p99_ms: r.totals.latency.p99_ms,
            p999_ms: r.totals.latency.p999_ms,
            server_cpu_pct: cpu,
            cpu_us_per_op: cpu
                .filter(|_| r.totals.ops_per_sec > 0.0)
                .map(|c| c / 100.0 / r.totals.ops_per_sec * 1e6),
            errors: r.totals.errors,
        }
    }
}

impl Sweep {
    pub fn x_label(&self) -> &'static str {
        match self.dimension.as_str() {
            "data_size" => "value size (bytes)",
            "clients" => "connections",
            "inflight" => "requests in flight (connections x pipeline)",
            _ => "pipeline depth",
        }
    }
}

pub fn load(path: &PathBuf) -> Result<Sweep, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a sweep JSON file: {e}", path.display()))
}

pub fn table(s: &Sweep) -> String {
    let mut t = Table::new(&[
        s.x_label(),
        "Ops/s",
        "MB/s in",
        "MB/s out",
        "Avg ms",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "CPU %",
        "CPU us/op",
    ]);
    for p in &s.points {
        t.row(vec![
            f0(p.x),
            f0(p.ops_per_sec),
            f2(p.net_in_bytes_per_sec / 1e6),
            f2(p.net_out_bytes_per_sec / 1e6),
            f3(p.avg_ms),
            f3(p.p50_ms),
            f3(p.p99_ms),
            f3(p.p999_ms),
            p.server_cpu_pct
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "n/a".into()),
            p.cpu_us_per_op.map(f2).unwrap_or_else(|| "n/a".into()),
        ]);
    }
    format!("{} ({}), {}\n{}", s.label, s.target, s.workload, t.render())
}

impl SweepCmd {
    pub fn exec(&self) -> Result<i32, String> {
        let base = self.load.resolve(default_workload())?;
        let (dimension, xs) = match (&self.data_sizes, &self.clients_list, &self.pipelines) {
            (Some(v), _, _) => ("data_size", v.0.clone()),
            (_, Some(v), _) => ("clients", v.0.clone()),
            (_, _, Some(v)) => ("pipeline", v.0.clone()),
            _ => return Err("give one of --data-sizes, --clients-list or --pipelines".into()),
        };
        let others: Vec<_> = self.compare.iter().map(load).collect::<Result<_, _>>()?;
        let target = self.target.target();
        let db = self.target.select_db.unwrap_or(0);
        let flags = RunFlags {
            progress: false,
            sample_server: !self.target.no_server_stats,
        };
        let mut points = Vec::new();
        for x in xs {
            let mut w = base.clone();
            match dimension {
                "data_size" => w.data_size = DataSize::Fixed(x),
                "clients" => w.clients = x.div_ceil(w.threads),
                _ => w.pipeline = x,
            }
            let r = run(&target, &w, db, flags)?;
            let p = Point::of_run(x as f64, &w, &r);
            if !self.quiet {
                eprintln!(
                    "{dimension} {x}: {:.0} ops/s, p50 {:.3} ms, p99 {:.3} ms",
                    p.ops_per_sec, p.p50_ms, p.p99_ms
                );
            }
            points.push(p);
        }
        let sweep = Sweep {
            label: self.label.clone().unwrap_or_else(|| target.describe()),
            target: target.describe(),
            dimension: dimension.into(),
            workload: describe(&base),
            points,
        };
        print!("{}", table(&sweep));
        if let Some(p) = &self.json {
            crate::report::write_json(p, &sweep)?;
        }
        let mut all = vec![sweep];
        all.extend(others);
        write_html(&self.html, &self.title, &all)?;
        println!("report: {}", self.html.display());
        Ok(0)
    }
}

pub fn describe(w: &Workload) -> String {
    let cmds: Vec<String> = w
        .templates
        .iter()
        .map(|t| format!("{}x{}", t.weight, t.label))
        .collect();
    format!(
        "{} threads x {} clients, pipeline {}, {}, keys {}..{}, {}",
        w.threads,
        w.clients,
        w.pipeline,
        cmds.join(" "),
        w.key_minimum,
        w.key_maximum,
        match w.requests {
            Some(n) => format!("{n} requests per client"),
            None => format!("{} s per point", w.test_time),
        }
    )
}

fn write_html(path: &PathBuf, title: &str, sweeps: &[Sweep]) -> Result<(), String> {
    let html = crate::html::render(title, sweeps, &[])?;
    std::fs::write(path, html).map_err(|e| format!("write {}: {e}", path.display()))
}

impl ReportCmd {
    pub fn exec(&self) -> Result<i32, String> {
        let sweeps: Vec<_> = self.files.iter().map(load).collect::<Result<_, _>>()?;
        write_html(&self.html, &self.title, &sweeps)?;
        println!("report: {}", self.html.display());
        Ok(0)
    }
}
