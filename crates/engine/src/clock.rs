//! Time as the keyspace sees it: the batch clock of a worker thread and the LRU clock.

thread_local! {
    /// The time a worker thread fixed for the batch of commands it is running (0 = none).
    static BATCH_NOW_MS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// The wall clock in Unix milliseconds (always a clock read).
pub fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Current Unix time in milliseconds: the time fixed for the current batch on a worker
/// thread (see [`begin_batch`]), else the wall clock. Commands of one batch then agree on
/// "now" (as Redis's command time snapshot), and a batch costs one clock read instead of
/// several per command.
pub fn now_ms() -> i64 {
    let t = BATCH_NOW_MS.with(|c| c.get());
    if t != 0 {
        t
    } else {
        wall_ms()
    }
}

/// Fix "now" for the commands this thread runs until the next call (a worker calls it
/// before serving each connection's readiness event).
pub fn begin_batch() {
    let t = wall_ms();
    BATCH_NOW_MS.with(|c| c.set(t));
}

/// Process-wide LRU clock in seconds (wraps at 2^24 like Redis's).
pub fn lru_clock() -> u32 {
    // From the batch clock: no clock read of its own on a worker thread.
    ((crate::now_ms() / 1000) & 0xff_ffff) as u32
}
