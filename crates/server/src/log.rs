//! Server log in Redis's format: `pid:M dd Mon yyyy hh:mm:ss.mmm * message`.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

static LOGFILE: OnceLock<Option<String>> = OnceLock::new();

/// `loglevel` as a level: lines below it are not written (Redis's server.verbosity).
static VERBOSITY: AtomicU8 = AtomicU8::new(2);

/// Set by the configuration (start-up and CONFIG SET loglevel).
pub fn set_verbosity(level: u8) {
    VERBOSITY.store(level, Relaxed);
}

/// Direct the log to `path` ("" = standard output). Called once at start.
pub fn init(path: &str) {
    let _ = LOGFILE.set(if path.is_empty() {
        None
    } else {
        Some(path.to_string())
    });
}

/// `dd Mon yyyy hh:mm:ss` in UTC for Unix seconds (Redis prints local time; servers
/// usually run in UTC).
fn utc_stamp(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}",
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn write(level: u8, msg: &str) {
    if level < VERBOSITY.load(Relaxed) {
        return;
    }
    let level = ['.', '-', '*', '#'][level.min(3) as usize];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let line = format!(
        "{}:M {}.{:03} {} {}\n",
        std::process::id(),
        utc_stamp(now.as_secs()),
        now.subsec_millis(),
        level,
        msg
    );
    match LOGFILE.get().and_then(|p| p.as_ref()) {
        Some(path) => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }
        None => {
            let _ = std::io::stdout().write_all(line.as_bytes());
        }
    }
}

/// Log at Redis's level `level` (0 debug, 1 verbose, 2 notice, 3 warning).
pub fn at(level: u8, msg: &str) {
    write(level, msg);
}

/// Redis's `loglevel` names as levels.
pub fn level_of(name: &str) -> u8 {
    match name {
        "debug" => 0,
        "verbose" => 1,
        "notice" => 2,
        _ => 3,
    }
}

pub fn notice(msg: &str) {
    write(2, msg);
}

pub fn warning(msg: &str) {
    write(3, msg);
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_stamps() {
        assert_eq!(super::utc_stamp(0), "01 Jan 1970 00:00:00");
        assert_eq!(super::utc_stamp(951_782_400), "29 Feb 2000 00:00:00");
        assert_eq!(super::utc_stamp(1_795_421_157), "23 Nov 2026 08:05:57");
    }
}
