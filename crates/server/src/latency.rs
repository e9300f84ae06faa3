//! The latency monitor (LATENCY LATEST/HISTORY/GRAPH/DOCTOR): per event, the worst latency
//! of each second, the last 160 seconds with an event, and the all-time maximum.
//! Written only for events at or above `latency-monitor-threshold` ms.

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// Samples kept per event (LATENCY_TS_LEN).
pub const TS_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
pub struct Sample {
    /// Unix seconds; 0 = empty slot.
    pub time: i64,
    pub latency_ms: u64,
}

#[derive(Clone)]
pub struct TimeSeries {
    pub idx: usize,
    pub max: u64,
    pub samples: [Sample; TS_LEN],
}

impl TimeSeries {
    /// The samples, oldest first.
    pub fn in_order(&self) -> impl Iterator<Item = &Sample> {
        (0..TS_LEN)
            .map(move |j| &self.samples[(self.idx + j) % TS_LEN])
            .filter(|s| s.time != 0)
    }

    pub fn latest(&self) -> Sample {
        self.samples[(self.idx + TS_LEN - 1) % TS_LEN]
    }
}

/// Redis's latencyStats for DOCTOR.
#[derive(Default)]
pub struct EventStats {
    pub all_time_high: u64,
    pub avg: u64,
    pub min: u64,
    pub max: u64,
    pub mad: u64,
    pub samples: u64,
    pub period: i64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    events: Mutex<BTreeMap<String, TimeSeries>>,
}

fn now_s() -> i64 {
    engine::now_ms() / 1000
}

impl LatencyMonitor {
    /// latencyAddSample.
    pub fn add_sample(&self, event: &str, latency_ms: u64) {
        let now = now_s();
        let mut events = self.events.lock();
        let ts = events.entry(event.to_string()).or_insert(TimeSeries {
            idx: 0,
            max: 0,
            samples: [Sample::default(); TS_LEN],
        });
        ts.max = ts.max.max(latency_ms);
        let prev = (ts.idx + TS_LEN - 1) % TS_LEN;
        if ts.samples[prev].time == now {
            let s = &mut ts.samples[prev];
            s.latency_ms = s.latency_ms.max(latency_ms);
            return;
        }
        ts.samples[ts.idx] = Sample {
            time: now,
            latency_ms,
        };
        ts.idx = (ts.idx + 1) % TS_LEN;
    }

    /// A copy of every event's series, by event name.
    pub fn snapshot(&self) -> Vec<(String, TimeSeries)> {
        self.events
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn get(&self, event: &[u8]) -> Option<TimeSeries> {
        let event = std::str::from_utf8(event).ok()?;
        self.events.lock().get(event).cloned()
    }

    /// Reset one event (case-insensitive) or, with `None`, all; returns how many.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        match event {
            None => events.clear(),
            Some(e) => events.retain(|k, _| !k.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.lock().is_empty()
    }
}

/// analyzeLatencyForEvent.
pub fn analyze(ts: &TimeSeries) -> EventStats {
    let mut ls = EventStats {
        all_time_high: ts.max,
        ..Default::default()
    };
    let mut sum = 0u64;
    for s in ts.samples.iter().filter(|s| s.time != 0) {
        ls.samples += 1;
        if ls.samples == 1 {
            ls.min = s.latency_ms;
            ls.max = s.latency_ms;
        } else {
            ls.min = ls.min.min(s.latency_ms);
            ls.max = ls.max.max(s.latency_ms);
        }
        sum += s.latency_ms;
        if ls.period == 0 || s.time < ls.period {
            ls.period = s.time;
        }
    }
    if let Some(avg) = sum.checked_div(ls.samples) {
        ls.avg = avg;
        ls.period = (now_s() - ls.period).max(1);
        let mad: u64 = ts
            .samples
            .iter()
            .filter(|s| s.time != 0)
            .map(|s| (avg as i64 - s.latency_ms as i64).unsigned_abs())
            .sum();
        ls.mad = mad / ls.samples;
    }
    ls
}

/// The age label of a sample, as LATENCY GRAPH prints it.
fn age_label(elapsed: i64) -> String {
    if elapsed < 60 {
        format!("{elapsed}s")
    } else if elapsed < 3600 {
        format!("{}m", elapsed / 60)
    } else if elapsed < 3600 * 24 {
        format!("{}h", elapsed / 3600)
    } else {
        format!("{}d", elapsed / (3600 * 24))
    }
}

/// latencyCommandGenSparkeline: the LATENCY GRAPH text of one event.
pub fn graph(event: &str, ts: &TimeSeries) -> String {
    let now = now_s();
    let samples: Vec<(f64, String)> = ts
        .in_order()
        .map(|s| (s.latency_ms as f64, age_label(now - s.time)))
        .collect();
    let min = ts.in_order().map(|s| s.latency_ms).min().unwrap_or(0);
    let max = ts.in_order().map(|s| s.latency_ms).max().unwrap_or(0);
    let mut out = format!(
        "{event} - high {max} ms, low {min} ms (all time high {} ms)\n",
        ts.max
    );
    out.push_str(&"-".repeat(80));
    out.push('\n');
    sparkline(&mut out, &samples, 80, 4);
    out
}

/// Redis's sparklineRender with SPARKLINE_FILL: `rows` rows of bars, then the labels
/// written vertically, `columns` samples per block.
fn sparkline(out: &mut String, samples: &[(f64, String)], columns: usize, rows: usize) {
    const FILL: &[u8] = b"_o#";
    let Some(first) = samples.first() else {
        return;
    };
    let (mut min, mut max) = (first.0, first.0);
    for (v, _) in &samples[1..] {
        if *v < min {
            min = *v;
        } else if *v > max {
            max = *v;
        }
    }
    let has_labels = samples.iter().any(|(_, l)| !l.is_empty());
    let mut relmax = max - min;
    if relmax == 0.0 {
        relmax = 1.0;
    }
    let steps = (FILL.len() * rows) as i64;
    for (block, chunk) in samples.chunks(columns).enumerate() {
        if block != 0 {
            out.push('\n');
        }
        let mut row = 0usize;
        loop {
            let mut more = false;
            let mut chars = vec![b' '; chunk.len()];
            for (j, (value, label)) in chunk.iter().enumerate() {
                let relval = value - min;
                let step = (((relval * steps as f64) as i64) as f64 / relmax) as i64;
                let step = step.clamp(0, steps - 1);
                if row < rows {
                    more = true;
                    let idx = step - ((rows - row - 1) * FILL.len()) as i64;
                    if idx >= 0 && (idx as usize) < FILL.len() {
                        chars[j] = FILL[idx as usize];
                    } else if idx >= FILL.len() as i64 {
                        chars[j] = b'|';
                    }
                } else {
                    if has_labels && row - rows < 1 {
                        more = true;
                        break;
                    }
                    let label_char = row - rows - 1;
                    if let Some(c) = label.as_bytes().get(label_char) {
                        more = true;
                        chars[j] = *c;
                    }
                }
            }
            if !more {
                break;
            }
            row += 1;
            out.push_str(&String::from_utf8_lossy(&chars));
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let m = LatencyMonitor::default();
        m.add_sample("command", 5);
        m.add_sample("command", 9);
        m.add_sample("command", 2);
        let ts = m.get(b"command").unwrap();
        assert_eq!(ts.in_order().count(), 1);
        assert_eq!(ts.latest().latency_ms, 9);
        assert_eq!(ts.max, 9);
        let g = graph("command", &ts);
        assert!(g.starts_with("command - high 9 ms, low 9 ms (all time high 9 ms)\n"));
        assert!(g.contains("\n \n \n \n_\n \n"), "{g}");
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert!(m.is_empty());
    }
}
