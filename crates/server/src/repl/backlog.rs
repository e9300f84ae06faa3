//! The replication backlog: the tail of the replication stream (the propagation stream's
//! bytes as replicas receive them, plus the master's PINGs), kept so that replicas read it
//! at their own pace and a replica that reconnects can continue where it stopped (PSYNC).
//!
//! Positions count bytes from the start of the stream: `offset()` is Redis's
//! master_repl_offset, the number of bytes fed so far. A reader at position `p` has
//! received the first `p` bytes.
//!
//! The backlog keeps at least `repl-backlog-size` bytes, and more while a connected replica
//! still needs them, up to [`READER_LIMIT`] more (Redis's replica output-buffer limit,
//! 256 MB): a replica further behind than that loses its place and is disconnected.

use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How far past `repl-backlog-size` the backlog grows for a slow replica.
pub const READER_LIMIT: u64 = 256 * 1024 * 1024;

/// CONFIG_REPL_BACKLOG_MIN_SIZE.
const MIN_SIZE: u64 = 16 * 1024;

#[derive(Default)]
struct Inner {
    /// Bytes from position `start` on (a ring: dropping old bytes moves nothing).
    buf: VecDeque<u8>,
    start: u64,
    /// repl-backlog-size.
    size: u64,
    /// Each reader's position (replica id -> bytes it has been given).
    readers: HashMap<u64, u64>,
    /// Readers dropped by `restart_at`: their positions mean nothing any more.
    dropped: std::collections::HashSet<u64>,
}

impl Inner {
    fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Drop what no reader needs beyond the last `size` bytes.
    fn trim(&mut self) {
        let end = self.end();
        let slowest = self.readers.values().copied().min().unwrap_or(end);
        let keep = (end - slowest).max(self.size);
        let keep = keep.min(self.size + READER_LIMIT);
        let held = self.buf.len() as u64;
        if held > keep {
            let drop = (held - keep) as usize;
            self.buf.drain(..drop);
            self.start += drop as u64;
        }
    }

    /// A copy of the bytes at indexes `from..to` of the ring.
    fn copy(&self, from: usize, to: usize) -> Vec<u8> {
        let (a, b) = self.buf.as_slices();
        let mut out = Vec::with_capacity(to - from);
        if from < a.len() {
            out.extend_from_slice(&a[from..to.min(a.len())]);
        }
        if to > a.len() {
            out.extend_from_slice(&b[from.saturating_sub(a.len())..to - a.len()]);
        }
        out
    }
}

/// Why a read gave nothing.
#[derive(Debug, PartialEq, Eq)]
pub struct Lost;

#[derive(Default)]
pub struct Backlog {
    active: AtomicBool,
    /// Mirrors of the inner figures, for INFO without the lock.
    offset: AtomicU64,
    inner: Mutex<Inner>,
    grown: Condvar,
}

impl Backlog {
    pub fn is_active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Start keeping the stream (the first replica), with `size` bytes of history (at
    /// least Redis's 16 KB).
    pub fn activate(&self, size: u64) {
        let mut inner = self.inner.lock();
        inner.size = size.max(MIN_SIZE);
        self.active.store(true, Relaxed);
    }

    /// Start over at stream position `at`, holding nothing and with no readers (a replica
    /// promoted by FAILOVER goes on from its old master's offset); activates it.
    pub fn restart_at(&self, at: u64, size: u64) {
        let mut inner = self.inner.lock();
        inner.buf.clear();
        inner.start = at;
        let gone: Vec<u64> = inner.readers.drain().map(|(id, _)| id).collect();
        inner.dropped.extend(gone);
        inner.size = size.max(MIN_SIZE);
        self.offset.store(at, Relaxed);
        self.active.store(true, Relaxed);
    }

    /// Free it (repl-backlog-ttl passed without replicas): nothing held, no readers, not
    /// active; the stream position stays where it is.
    pub fn free(&self) {
        let mut inner = self.inner.lock();
        inner.start = inner.end();
        inner.buf = VecDeque::new();
        let gone: Vec<u64> = inner.readers.drain().map(|(id, _)| id).collect();
        inner.dropped.extend(gone);
        self.active.store(false, Relaxed);
    }

    /// repl-backlog-size changed.
    pub fn set_size(&self, size: u64) {
        let mut inner = self.inner.lock();
        inner.size = size.max(MIN_SIZE);
        inner.trim();
    }

    /// Append stream bytes (the caller keeps appends in stream order).
    pub fn append(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut inner = self.inner.lock();
        inner.buf.extend(bytes);
        self.offset.store(inner.end(), Relaxed);
        inner.trim();
        drop(inner);
        self.grown.notify_all();
    }

    /// Bytes it holds (INFO mem_replication_backlog).
    pub fn bytes(&self) -> u64 {
        crate::alloc::size_class(self.inner.lock().buf.capacity())
    }

    /// master_repl_offset: bytes fed so far.
    pub fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }

    /// (repl_backlog_first_byte_offset, repl_backlog_histlen), Redis's 1-based first byte.
    pub fn history(&self) -> (u64, u64) {
        let inner = self.inner.lock();
        (inner.start + 1, inner.buf.len() as u64)
    }

    /// Can a reader continue from position `at` (its bytes are still kept)?
    pub fn holds(&self, at: u64) -> bool {
        let inner = self.inner.lock();
        self.is_active() && at >= inner.start && at <= inner.end()
    }

    /// Register reader `id` at position `at`; false if those bytes are gone.
    pub fn add_reader(&self, id: u64, at: u64) -> bool {
        let mut inner = self.inner.lock();
        if at < inner.start || at > inner.end() {
            return false;
        }
        inner.readers.insert(id, at);
        true
    }

    pub fn remove_reader(&self, id: u64) {
        let mut inner = self.inner.lock();
        inner.readers.remove(&id);
        inner.dropped.remove(&id);
        inner.trim();
    }

    /// The bytes after position `at` (at most `max`), waiting up to `wait` for some;
    /// empty if none came. Records `at` plus what is returned as reader `id`'s position.
    pub fn read(&self, id: u64, at: u64, max: usize, wait: Duration) -> Result<Vec<u8>, Lost> {
        let mut inner = self.inner.lock();
        if inner.end() == at {
            self.grown.wait_for(&mut inner, wait);
        }
        // A reader dropped when the backlog started over (`restart_at`) is lost.
        if at < inner.start || at > inner.end() || inner.dropped.remove(&id) {
            inner.readers.remove(&id);
            return Err(Lost);
        }
        let from = (at - inner.start) as usize;
        let to = inner.buf.len().min(from + max);
        let out = inner.copy(from, to);
        inner.readers.insert(id, at + out.len() as u64);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_keep_what_they_need_and_lose_their_place_past_the_limit() {
        let b = Backlog::default();
        b.activate(100);
        assert!(b.add_reader(1, 0));
        for _ in 0..1000 {
            b.append(&[7; 1000]);
        }
        // The reader at 0 holds everything in.
        assert_eq!(b.history(), (1, 1_000_000));
        let got = b.read(1, 0, 10, Duration::ZERO).unwrap();
        assert_eq!(got, vec![7; 10]);
        b.remove_reader(1);
        // Without readers: trimmed back towards the backlog size.
        b.append(&[1; 10]);
        let (first, len) = b.history();
        assert!(len < 200_000, "{len}");
        assert_eq!(first - 1 + len, b.offset());
        assert!(!b.holds(0));
        assert_eq!(b.read(2, 0, 10, Duration::ZERO), Err(Lost));
        let at = b.offset() - 10;
        assert_eq!(b.read(2, at, 100, Duration::ZERO).unwrap(), vec![1; 10]);
        assert!(b
            .read(2, b.offset(), 100, Duration::from_millis(1))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn restart_at_goes_on_from_another_offset_and_drops_the_readers() {
        let b = Backlog::default();
        b.activate(100);
        b.append(&[1; 50]);
        assert!(b.add_reader(1, 50));
        b.restart_at(1000, 100);
        assert_eq!((b.offset(), b.history()), (1000, (1001, 0)));
        assert!(b.holds(1000) && !b.holds(999));
        b.append(&[2; 5]);
        // Reader 1's place is gone, even where the new positions would hold it.
        assert_eq!(b.read(1, 1000, 10, Duration::ZERO), Err(Lost));
        assert!(b.add_reader(3, 1000));
        assert_eq!(b.read(3, 1000, 10, Duration::ZERO).unwrap(), vec![2; 5]);
    }
}
