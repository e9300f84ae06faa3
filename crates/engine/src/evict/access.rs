//! The 24-bit access field of every key, kept as Redis keeps it: under an LRU policy (or
//! none) the LRU clock of the last access, in seconds; under an LFU policy the minute of
//! the last access (16 bits) and a logarithmic access counter (8 bits), incremented with
//! probability `1 / ((counter - 5) * lfu-log-factor + 1)` and decayed by one per
//! `lfu-decay-time` minutes without access (Redis's evict.c, `updateLFU`).
//!
//! The mode and the two LFU parameters are process-wide atomics set from the configuration
//! ([`configure`]), read with one relaxed load on each access.

use crate::clock::{lru_clock, now_ms};
use rand::Rng;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

/// The largest value of the 24-bit LRU clock (LRU_CLOCK_MAX).
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// The counter of a new key under LFU (LFU_INIT_VAL), so new keys are not evicted first.
pub const LFU_INIT_VAL: u32 = 5;

static LFU: AtomicBool = AtomicBool::new(false);
static LOG_FACTOR: AtomicU32 = AtomicU32::new(10);
static DECAY_MINUTES: AtomicU32 = AtomicU32::new(1);

/// Set the mode (an LFU `maxmemory-policy` or not), `lfu-log-factor` and `lfu-decay-time`.
pub fn configure(lfu: bool, log_factor: u32, decay_minutes: u32) {
    LOG_FACTOR.store(log_factor, Relaxed);
    DECAY_MINUTES.store(decay_minutes, Relaxed);
    LFU.store(lfu, Relaxed);
}

/// Is the field an LFU (time, counter) pair now?
#[inline]
pub fn lfu() -> bool {
    LFU.load(Relaxed)
}

/// The field of a key created now (createObject).
#[inline]
pub fn fresh() -> u32 {
    if lfu() {
        (lfu_minutes() << 8) | LFU_INIT_VAL
    } else {
        lru_clock()
    }
}

/// The field after an access (lookupKey without NOTOUCH): the clock now, or the LFU
/// counter decayed then incremented.
#[inline]
pub fn touched(field: u32) -> u32 {
    if lfu() {
        lfu_touched(field, lfu_minutes(), LOG_FACTOR.load(Relaxed))
    } else {
        lru_clock()
    }
}

/// updateLFU at minute `now` with `log_factor`.
fn lfu_touched(field: u32, now: u32, log_factor: u32) -> u32 {
    let counter = log_incr(decayed(field, now, DECAY_MINUTES.load(Relaxed)), log_factor);
    (now << 8) | counter
}

/// LFUGetTimeInMinutes: the 16-bit minute clock.
pub fn lfu_minutes() -> u32 {
    ((now_ms() / 1000 / 60) & 0xffff) as u32
}

/// LFUDecrAndReturn: the counter of an LFU field after the decay periods since its last
/// access.
pub fn lfu_counter(field: u32) -> u32 {
    decayed(field, lfu_minutes(), DECAY_MINUTES.load(Relaxed))
}

/// The counter of `field` at minute `now`, one less per `decay` minutes elapsed.
fn decayed(field: u32, now: u32, decay: u32) -> u32 {
    let ldt = field >> 8;
    let counter = field & 255;
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = elapsed.checked_div(decay).unwrap_or(0);
    counter.saturating_sub(periods)
}

/// LFULogIncr.
fn log_incr(counter: u32, log_factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    // Redis draws rand()/RAND_MAX in [0, 1]; p = 1 always increments.
    if p >= 1.0 || rand::thread_rng().gen::<f64>() < p {
        counter + 1
    } else {
        counter
    }
}

/// estimateObjectIdleTime in seconds: the LRU clock's distance from an LRU field.
pub fn idle_seconds(field: u32) -> u32 {
    let clock = lru_clock();
    let field = field & LRU_CLOCK_MAX;
    if clock >= field {
        clock - field
    } else {
        clock + (LRU_CLOCK_MAX - field)
    }
}

/// An LRU field `idle` seconds old (objectSetLRUOrLFU's IDLETIME).
pub fn lru_aged(idle_secs: i64) -> u32 {
    let mut abs = i64::from(lru_clock()).wrapping_sub(idle_secs);
    if abs < 0 {
        abs = abs.wrapping_add(i64::from(LRU_CLOCK_MAX));
    }
    (abs as u32) & LRU_CLOCK_MAX
}

/// An LFU field with counter `freq`, accessed now (objectSetLRUOrLFU's FREQ).
pub fn lfu_with(freq: u8) -> u32 {
    (lfu_minutes() << 8) | u32::from(freq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_increments_logarithmically() {
        // Factor 0: every access counts.
        let mut f = (100 << 8) | LFU_INIT_VAL;
        for _ in 0..10 {
            f = (100 << 8) | log_incr(decayed(f, 100, 1), 0);
        }
        assert_eq!(decayed(f, 100, 1), 15);
        for _ in 0..1000 {
            f = (100 << 8) | log_incr(decayed(f, 100, 1), 0);
        }
        assert_eq!(decayed(f, 100, 1), 255);
        assert_eq!(log_incr(255, 10), 255);
        // Below the initial value the increment is certain.
        assert_eq!(log_incr(3, 10), 4);
        // Factor 10 at counter 105: p = 1/1001.
        let hits = (0..100_000).filter(|_| log_incr(105, 10) == 106).count();
        assert!((20..300).contains(&hits), "{hits}");
    }

    #[test]
    fn decay_by_minutes() {
        assert_eq!(decayed((97 << 8) | 20, 100, 1), 17);
        assert_eq!(decayed((97 << 8) | 20, 100, 2), 19);
        assert_eq!(decayed((97 << 8) | 20, 100, 0), 20);
        assert_eq!(decayed((100 << 8) | 2, 200, 1), 0);
        // The minute clock wraps at 16 bits.
        assert_eq!(decayed((65534 << 8) | 9, 1, 1), 7);
    }
}
