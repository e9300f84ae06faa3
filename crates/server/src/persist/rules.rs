//! The `save` rules ("save after N seconds if at least M changes"), checked by the cron
//! as Redis's serverCron does, and a scheduled BGSAVE.

use super::{changes_since_save, save, unix_secs, BGSAVE_RETRY_DELAY};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

/// The (seconds, changes) pairs of a `save` value ("3600 1 300 100", or "" for none).
pub fn parse(value: &str) -> Vec<(i64, u64)> {
    let words: Vec<&str> = value.split_whitespace().collect();
    words
        .chunks(2)
        .filter_map(|p| Some((p.first()?.parse().ok()?, p.get(1)?.parse().ok()?)))
        .collect()
}

/// One cron tick: start a BGSAVE if a rule is due (or one was scheduled), unless one runs.
pub fn cron(srv: &Server) {
    let p = &srv.persist;
    if p.bgsave_in_progress() || p.is_loading() {
        return;
    }
    let now = unix_secs();
    let retry_ok =
        now - p.lastbgsave_try.load(Relaxed) > BGSAVE_RETRY_DELAY || p.last_bgsave_ok.load(Relaxed);
    let dirty = changes_since_save(srv);
    let since = now - p.lastsave.load(Relaxed);
    for (secs, changes) in parse(&srv.config.get("save")) {
        if dirty >= changes && since > secs && retry_ok {
            crate::log::notice(&format!("{changes} changes in {secs} seconds. Saving..."));
            let _ = save::start_bgsave(srv);
            return;
        }
    }
    if p.scheduled.load(Relaxed) && retry_ok && save::start_bgsave(srv).is_ok() {
        p.scheduled.store(false, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_rules() {
        assert_eq!(
            super::parse("3600 1 300 100 60 10000"),
            vec![(3600, 1), (300, 100), (60, 10000)]
        );
        assert!(super::parse("").is_empty());
    }
}
