//! The longest single batch of 1,000 inserts while one sorted set's skiplist grows to N
//! members, then of 1,000 removes while it is emptied (the pauses a resize of the member
//! index puts on the worker), in-process, without the network's noise: wall time, and the
//! thread's own CPU time (from /proc/thread-self/schedstat, so time spent waiting for a
//! core on a busy machine is left out).
//! Usage: cargo run --release -p engine --example zset_growth [N]
use engine::coll::zset::SkipList;
use std::time::{Duration, Instant};

/// Nanoseconds this thread has run on a CPU.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Runs `batch` for each base of 1,000; returns the worst wall and CPU time of one.
fn worst_of(n: usize, mut batch: impl FnMut(std::ops::Range<usize>)) -> (f64, f64) {
    let (mut wall, mut cpu) = (Duration::ZERO, 0u64);
    for base in (0..n).step_by(1000) {
        let (t, c) = (Instant::now(), cpu_ns());
        batch(base..(base + 1000).min(n));
        cpu = cpu.max(cpu_ns() - c);
        wall = wall.max(t.elapsed());
    }
    (wall.as_secs_f64() * 1e3, cpu as f64 / 1e6)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9_000_000);
    let mut sl = SkipList::new();
    let t = Instant::now();
    let (wall, cpu) = worst_of(n, |r| {
        for i in r {
            sl.insert(format!("m{i}").into_bytes().into_boxed_slice(), i as f64);
        }
    });
    let all = t.elapsed().as_secs_f64();
    println!("grow to {n}: worst batch of 1000 inserts {wall:.2} ms wall, {cpu:.2} ms CPU; all {all:.2} s");
    let t = Instant::now();
    let (wall, cpu) = worst_of(n, |r| {
        for i in r {
            sl.remove(format!("m{i}").as_bytes());
        }
    });
    let all = t.elapsed().as_secs_f64();
    println!(
        "empty: worst batch of 1000 removes {wall:.2} ms wall, {cpu:.2} ms CPU; all {all:.2} s"
    );
}
