//! INFO parsing (any `name:value` lines) and the server sampler: a side connection that
//! asks INFO once a second while a run goes on.

use crate::conn::{Blocking, Target};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every `name:value` line of an INFO reply (section headers and blank lines skipped).
pub fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The payload of a bulk (or RESP3 verbatim) string reply.
pub fn bulk_payload(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let body = text.split_once("\r\n").map(|(_, b)| b).unwrap_or("");
    let body = body.strip_suffix("\r\n").unwrap_or(body);
    let body = if raw.first() == Some(&b'=') {
        body.get(4..).unwrap_or("")
    } else {
        body
    };
    body.to_string()
}

/// Is this a field the sampler keeps? Redis's standard ones plus Skein's per-worker CPU.
fn wanted(name: &str) -> bool {
    matches!(
        name,
        "used_cpu_user"
            | "used_cpu_sys"
            | "connected_clients"
            | "total_net_input_bytes"
            | "total_net_output_bytes"
            | "used_memory"
            | "instantaneous_ops_per_sec"
            | "total_commands_processed"
    ) || worker_cpu(name).is_some()
}

/// `worker3_cpu_user` → Some(3).
pub fn worker_cpu(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("worker")?;
    let (n, tail) = rest.split_once('_')?;
    if tail == "cpu_user" || tail == "cpu_sys" {
        n.parse().ok()
    } else {
        None
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the run started.
    pub t: f64,
    pub fields: BTreeMap<String, f64>,
}

pub fn sample_of(t: f64, info: &BTreeMap<String, String>) -> Sample {
    let fields = info
        .iter()
        .filter(|(k, _)| wanted(k))
        .filter_map(|(k, v)| Some((k.clone(), v.parse::<f64>().ok()?)))
        .collect();
    Sample { t, fields }
}

/// What the server did over a window of the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerSummary {
    pub seconds: f64,
    /// Process CPU, percent of one core.
    pub cpu_user_pct: Option<f64>,
    pub cpu_sys_pct: Option<f64>,
    /// Skein's engine CPU per worker (user + sys), percent of one core.
    pub worker_cpu_pct: BTreeMap<usize, f64>,
    pub engine_cpu_pct: Option<f64>,
    pub connected_clients: Option<f64>,
    pub net_in_bytes_per_sec: Option<f64>,
    pub net_out_bytes_per_sec: Option<f64>,
    pub used_memory: Option<f64>,
    pub commands_per_sec: Option<f64>,
}

impl ServerSummary {
    /// Process CPU (user + sys), percent of one core.
    pub fn cpu_pct(&self) -> Option<f64> {
        Some(self.cpu_user_pct? + self.cpu_sys_pct?)
    }

    /// Summary between the samples nearest to `from` and `to` seconds.
    pub fn between(samples: &[Sample], from: f64, to: f64) -> Option<ServerSummary> {
        let a = samples.iter().find(|s| s.t >= from - 0.05)?;
        let b = samples.iter().rev().find(|s| s.t <= to + 0.5)?;
        let dt = b.t - a.t;
        if dt <= 0.0 {
            return None;
        }
        let rate = |k: &str| Some((b.fields.get(k)? - a.fields.get(k)?) / dt);
        let mut workers = BTreeMap::new();
        for (k, v) in &b.fields {
            if let (Some(w), Some(v0)) = (worker_cpu(k), a.fields.get(k)) {
                *workers.entry(w).or_insert(0.0) += (v - v0) / dt * 100.0;
            }
        }
        let in_window = samples.iter().filter(|s| s.t >= a.t && s.t <= b.t);
        let max_of = |k: &str| {
            in_window
                .clone()
                .filter_map(|s| s.fields.get(k).copied())
                .reduce(f64::max)
        };
        Some(ServerSummary {
            seconds: dt,
            cpu_user_pct: rate("used_cpu_user").map(|r| r * 100.0),
            cpu_sys_pct: rate("used_cpu_sys").map(|r| r * 100.0),
            engine_cpu_pct: (!workers.is_empty()).then(|| workers.values().sum()),
            worker_cpu_pct: workers,
            connected_clients: max_of("connected_clients"),
            net_in_bytes_per_sec: rate("total_net_input_bytes"),
            net_out_bytes_per_sec: rate("total_net_output_bytes"),
            used_memory: max_of("used_memory"),
            commands_per_sec: rate("total_commands_processed"),
        })
    }
}

/// Samples that came back, or why sampling stopped.
#[derive(Default)]
pub struct Sampled {
    pub samples: Vec<Sample>,
    pub error: Option<String>,
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Sampled>,
}

impl Sampler {
    /// Connects and takes a first sample at once (t = 0 is `start`).
    pub fn start(target: &Target, start: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let mut t = target.clone();
        t.resp = 2;
        let flag = stop.clone();
        let handle = std::thread::spawn(move || sample_loop(&t, start, &flag));
        Sampler { stop, handle }
    }

    /// Takes a last sample and returns them all.
    pub fn finish(self) -> Sampled {
        self.stop.store(true, Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

fn sample_loop(t: &Target, start: Instant, stop: &AtomicBool) -> Sampled {
    let mut out = Sampled::default();
    let mut conn = match Blocking::connect(t).and_then(|mut c| c.handshake(t, 0).map(|_| c)) {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let mut next = start;
    loop {
        let last = stop.load(Relaxed);
        match conn.call(&[b"INFO"]) {
            Ok((raw, crate::resp::Reply::Error)) => {
                out.error = Some(format!("INFO failed: {}", crate::conn::error_text(&raw)));
                return out;
            }
            Ok((raw, _)) => {
                let info = parse(&bulk_payload(&raw));
                out.samples
                    .push(sample_of(start.elapsed().as_secs_f64(), &info));
            }
            Err(e) => {
                out.error = Some(format!("INFO failed: {e}"));
                return out;
            }
        }
        if last {
            return out;
        }
        next += Duration::from_secs(1);
        while !stop.load(Relaxed) && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_any_fields() {
        let m = parse(
            "# CPU\r\nused_cpu_sys:1.5\r\nworker0_cpu_user:0.25\r\n\r\nrole:master\r\nx:a:b\r\n",
        );
        assert_eq!(m["used_cpu_sys"], "1.5");
        assert_eq!(m["role"], "master");
        assert_eq!(m["x"], "a:b");
        assert_eq!(worker_cpu("worker0_cpu_user"), Some(0));
        assert_eq!(worker_cpu("worker12_cpu_sys"), Some(12));
        assert_eq!(worker_cpu("worker_cpu_sys"), None);
        assert_eq!(worker_cpu("worker1_threads"), None);
    }

    #[test]
    fn payload_of_bulk_and_verbatim() {
        assert_eq!(bulk_payload(b"$5\r\na:1\r\n\r\n"), "a:1\r\n");
        assert_eq!(bulk_payload(b"=7\r\ntxt:a:1\r\n"), "a:1");
    }

    #[test]
    fn summary_of_two_samples() {
        let s0 = sample_of(
            0.0,
            &parse("used_cpu_user:1\nused_cpu_sys:0\ntotal_net_input_bytes:0\ntotal_net_output_bytes:100\nworker0_cpu_user:0\nworker0_cpu_sys:0\nworker1_cpu_user:0\nworker1_cpu_sys:0\nconnected_clients:3\nrole:master"),
        );
        let s1 = sample_of(
            2.0,
            &parse("used_cpu_user:2\nused_cpu_sys:0.5\ntotal_net_input_bytes:4000\ntotal_net_output_bytes:2100\nworker0_cpu_user:0.5\nworker0_cpu_sys:0.5\nworker1_cpu_user:0.2\nworker1_cpu_sys:0\nconnected_clients:7"),
        );
        assert!(!s0.fields.contains_key("role"));
        let s = ServerSummary::between(&[s0, s1], 0.0, 2.0).unwrap();
        assert_eq!(s.cpu_user_pct, Some(50.0));
        assert_eq!(s.cpu_sys_pct, Some(25.0));
        assert_eq!(s.cpu_pct(), Some(75.0));
        assert_eq!(s.worker_cpu_pct[&0], 50.0);
        assert!((s.engine_cpu_pct.unwrap() - 60.0).abs() < 1e-9);
        assert_eq!(s.net_in_bytes_per_sec, Some(2000.0));
        assert_eq!(s.net_out_bytes_per_sec, Some(1000.0));
        assert_eq!(s.connected_clients, Some(7.0));
        assert_eq!(s.used_memory, None);
    }
}
