//! The sweep report: one self-contained HTML file (inline SVG and CSS, no scripts to fetch,
//! the raw data embedded as JSON).

use crate::svg::{esc, Chart, Series};
use crate::sweep::{Point, Sweep};
use std::fmt::Write as _;

fn series(
    sweeps: &[Sweep],
    suffix: &str,
    dashed: bool,
    f: impl Fn(&Point) -> Option<(f64, f64)>,
) -> Vec<Series> {
    sweeps
        .iter()
        .map(|s| Series {
            name: if suffix.is_empty() {
                s.label.clone()
            } else {
                format!("{} {suffix}", s.label)
            },
            points: s.points.iter().filter_map(&f).collect(),
            dashed,
        })
        .collect()
}

fn wide_range(sweeps: &[Sweep]) -> bool {
    let xs: Vec<f64> = sweeps
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    let lo = xs.iter().copied().fold(f64::MAX, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    lo > 0.0 && hi / lo >= 20.0
}

/// The report: `notes` are paragraphs shown under the title (a capacity verdict).
pub fn render(title: &str, sweeps: &[Sweep], notes: &[String]) -> Result<String, String> {
    let first = sweeps.first().ok_or("no sweep to draw")?;
    let xl = first.x_label();
    let log_x = wide_range(sweeps);
    let mut bw = series(sweeps, "out", false, |p| {
        Some((p.x, p.net_out_bytes_per_sec / 1e6))
    });
    bw.extend(series(sweeps, "in", true, |p| {
        Some((p.x, p.net_in_bytes_per_sec / 1e6))
    }));
    let mut lat = series(sweeps, "p99", false, |p| Some((p.ops_per_sec, p.p99_ms)));
    lat.extend(series(sweeps, "p50", true, |p| {
        Some((p.ops_per_sec, p.p50_ms))
    }));
    let charts = [
        Chart {
            id: "throughput",
            title: "Throughput",
            x_label: xl,
            y_label: "ops/s",
            log_x,
            series: series(sweeps, "", false, |p| Some((p.x, p.ops_per_sec))),
        },
        Chart {
            id: "bandwidth",
            title: "Server network bandwidth",
            x_label: xl,
            y_label: "MB/s",
            log_x,
            series: bw,
        },
        Chart {
            id: "latency",
            title: "Latency against load",
            x_label: "throughput (ops/s)",
            y_label: "ms",
            log_x: false,
            series: lat,
        },
        Chart {
            id: "cpu",
            title: "Server CPU per operation",
            x_label: xl,
            y_label: "CPU us per op",
            log_x,
            series: series(sweeps, "", false, |p| p.cpu_us_per_op.map(|c| (p.x, c))),
        },
    ];
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>\n{}\n</style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        CSS,
        esc(title)
    );
    for n in notes {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
    }
    for s in sweeps {
        let _ = writeln!(
            h,
            "<p class=\"meta\"><b>{}</b> ({}): {}</p>",
            esc(&s.label),
            esc(&s.target),
            esc(&s.workload)
        );
    }
    h.push_str("<div class=\"charts\">\n");
    for c in &charts {
        h.push_str(&c.render());
        h.push('\n');
    }
    h.push_str("</div>\n<h2>Every point</h2>\n<table><thead><tr><th>sweep</th>");
    for col in [
        xl,
        "ops/s",
        "MB/s in",
        "MB/s out",
        "avg ms",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "server CPU %",
        "CPU us/op",
        "errors",
    ] {
        let _ = write!(h, "<th>{}</th>", esc(col));
    }
    h.push_str("</tr></thead><tbody>\n");
    let opt = |v: Option<f64>, d: usize| {
        v.map(|v| format!("{v:.d$}"))
            .unwrap_or_else(|| "n/a".into())
    };
    for s in sweeps {
        for p in &s.points {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.2}</td><td>{:.2}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.label),
                p.x,
                p.ops_per_sec,
                p.net_in_bytes_per_sec / 1e6,
                p.net_out_bytes_per_sec / 1e6,
                p.avg_ms,
                p.p50_ms,
                p.p99_ms,
                p.p999_ms,
                opt(p.server_cpu_pct, 1),
                opt(p.cpu_us_per_op, 2),
                p.errors
            );
        }
    }
    h.push_str("</tbody></table>\n");
    let data = serde_json::to_string(sweeps).map_err(|e| format!("JSON: {e}"))?;
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"skein-bench-data\">{}</script>\n</body></html>\n",
        data.replace("</", "<\\/")
    );
    Ok(h)
}

const CSS: &str = "body{font-family:sans-serif;margin:24px;color:#222}\
.charts{display:flex;flex-wrap:wrap;gap:16px}\
.chart{border:1px solid #ddd;background:#fff}\
.chart .title{font-size:15px;font-weight:bold}\
.chart .tick{font-size:11px;fill:#555}\
.chart .label{font-size:12px}\
.chart .legend{font-size:12px}\
.meta{font-size:13px;margin:4px 0}\
.note{font-size:14px;margin:6px 0;padding:6px 10px;background:#f4f6fa;border-left:3px solid #46c}\
table{border-collapse:collapse;font-size:13px;margin-top:8px}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}";

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(label: &str) -> Sweep {
        let pt = |x: f64, ops: f64| Point {
            x,
            connections: 50,
            pipeline: 1,
            data_size: x as usize,
            ops_per_sec: ops,
            net_in_bytes_per_sec: ops * x,
            net_out_bytes_per_sec: ops * 20.0,
            avg_ms: 0.3,
            p50_ms: 0.25,
            p99_ms: 0.9,
            p999_ms: 1.5,
            server_cpu_pct: Some(90.0),
            cpu_us_per_op: Some(9.0),
            errors: 0,
        };
        Sweep {
            label: label.into(),
            target: "127.0.0.1:6379".into(),
            dimension: "data_size".into(),
            workload: "w </script>".into(),
            points: vec![pt(100.0, 1e5), pt(10_000.0, 5e4)],
        }
    }

    #[test]
    fn report_is_self_contained_and_has_every_point() {
        let h = render("T", &[sweep("skein"), sweep("redis")], &["a <note>".into()]).unwrap();
        assert!(h.contains("<p class=\"note\">a &lt;note&gt;</p>"));
        assert!(!h.contains("http://") && !h.contains("https://") && !h.contains("src="));
        assert_eq!(h.matches("<svg").count(), 4);
        // 4 charts: throughput 2x2, bandwidth 2x2x2, latency 2x2x2, cpu 2x2 = 24 points.
        assert_eq!(h.matches("class=\"pt\"").count(), 24);
        assert_eq!(h.matches("<tr><td>").count(), 4);
        assert!(
            !h.contains("w </script>"),
            "the embedded JSON must not close the script"
        );
        let json_start = h.find("id=\"skein-bench-data\">").unwrap();
        let rest = &h[json_start + 22..];
        let json = &rest[..rest.find("</script>").unwrap()].replace("<\\/", "</");
        let back: Vec<Sweep> = serde_json::from_str(json).unwrap();
        assert_eq!(back.len(), 2);
    }
}
