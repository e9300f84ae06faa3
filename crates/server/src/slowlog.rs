//! The slow log: commands that ran longer than `slowlog-log-slower-than` µs, newest first,
//! at most `slowlog-max-len` of them. Only slow commands take its lock.

use parking_lot::Mutex;
use std::collections::VecDeque;

/// Arguments kept per entry (SLOWLOG_ENTRY_MAX_ARGC).
const MAX_ARGC: usize = 32;
/// Bytes kept per argument (SLOWLOG_ENTRY_MAX_STRING).
const MAX_STRING: usize = 128;

pub struct Entry {
    pub id: u64,
    pub time: i64,
    pub duration_us: u64,
    pub argv: Vec<Vec<u8>>,
    pub peer: String,
    pub name: Vec<u8>,
}

#[derive(Default)]
pub struct SlowLog {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// The arguments as Redis's slowlogCreateEntry keeps them.
fn trimmed_argv(argv: &[&[u8]]) -> Vec<Vec<u8>> {
    let argc = argv.len();
    let kept = argc.min(MAX_ARGC);
    (0..kept)
        .map(|j| {
            if kept != argc && j == kept - 1 {
                format!("... ({} more arguments)", argc - kept + 1).into_bytes()
            } else if argv[j].len() > MAX_STRING {
                let mut s = argv[j][..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", argv[j].len() - MAX_STRING).as_bytes(),
                );
                s
            } else {
                argv[j].to_vec()
            }
        })
        .collect()
}

impl SlowLog {
    /// Record a command that took `duration_us` (the caller checked the threshold).
    pub fn push(&self, argv: &[&[u8]], duration_us: u64, peer: &str, name: &[u8], max_len: usize) {
        let entry_argv = trimmed_argv(argv);
        let time = engine::now_ms() / 1000;
        let mut inner = self.inner.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.entries.push_front(Entry {
            id,
            time,
            duration_us,
            argv: entry_argv,
            peer: peer.to_string(),
            name: name.to_vec(),
        });
        inner.entries.truncate(max_len);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.inner.lock().entries.clear();
    }

    /// Drop the oldest entries beyond `max_len`.
    pub fn trim(&self, max_len: usize) {
        self.inner.lock().entries.truncate(max_len);
    }

    /// Visit the newest `count` entries, newest first.
    pub fn with_newest<R>(
        &self,
        count: usize,
        f: impl FnOnce(&mut dyn Iterator<Item = &Entry>) -> R,
    ) -> R {
        let inner = self.inner.lock();
        let mut it = inner.entries.iter().take(count);
        f(&mut it)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_like_redis() {
        let long = vec![b'x'; 130];
        let args: Vec<&[u8]> = (0..40).map(|_| long.as_slice()).collect();
        let t = trimmed_argv(&args);
        assert_eq!(t.len(), 32);
        assert_eq!(t[31], b"... (9 more arguments)");
        assert!(t[0].ends_with(b"x... (2 more bytes)"));
        assert_eq!(t[0].len(), 128 + "... (2 more bytes)".len());
    }

    #[test]
    fn newest_first_and_bounded() {
        let log = SlowLog::default();
        for i in 0..5u8 {
            log.push(&[&[b'a' + i]], 1, "1.2.3.4:5", b"", 3);
        }
        assert_eq!(log.len(), 3);
        let ids: Vec<u64> = log.with_newest(10, |it| it.map(|e| e.id).collect());
        assert_eq!(ids, vec![4, 3, 2]);
    }
}
