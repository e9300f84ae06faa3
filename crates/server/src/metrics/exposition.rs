//! Prometheus text exposition format 0.0.4: metric families (`# HELP`, `# TYPE`, then
//! their samples, each family once), label values escaped, numbers as Prometheus reads
//! them.

use std::fmt::Write;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A page of metric families being written.
#[derive(Default)]
pub struct Page {
    text: String,
}

/// Label pairs of one sample.
pub type Labels<'a> = &'a [(&'a str, &'a str)];

impl Page {
    /// Start a family: its help line and type. Its samples follow ([`Page::sample`]).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = write!(
            self.text,
            "# HELP {name} {help}\n# TYPE {name} {}\n",
            kind.word()
        );
    }

    /// One sample line: `name{labels} value`.
    pub fn sample(&mut self, name: &str, labels: Labels, value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape_label(v));
            }
            self.text.push('}');
        }
        self.text.push(' ');
        self.text.push_str(&number(value));
        self.text.push('\n');
    }

    /// A family of one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// One histogram's samples (its family started): cumulative `buckets` as (upper
    /// bound, count) in ascending order, then `+Inf`, `_sum` and `_count`.
    pub fn histogram(
        &mut self,
        name: &str,
        labels: Labels,
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) {
        let bucket = format!("{name}_bucket");
        for (le, n) in buckets {
            let le = number(*le);
            let mut l: Vec<(&str, &str)> = labels.to_vec();
            l.push(("le", &le));
            self.sample(&bucket, &l, *n as f64);
        }
        let mut l: Vec<(&str, &str)> = labels.to_vec();
        l.push(("le", "+Inf"));
        self.sample(&bucket, &l, count as f64);
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample(&format!("{name}_count"), labels, count as f64);
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

/// `\`, `"` and newlines escaped, as the format requires inside label values.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A sample value as Prometheus reads it (`+Inf`, `-Inf`, `NaN`; integers without a
/// fraction).
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes() {
        let mut p = Page::default();
        p.single("up", Kind::Gauge, "Up.", 1.0);
        p.family("errs_total", Kind::Counter, "Errors\nby kind.");
        p.sample("errs_total", &[("err", "a\"b\\c\nd")], 2.5);
        p.family("lat", Kind::Histogram, "Latency.");
        p.histogram("lat", &[("cmd", "get")], &[(1.0, 3), (2.0, 4)], 0.5, 5);
        assert_eq!(
            p.into_text(),
            "# HELP up Up.\n# TYPE up gauge\nup 1\n\
             # HELP errs_total Errors\\nby kind.\n# TYPE errs_total counter\n\
             errs_total{err=\"a\\\"b\\\\c\\nd\"} 2.5\n\
             # HELP lat Latency.\n# TYPE lat histogram\n\
             lat_bucket{cmd=\"get\",le=\"1\"} 3\nlat_bucket{cmd=\"get\",le=\"2\"} 4\n\
             lat_bucket{cmd=\"get\",le=\"+Inf\"} 5\nlat_sum{cmd=\"get\"} 0.5\n\
             lat_count{cmd=\"get\"} 5\n"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.125), "0.125");
        assert_eq!(number(-2.0), "-2");
    }
}
