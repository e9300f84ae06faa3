//! Process memory figures: `used_memory` (the one figure INFO, MEMORY and maxmemory
//! share), jemalloc's own counters, RSS from /proc, and Redis's human-readable sizes.

use tikv_jemalloc_ctl::{epoch, stats};
use tikv_jemalloc_sys as ffi;

/// `used_memory`: the bytes of every live allocation (the counting global allocator's
/// figure, see [`crate::alloc`]); jemalloc's own count where the counting allocator is
/// not in use (unit tests).
pub fn used_memory() -> u64 {
    if crate::alloc::active() {
        crate::alloc::used()
    } else {
        alloc_stats().allocated
    }
}

/// jemalloc's counters, refreshed (the epoch advanced) at each call.
#[derive(Clone, Copy, Default)]
pub struct AllocStats {
    pub allocated: u64,
    pub active: u64,
    pub resident: u64,
}

pub fn alloc_stats() -> AllocStats {
    let _ = epoch::advance();
    AllocStats {
        allocated: stats::allocated::read().unwrap_or(0) as u64,
        active: stats::active::read().unwrap_or(0) as u64,
        resident: stats::resident::read().unwrap_or(0) as u64,
    }
}

/// jemalloc's statistics report (MEMORY MALLOC-STATS: malloc_stats_print's text).
pub fn malloc_stats() -> String {
    unsafe extern "C" fn append(out: *mut std::ffi::c_void, text: *const std::ffi::c_char) {
        // SAFETY: `out` is the `&mut Vec<u8>` passed below, alive and not otherwise
        // borrowed for the whole malloc_stats_print call; jemalloc passes a
        // NUL-terminated string.
        let (out, text) = unsafe { (&mut *out.cast::<Vec<u8>>(), std::ffi::CStr::from_ptr(text)) };
        out.extend_from_slice(text.to_bytes());
    }
    let mut out: Vec<u8> = Vec::new();
    // SAFETY: the callback only appends to `out` (see above); a null options pointer
    // asks for the default report. Nothing in the report is kept past the call.
    unsafe {
        ffi::malloc_stats_print(
            Some(append),
            (&mut out as *mut Vec<u8>).cast(),
            std::ptr::null(),
        )
    };
    String::from_utf8_lossy(&out).into_owned()
}

/// Return every arena's unused dirty pages to the system (MEMORY PURGE, Redis's
/// jemalloc_purge: `arena.<all>.purge`). False if jemalloc refused.
pub fn purge() -> bool {
    // MALLCTL_ARENAS_ALL (4096) names every arena.
    const NAME: &[u8] = b"arena.4096.purge\0";
    // SAFETY: NAME is NUL-terminated; a purge reads and writes no value, so the four
    // null/zero arguments are what mallctl expects for it.
    let rc = unsafe {
        ffi::mallctl(
            NAME.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0
}

/// Resident set size of the process, from /proc/self/statm.
pub fn rss() -> u64 {
    let text = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * page_size()
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant; it has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// The sum, in bytes, of every `field:   N kB` line of a /proc file (0 if unreadable).
pub fn proc_kb_field(path: &str, field: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

/// Physical memory of the machine (MemTotal).
pub fn total_system_memory() -> u64 {
    proc_kb_field("/proc/meminfo", "MemTotal")
}

/// The allocator's name and version, as INFO's mem_allocator (e.g. `jemalloc-5.3.0`).
pub fn allocator_name() -> String {
    let v = tikv_jemalloc_ctl::version::read().unwrap_or("unknown");
    format!("jemalloc-{}", v.split('-').next().unwrap_or(v))
}

/// Redis's bytesToHuman.
pub fn human(n: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (1 << 10, "K"),
        (1 << 20, "M"),
        (1 << 30, "G"),
        (1 << 40, "T"),
        (1 << 50, "P"),
    ];
    if !(1024..1 << 60).contains(&n) {
        return format!("{n}B");
    }
    for (i, (unit, suffix)) in UNITS.iter().enumerate() {
        if i + 1 == UNITS.len() || n < UNITS[i + 1].0 {
            return format!("{:.2}{suffix}", n as f64 / *unit as f64);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(1000), "1000B");
        assert_eq!(human(1064456), "1.02M");
        assert_eq!(human(32768), "32.00K");
        assert_eq!(human(25276510208), "23.54G");
    }
}
