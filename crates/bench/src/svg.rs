//! Inline SVG line charts: axes with ticks, one polyline per series, a circle per data
//! point (class `pt`, with `data-x`/`data-y`), and a legend.

use std::fmt::Write as _;

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

pub struct Chart<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub series: Vec<Series>,
}

const W: f64 = 600.0;
/// Height of the plot area plus axes, without the legend.
const PLOT_H: f64 = 300.0;
const L: f64 = 70.0;
const R: f64 = 20.0;
const B: f64 = 50.0;
const LEGEND_ROW: f64 = 16.0;
pub const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round, readable tick values covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    if hi.is_nan() || lo.is_nan() || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / want.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut v = Vec::new();
    let mut t = first;
    while t <= hi + step * 1e-9 {
        v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    v
}

/// `1.5k`, `2M`, `0.25`: short tick labels.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (n, suf) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if n.fract().abs() < 1e-9 {
        format!("{n:.0}")
    } else if n.abs() >= 10.0 {
        format!("{n:.1}")
    } else {
        format!("{n:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suf}")
}

impl Chart<'_> {
    pub fn render(&self) -> String {
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0))
            .collect();
        // The legend gets rows of its own above the plot, so it never covers a point.
        let t_margin = 36.0 + LEGEND_ROW * self.series.len() as f64;
        #[allow(non_snake_case)]
        let (T, H) = (t_margin, PLOT_H + t_margin);
        let mut o = String::new();
        let _ = write!(
            o,
            r#"<svg id="{}" class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img">"#,
            esc(self.id)
        );
        let _ = write!(
            o,
            r#"<text x="{}" y="20" text-anchor="middle" class="title">{}</text>"#,
            W / 2.0,
            esc(self.title)
        );
        if pts.is_empty() {
            let _ = write!(
                o,
                r#"<text x="{}" y="{}" text-anchor="middle">no data</text></svg>"#,
                W / 2.0,
                H / 2.0
            );
            return o;
        }
        let fx = |x: f64| if self.log_x { x.log10() } else { x };
        let (mut x0, mut x1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
            (a.min(fx(p.0)), b.max(fx(p.0)))
        });
        if x1 - x0 < 1e-12 {
            x0 -= 0.5;
            x1 += 0.5;
        }
        let y1 = pts.iter().map(|p| p.1).fold(0.0f64, f64::max);
        let mut yt = nice_ticks(0.0, if y1 > 0.0 { y1 } else { 1.0 }, 5);
        if let [.., a, b] = yt[..] {
            if b < y1 {
                yt.push(b + (b - a));
            }
        }
        let y1 = yt.last().copied().unwrap_or(1.0).max(y1).max(1e-12);
        let px = |x: f64| L + (fx(x) - x0) / (x1 - x0) * (W - L - R);
        let py = |y: f64| H - B - y / y1 * (H - T - B);
        // Axes and grid.
        let _ = write!(
            o,
            r##"<g class="axes" stroke="#888" fill="none"><line x1="{L}" y1="{}" x2="{}" y2="{}"/><line x1="{L}" y1="{T}" x2="{L}" y2="{}"/></g>"##,
            H - B,
            W - R,
            H - B,
            H - B
        );
        for t in &yt {
            let y = py(*t);
            let _ = write!(
                o,
                r##"<line x1="{L}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end" class="tick">{}</text>"##,
                W - R,
                L - 6.0,
                y + 4.0,
                short(*t)
            );
        }
        let xt: Vec<f64> = if self.log_x {
            let mut v: Vec<f64> = pts.iter().map(|p| p.0).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v.dedup();
            v
        } else {
            nice_ticks(x0, x1, 6)
        };
        for t in &xt {
            let x = px(*t);
            let _ = write!(
                o,
                r#"<text x="{x:.1}" y="{}" text-anchor="middle" class="tick">{}</text>"#,
                H - B + 16.0,
                short(*t)
            );
        }
        let _ = write!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle" class="label">{}</text>"#,
            (L + W - R) / 2.0,
            H - 12.0,
            esc(self.x_label)
        );
        let _ = write!(
            o,
            r#"<text x="16" y="{}" text-anchor="middle" class="label" transform="rotate(-90 16 {})">{}</text>"#,
            (T + H - B) / 2.0,
            (T + H - B) / 2.0,
            esc(self.y_label)
        );
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let mut sp: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0))
                .collect();
            sp.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line: Vec<String> = sp
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
                .collect();
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2"{} points="{}"/>"#,
                if s.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                },
                line.join(" ")
            );
            for (x, y) in &sp {
                let _ = write!(
                    o,
                    r#"<circle class="pt" data-series="{}" data-x="{x}" data-y="{y}" cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}: {} , {}</title></circle>"#,
                    esc(&s.name),
                    px(*x),
                    py(*y),
                    esc(&s.name),
                    short(*x),
                    short(*y)
                );
            }
            let ly = 28.0 + LEGEND_ROW * i as f64;
            let _ = write!(
                o,
                r#"<rect x="{}" y="{ly}" width="12" height="4" fill="{color}"/><text x="{}" y="{}" class="legend">{}</text>"#,
                L + 12.0,
                L + 30.0,
                ly + 6.0,
                esc(&s.name)
            );
        }
        o.push_str("</svg>");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(
            nice_ticks(0.0, 0.9, 4),
            vec![0.0, 0.25, 0.5, 0.75, 1.0][..4].to_vec()
        );
        assert_eq!(short(1500.0), "1.5k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(0.25), "0.25");
    }

    #[test]
    fn chart_has_a_circle_per_point() {
        let c = Chart {
            id: "t",
            title: "T <x>",
            x_label: "x",
            y_label: "y",
            log_x: true,
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(100.0, 1.0), (1000.0, 2.0)],
                    dashed: false,
                },
                Series {
                    name: "b".into(),
                    points: vec![(100.0, 3.0)],
                    dashed: true,
                },
            ],
        };
        let s = c.render();
        assert_eq!(s.matches(r#"class="pt""#).count(), 3);
        assert!(s.contains("T &lt;x&gt;"));
        assert!(s.contains(r#"data-x="1000" data-y="2""#));
        assert!(!s.contains("NaN"));
    }

    #[test]
    fn empty_chart_says_so() {
        let c = Chart {
            id: "e",
            title: "E",
            x_label: "",
            y_label: "",
            log_x: false,
            series: vec![],
        };
        assert!(c.render().contains("no data"));
    }
}
