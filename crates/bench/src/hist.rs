//! Latency histogram (HdrHistogram, microseconds, 3 significant digits) and its summary.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency recorded exactly: 100 s. Larger values are clamped to it.
const HIGHEST_US: u64 = 100_000_000;

#[derive(Clone)]
pub struct LatencyHist {
    h: Histogram<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            h: Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("valid histogram bounds"),
        }
    }
}

/// The figures a table or a QoS check reads, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub avg_ms: f64,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl LatencyHist {
    /// Records one latency in microseconds (0 counts as 1, the resolution).
    pub fn record_us(&mut self, us: u64) {
        self.h.saturating_record(us.clamp(1, HIGHEST_US));
    }

    pub fn add(&mut self, other: &LatencyHist) {
        // Both have the same bounds, so this cannot fail.
        let _ = self.h.add(&other.h);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The value at a percentile (0-100), in microseconds.
    pub fn percentile_us(&self, p: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_percentile(p)
        }
    }

    pub fn mean_us(&self) -> f64 {
        if self.h.is_empty() {
            0.0
        } else {
            self.h.mean()
        }
    }

    pub fn summary(&self) -> LatencySummary {
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.count(),
            avg_ms: self.mean_us() / 1000.0,
            min_ms: if self.h.is_empty() {
                0.0
            } else {
                ms(self.h.min())
            },
            p50_ms: ms(self.percentile_us(50.0)),
            p90_ms: ms(self.percentile_us(90.0)),
            p99_ms: ms(self.percentile_us(99.0)),
            p999_ms: ms(self.percentile_us(99.9)),
            max_ms: if self.h.is_empty() {
                0.0
            } else {
                ms(self.h.max())
            },
        }
    }

    /// Every recorded bucket as `[value_us, count]` (the full histogram, for JSON).
    pub fn buckets(&self) -> Vec<[u64; 2]> {
        self.h
            .iter_recorded()
            .map(|v| {
                [
                    self.h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                ]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_run() {
        let mut h = LatencyHist::default();
        for us in 1..=10_000 {
            h.record_us(us);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        // 3 significant digits: each value within 0.1% of the exact one.
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 0.001;
        assert!(near(s.p50_ms, 5.0), "{}", s.p50_ms);
        assert!(near(s.p90_ms, 9.0), "{}", s.p90_ms);
        assert!(near(s.p99_ms, 9.9), "{}", s.p99_ms);
        assert!(near(s.p999_ms, 9.99), "{}", s.p999_ms);
        assert!(near(s.max_ms, 10.0), "{}", s.max_ms);
        assert!(near(s.avg_ms, 5.0005), "{}", s.avg_ms);
        assert_eq!(s.min_ms, 0.001);
    }

    #[test]
    fn tail_is_seen() {
        let mut h = LatencyHist::default();
        for _ in 0..990 {
            h.record_us(100);
        }
        for _ in 0..10 {
            h.record_us(50_000);
        }
        assert_eq!(h.percentile_us(50.0), 100);
        assert_eq!(h.percentile_us(99.0), 100);
        let p999 = h.percentile_us(99.9);
        assert!((49_950..=50_050).contains(&p999), "{p999}");
    }

    #[test]
    fn merge_and_buckets() {
        let mut a = LatencyHist::default();
        let mut b = LatencyHist::default();
        a.record_us(10);
        b.record_us(10);
        b.record_us(2000);
        a.add(&b);
        assert_eq!(a.count(), 3);
        let buckets = a.buckets();
        assert_eq!(buckets.iter().map(|b| b[1]).sum::<u64>(), 3);
        assert_eq!(buckets[0], [10, 2]);
        assert!(buckets[1][0] >= 2000 && buckets[1][0] < 2003);
    }

    #[test]
    fn empty_and_out_of_range() {
        let mut h = LatencyHist::default();
        assert_eq!(h.summary(), LatencySummary::default());
        h.record_us(0);
        h.record_us(u64::MAX);
        assert_eq!(h.count(), 2);
        assert!(h.percentile_us(100.0) >= HIGHEST_US);
    }
}
