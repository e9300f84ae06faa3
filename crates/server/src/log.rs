//! Server log in Redis's format: `pid:M dd Mon yyyy hh:mm:ss.mmm * message`.

use std::io::Write;
use std::sync::OnceLock;

static LOGFILE: OnceLock<Option<String>> = OnceLock::new();

/// Direct the log to `path` ("" = standard output). Called once at start.
pub fn init(path: &str) {
    let _ = LOGFILE.set(if path.is_empty() {
        None
    } else {
        Some(path.to_string())
    });
}

fn write(level: char, msg: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let line = format!(
        "{}:M {}.{:03} {} {}\n",
        std::process::id(),
        now.as_secs(),
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

pub fn notice(msg: &str) {
    write('*', msg);
}

pub fn warning(msg: &str) {
    write('#', msg);
}
