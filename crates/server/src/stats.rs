//! Counters. Each worker writes only its own slot (no shared cache line on the command
//! path); readers (INFO) sum the slots.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Per-command counters of one worker (a cache line of its own).
#[derive(Default)]
#[repr(align(64))]
pub struct CmdCounters {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
}

/// Counters one worker owns.
#[derive(Default)]
pub struct WorkerStats {
    pub commands: AtomicU64,
    pub connections: AtomicU64,
    pub net_in: AtomicU64,
    pub net_out: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub expired_keys: AtomicU64,
    /// Thread CPU time, microseconds (user, system), refreshed by the worker.
    pub cpu_user_us: AtomicU64,
    pub cpu_sys_us: AtomicU64,
    pub clients: AtomicU64,
}

pub struct Stats {
    pub workers: Box<[WorkerStats]>,
    /// Counters written off the worker threads (cron, acceptor).
    pub global: WorkerStats,
    pub rejected_connections: AtomicU64,
    pub total_error_replies: AtomicU64,
}

impl Stats {
    pub fn new(workers: usize) -> Stats {
        Stats {
            workers: (0..workers.max(1))
                .map(|_| WorkerStats::default())
                .collect(),
            global: WorkerStats::default(),
            rejected_connections: AtomicU64::new(0),
            total_error_replies: AtomicU64::new(0),
        }
    }

    /// Sum one field over all workers and the global slot.
    pub fn sum(&self, f: impl Fn(&WorkerStats) -> &AtomicU64) -> u64 {
        self.workers
            .iter()
            .chain(std::iter::once(&self.global))
            .map(|w| f(w).load(Relaxed))
            .sum()
    }

    pub fn reset(&self) {
        for w in self.workers.iter().chain(std::iter::once(&self.global)) {
            for c in [
                &w.commands,
                &w.connections,
                &w.net_in,
                &w.net_out,
                &w.keyspace_hits,
                &w.keyspace_misses,
                &w.expired_keys,
            ] {
                c.store(0, Relaxed);
            }
        }
        self.rejected_connections.store(0, Relaxed);
        self.total_error_replies.store(0, Relaxed);
    }
}

/// CPU time of the calling thread: (user µs, system µs).
pub fn thread_cpu_us() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage struct into the pointer we pass; the memory
    // is ours, zero-initialised and the right size. RUSAGE_THREAD is Linux-specific.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct.
    let ru = unsafe { ru.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// CPU time of the whole process: (user µs, system µs).
pub fn process_cpu_us() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: as in thread_cpu_us.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct.
    let ru = unsafe { ru.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}
