//! A full sync's transfer as the replica receives it, for INFO replication's
//! `master_sync_*` fields (Redis's repl_transfer_size/read/lastio).

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

#[derive(Default)]
pub struct SyncProgress {
    /// The snapshot's announced size: -1 until its header came, 0 for `$EOF:` framing.
    total: AtomicI64,
    /// Bytes of the snapshot read so far.
    read: AtomicI64,
    /// Unix seconds of the last read.
    last_io: AtomicI64,
}

impl SyncProgress {
    /// +FULLRESYNC came: the snapshot's header is awaited.
    pub fn start(&self) {
        self.total.store(-1, Relaxed);
        self.read.store(0, Relaxed);
        self.last_io.store(crate::persist::unix_secs(), Relaxed);
    }

    /// The header announced `total` bytes (0: up to an end mark).
    pub fn sized(&self, total: i64) {
        self.total.store(total, Relaxed);
    }

    /// `read` bytes of the snapshot have come so far.
    pub fn reached(&self, read: usize) {
        self.read.store(read as i64, Relaxed);
        self.last_io.store(crate::persist::unix_secs(), Relaxed);
    }

    /// The fields Redis adds to INFO replication while a sync transfers.
    pub fn info_lines(&self, now_secs: i64) -> [(&'static str, String); 5] {
        let (total, read) = (self.total.load(Relaxed), self.read.load(Relaxed));
        // As Redis: a size of -1 (no header yet) still divides.
        let perc = if total != 0 {
            read as f64 / total as f64 * 100.0
        } else {
            0.0
        };
        [
            ("master_sync_total_bytes", total.to_string()),
            ("master_sync_read_bytes", read.to_string()),
            ("master_sync_left_bytes", (total - read).to_string()),
            ("master_sync_perc", format!("{perc:.2}")),
            (
                "master_sync_last_io_seconds_ago",
                (now_secs - self.last_io.load(Relaxed)).to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_as_redis_prints_them() {
        let p = SyncProgress::default();
        p.start();
        let now = crate::persist::unix_secs();
        let f = p.info_lines(now);
        assert_eq!(f[0].1, "-1");
        assert_eq!(f[2].1, "-1");
        assert_eq!(f[3].1, "-0.00");
        p.sized(200);
        p.reached(50);
        let f = p.info_lines(now);
        assert_eq!(
            (f[1].1.as_str(), f[2].1.as_str(), f[3].1.as_str()),
            ("50", "150", "25.00")
        );
        p.sized(0);
        assert_eq!(p.info_lines(now)[2].1, "-50");
        assert_eq!(p.info_lines(now)[3].1, "0.00");
    }
}
