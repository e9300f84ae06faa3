//! Parsers for the small option languages: data sizes, ratios, key patterns, QoS, lists.
//! Each returns a clear error text that clap prints next to the option's name.

use serde::Serialize;

/// Value sizes: one fixed size, a uniform range, or a weighted list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum DataSize {
    Fixed(usize),
    Range(usize, usize),
    Weighted(Vec<(usize, u32)>),
}

impl DataSize {
    pub fn max(&self) -> usize {
        match self {
            DataSize::Fixed(n) => *n,
            DataSize::Range(_, hi) => *hi,
            DataSize::Weighted(list) => list.iter().map(|(s, _)| *s).max().unwrap_or(0),
        }
    }
}

fn size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (num, mult) = match t.to_ascii_uppercase() {
        u if u.ends_with("KB") || u.ends_with('K') => {
            (t.trim_end_matches(['K', 'k', 'B', 'b']), 1024)
        }
        u if u.ends_with("MB") || u.ends_with('M') => {
            (t.trim_end_matches(['M', 'm', 'B', 'b']), 1 << 20)
        }
        u if u.ends_with('B') => (t.trim_end_matches(['B', 'b']), 1),
        _ => (t, 1),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 100, 4K, 1MB)"))?;
    let n = n
        .checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))?;
    if n > 512 << 20 {
        return Err(format!("'{text}' is larger than 512 MB"));
    }
    Ok(n)
}

/// `100`, `32-1024` (uniform), or `32:60,1024:40` (size:weight list).
pub fn data_size(s: &str) -> Result<DataSize, String> {
    if s.contains(':') || s.contains(',') {
        let mut list = Vec::new();
        for part in s.split(',') {
            let (sz, w) = part
                .split_once(':')
                .ok_or_else(|| format!("'{part}' should be SIZE:WEIGHT (e.g. 32:60,1024:40)"))?;
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| format!("weight '{w}' is not a whole number"))?;
            if w == 0 {
                return Err(format!("weight of '{part}' must be above 0"));
            }
            list.push((size(sz)?, w));
        }
        return Ok(DataSize::Weighted(list));
    }
    if let Some((lo, hi)) = s.split_once('-') {
        let (lo, hi) = (size(lo)?, size(hi)?);
        if lo > hi {
            return Err(format!("range '{s}' has its minimum above its maximum"));
        }
        return Ok(DataSize::Range(lo, hi));
    }
    Ok(DataSize::Fixed(size(s)?))
}

/// `SET:GET` ratio, e.g. `1:10`.
pub fn ratio(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' should be SET:GET, e.g. 1:10"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{x}' in ratio '{s}' is not a whole number"))
    };
    let (a, b) = (p(a)?, p(b)?);
    if a == 0 && b == 0 {
        return Err("ratio 0:0 sends nothing".into());
    }
    if a > 1000 || b > 1000 {
        return Err(format!("ratio '{s}': each side must be at most 1000"));
    }
    Ok((a, b))
}

/// How one side (SET or GET) picks its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum KeyPattern {
    /// Uniform random in the key range.
    Random,
    /// Gaussian around the middle of the range.
    Gaussian,
    /// Sequential through the range, one counter per thread.
    Sequential,
    /// Parallel: each client walks its own slice of the range in order.
    Parallel,
}

fn one_pattern(c: &str) -> Result<KeyPattern, String> {
    match c {
        "R" | "r" => Ok(KeyPattern::Random),
        "G" | "g" => Ok(KeyPattern::Gaussian),
        "S" | "s" => Ok(KeyPattern::Sequential),
        "P" | "p" => Ok(KeyPattern::Parallel),
        _ => Err(format!(
            "'{c}' is not a key pattern: use R (random), G (gaussian), S (sequential) or P (parallel)"
        )),
    }
}

/// `R:R`, `S:G`... (SET side : GET side); one letter applies to both.
pub fn key_pattern(s: &str) -> Result<(KeyPattern, KeyPattern), String> {
    match s.split_once(':') {
        Some((a, b)) => Ok((one_pattern(a)?, one_pattern(b)?)),
        None => {
            let p = one_pattern(s)?;
            Ok((p, p))
        }
    }
}

/// Which latency figure a QoS bounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum QosMetric {
    Avg,
    P50,
    P90,
    P99,
    P999,
    Max,
}

impl QosMetric {
    pub fn name(self) -> &'static str {
        match self {
            QosMetric::Avg => "avg",
            QosMetric::P50 => "p50",
            QosMetric::P90 => "p90",
            QosMetric::P99 => "p99",
            QosMetric::P999 => "p99.9",
            QosMetric::Max => "max",
        }
    }
}

/// A latency bound, e.g. `p99<1ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Qos {
    pub metric: QosMetric,
    /// Bound in microseconds.
    pub limit_us: f64,
}

pub fn duration_us(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("µs") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e6)
    } else {
        return Err(format!("'{s}' needs a unit: us, ms or s (e.g. 1ms)"));
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{num}' is not a number"))?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("'{s}' must be above zero"));
    }
    Ok(v * mult)
}

pub fn qos(s: &str) -> Result<Qos, String> {
    let (m, v) = s.split_once('<').ok_or_else(|| {
        format!("'{s}' should look like p99<1ms (avg, p50, p90, p99, p999 or max)")
    })?;
    let metric = match m.trim().to_ascii_lowercase().as_str() {
        "avg" | "average" | "mean" => QosMetric::Avg,
        "p50" | "median" => QosMetric::P50,
        "p90" => QosMetric::P90,
        "p99" => QosMetric::P99,
        "p999" | "p99.9" => QosMetric::P999,
        "max" => QosMetric::Max,
        other => {
            return Err(format!(
                "'{other}' is not a latency figure: use avg, p50, p90, p99, p999 or max"
            ))
        }
    };
    Ok(Qos {
        metric,
        limit_us: duration_us(v.trim_start_matches('=').trim())?,
    })
}

/// A comma-separated list of numbers (one option value, not a repeated option).
#[derive(Clone, Debug, PartialEq)]
pub struct List(pub Vec<usize>);

/// A comma-separated list of sizes (`100,1K,10K`).
pub fn size_list(s: &str) -> Result<List, String> {
    s.split(',').map(size).collect::<Result<_, _>>().map(List)
}

/// A comma-separated list of positive whole numbers.
pub fn count_list(s: &str) -> Result<List, String> {
    s.split(',')
        .map(|x| match x.trim().parse::<usize>() {
            Ok(0) => Err("values must be above 0".to_string()),
            Ok(n) => Ok(n),
            Err(_) => Err(format!("'{x}' is not a whole number")),
        })
        .collect::<Result<_, _>>()
        .map(List)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_sizes() {
        assert_eq!(data_size("100"), Ok(DataSize::Fixed(100)));
        assert_eq!(data_size("4K"), Ok(DataSize::Fixed(4096)));
        assert_eq!(data_size("1KB"), Ok(DataSize::Fixed(1024)));
        assert_eq!(data_size("32-1024"), Ok(DataSize::Range(32, 1024)));
        assert_eq!(
            data_size("32:60,1024:40"),
            Ok(DataSize::Weighted(vec![(32, 60), (1024, 40)]))
        );
        assert!(data_size("abc").unwrap_err().contains("not a size"));
        assert!(data_size("10-5").unwrap_err().contains("minimum above"));
        assert!(data_size("32:0").unwrap_err().contains("above 0"));
        assert!(data_size("32,64").unwrap_err().contains("SIZE:WEIGHT"));
        assert!(data_size("1024MB").unwrap_err().contains("512 MB"));
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio("1:10"), Ok((1, 10)));
        assert_eq!(ratio("0:1"), Ok((0, 1)));
        assert!(ratio("0:0").is_err());
        assert!(ratio("1").unwrap_err().contains("SET:GET"));
        assert!(ratio("a:1").unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn key_patterns() {
        use KeyPattern::*;
        assert_eq!(key_pattern("R:R"), Ok((Random, Random)));
        assert_eq!(key_pattern("S:G"), Ok((Sequential, Gaussian)));
        assert_eq!(key_pattern("P"), Ok((Parallel, Parallel)));
        assert!(key_pattern("X:R")
            .unwrap_err()
            .contains("not a key pattern"));
    }

    #[test]
    fn qos_specs() {
        let q = qos("p99<1ms").unwrap();
        assert_eq!(q.metric, QosMetric::P99);
        assert_eq!(q.limit_us, 1000.0);
        assert_eq!(qos("p999<500us").unwrap().metric, QosMetric::P999);
        assert_eq!(qos("p99.9<2ms").unwrap().limit_us, 2000.0);
        assert_eq!(qos("avg<=0.5ms").unwrap().limit_us, 500.0);
        assert!(qos("p98<1ms").unwrap_err().contains("not a latency figure"));
        assert!(qos("p99<1").unwrap_err().contains("needs a unit"));
        assert!(qos("p99 1ms").unwrap_err().contains("should look like"));
        assert!(qos("p99<0ms").unwrap_err().contains("above zero"));
    }

    #[test]
    fn lists() {
        assert_eq!(size_list("100,1K,100K"), Ok(List(vec![100, 1024, 102400])));
        assert_eq!(count_list("50,400"), Ok(List(vec![50, 400])));
        assert!(count_list("50,0").is_err());
        assert!(count_list("50,x").is_err());
    }
}
