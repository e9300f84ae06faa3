//! How loaded each worker is, for INFO's `# Threads` and `/metrics`.
//!
//! Each worker adds to two counters of its own ([`crate::stats::WorkerStats`]): `busy_ns`,
//! the time its handlers ran (top-level commands, as timed for commandstats: lock waits,
//! parsing and socket I/O are not in it, nor commands handed to the offload pool), and
//! `awake_ns`, the time its event loop spent
//! outside its poll wait. It also registers its thread's CPU clock at start, which the
//! cron reads. Every 100 ms the cron ([`crate::stats::Stats::sample`]) takes the
//! differences into a window of the last [`SAMPLES`] samples (1.6 s, the window of
//! INFO's `instantaneous_*` figures), from which:
//!
//! - a worker's **busy ratio** = busy time / awake time over the window;
//! - a worker's **CPU utilization** = its thread's CPU time / wall time over the window,
//!   in percent of one core;
//! - the offload pool's job time and CPU ([`Pool`]), apart: its threads run below the
//!   workers' priority, on whatever the workers leave;
//! - **`engine_cpu_utilization`** = the engine threads' (workers') CPU time / (wall time x
//!   workers), in percent: ElastiCache's EngineCPUUtilization, the figure to alarm on
//!   when the engine threads, not the host, are the limit.

use crate::stats::WorkerStats;
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Samples kept (as Redis's STATS_METRIC_SAMPLES).
pub const SAMPLES: usize = 16;

/// No CPU clock registered for a worker (yet).
pub const NO_CLOCK: i64 = i64::MIN;

/// The calling thread's CPU-time clock id, to be read from other threads.
pub fn current_thread_clock() -> i64 {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the calling thread, alive for the call; the out pointer
    // is a local of the right type.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    if rc == 0 {
        i64::from(id)
    } else {
        NO_CLOCK
    }
}

/// CPU time used so far by the thread whose clock is `clock` (0 if unknown).
pub fn thread_cpu_ns(clock: i64) -> u64 {
    if clock == NO_CLOCK {
        return 0;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass; an id that no longer names a
    // live thread makes it fail with EINVAL, which we treat as "unknown".
    let rc = unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A worker's cumulative figures at one instant.
#[derive(Clone, Copy, Default)]
struct Reading {
    busy_ns: u64,
    awake_ns: u64,
    cpu_ns: u64,
}

impl Reading {
    fn of(w: &WorkerStats) -> Reading {
        Reading {
            busy_ns: w.busy_ns.load(Relaxed),
            awake_ns: w.awake_ns.load(Relaxed),
            cpu_ns: thread_cpu_ns(w.cpu_clock.load(Relaxed)),
        }
    }
}

/// One worker's differences over one sample period.
#[derive(Clone, Copy, Default)]
struct Delta {
    busy_ns: u64,
    awake_ns: u64,
    cpu_ns: u64,
    wall_ns: u64,
}

/// A worker's load over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Load {
    /// Busy time / awake time, 0..=1 (0 when it was never awake).
    pub busy_ratio: f64,
    /// Thread CPU / wall time, percent of one core.
    pub cpu_pct: f64,
}

/// The cron's window of samples, per worker.
#[derive(Default)]
pub struct Window {
    last: Vec<Reading>,
    last_at: Option<Instant>,
    ring: Vec<[Delta; SAMPLES]>,
    idx: usize,
}

impl Window {
    /// Take a sample of every worker (the cron, every 100 ms).
    pub fn sample(&mut self, workers: &[WorkerStats]) {
        let now = Instant::now();
        let readings: Vec<Reading> = workers.iter().map(Reading::of).collect();
        if let Some(at) = self.last_at.filter(|_| self.last.len() == readings.len()) {
            let wall_ns = now.duration_since(at).as_nanos() as u64;
            self.ring
                .resize(readings.len(), [Delta::default(); SAMPLES]);
            for (i, (r, l)) in readings.iter().zip(&self.last).enumerate() {
                self.ring[i][self.idx] = Delta {
                    busy_ns: r.busy_ns.saturating_sub(l.busy_ns),
                    awake_ns: r.awake_ns.saturating_sub(l.awake_ns),
                    cpu_ns: r.cpu_ns.saturating_sub(l.cpu_ns),
                    wall_ns,
                };
            }
            self.idx = (self.idx + 1) % SAMPLES;
        }
        self.last = readings;
        self.last_at = Some(now);
    }

    /// Each worker's load over the window (zeros before two samples were taken).
    pub fn loads(&self, workers: usize) -> Vec<Load> {
        (0..workers)
            .map(|i| {
                let Some(ring) = self.ring.get(i) else {
                    return Load::default();
                };
                let sum = |f: fn(&Delta) -> u64| ring.iter().map(f).sum::<u64>();
                let (busy, awake) = (sum(|d| d.busy_ns), sum(|d| d.awake_ns));
                let (cpu, wall) = (sum(|d| d.cpu_ns), sum(|d| d.wall_ns));
                Load {
                    busy_ratio: ratio(busy, awake).min(1.0),
                    cpu_pct: ratio(cpu, wall) * 100.0,
                }
            })
            .collect()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The offload pool's figures (`crate::offload`): time spent on jobs and the CPU of the
/// pool threads that have run one. Counters since start (INFO threads, `/metrics`).
#[derive(Default)]
pub struct Pool {
    busy_ns: AtomicU64,
    clocks: Mutex<Vec<i64>>,
}

impl Pool {
    /// Called by a pool thread before each job: its CPU clock is registered once.
    pub fn note_thread(&self) {
        thread_local! {
            static NOTED: Cell<bool> = const { Cell::new(false) };
        }
        if !NOTED.with(|n| n.replace(true)) {
            self.clocks.lock().push(current_thread_clock());
        }
    }

    pub fn add_busy(&self, d: std::time::Duration) {
        self.busy_ns.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    pub fn busy_ns(&self) -> u64 {
        self.busy_ns.load(Relaxed)
    }

    /// CPU time of the pool threads seen so far, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.clocks.lock().iter().map(|&c| thread_cpu_ns(c)).sum()
    }
}

/// `engine_cpu_utilization`: the mean of the workers' CPU utilization, percent, capped at
/// 100 (a thread's CPU clock may run a little ahead of the wall clock between samples).
pub fn engine_cpu_utilization(loads: &[Load]) -> f64 {
    if loads.is_empty() {
        return 0.0;
    }
    let mean = loads.iter().map(|l| l.cpu_pct.min(100.0)).sum::<f64>() / loads.len() as f64;
    mean.clamp(0.0, 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_clock_moves_with_work() {
        let clock = current_thread_clock();
        assert_ne!(clock, NO_CLOCK);
        let before = thread_cpu_ns(clock);
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed().as_millis() < 20 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns(clock) > before);
        assert_eq!(thread_cpu_ns(NO_CLOCK), 0);
    }

    #[test]
    fn window_ratios() {
        let workers: Vec<WorkerStats> = (0..2).map(|_| WorkerStats::default()).collect();
        let mut w = Window::default();
        assert_eq!(w.loads(2), vec![Load::default(); 2]);
        w.sample(&workers);
        workers[0].busy_ns.store(300, Relaxed);
        workers[0].awake_ns.store(1200, Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(2));
        w.sample(&workers);
        let l = w.loads(2);
        assert_eq!(l[0].busy_ratio, 0.25);
        assert_eq!(l[1].busy_ratio, 0.0);
        // No CPU clock registered: no CPU.
        assert_eq!(engine_cpu_utilization(&l), 0.0);
        let full = [Load {
            busy_ratio: 1.0,
            cpu_pct: 104.0,
        }];
        assert_eq!(engine_cpu_utilization(&full), 100.0);
    }
}
