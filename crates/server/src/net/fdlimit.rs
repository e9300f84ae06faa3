//! The open-file limit the server needs for itself: Redis's adjustOpenFilesLimit.
//!
//! At start, `RLIMIT_NOFILE` is raised to `maxclients` plus the descriptors Redis reserves
//! for its own use. When the OS refuses, the highest limit it grants (trying 16 fewer at a
//! time) is kept, `maxclients` is lowered to fit, and Redis's warnings say so; when even
//! the reserved descriptors do not fit, the server does not start.

use crate::server::Server;

/// Descriptors kept for the server's own files (Redis's CONFIG_MIN_RESERVED_FDS).
pub const RESERVED_FDS: u64 = 32;
/// Step by which a refused limit is lowered before trying again (as Redis does).
const DECREMENT: u64 = 16;

fn get_nofile() -> std::io::Result<libc::rlimit> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(rl)
}

/// Set both the soft and the hard limit to `n`, as Redis does.
fn set_nofile(n: u64) -> std::io::Result<()> {
    let rl = libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    // SAFETY: setrlimit only reads the struct we pass, which lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Redis's strerror text for an OS error (without Rust's " (os error N)").
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Make room for `maxclients` connections; lowers `maxclients` when the OS will not.
/// Returns Redis's message when the limit is too low to start at all.
pub fn adjust(srv: &Server) -> Result<(), String> {
    let maxclients = srv.config.get_i64("maxclients").max(1) as u64;
    let maxfiles = maxclients + RESERVED_FDS;
    let set_maxclients = |n: u64| {
        let _ = srv.config.set("maxclients", &[n.to_string()]);
    };
    let old = match get_nofile() {
        Ok(rl) => rl.rlim_cur,
        Err(e) => {
            crate::log::warning(&format!(
                "Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.",
                strerror(&e)
            ));
            set_maxclients(1024 - RESERVED_FDS);
            return Ok(());
        }
    };
    if old >= maxfiles {
        return Ok(());
    }
    let mut best = maxfiles;
    let mut error = None;
    while best > old {
        match set_nofile(best) {
            Ok(()) => break,
            Err(e) => error = Some(e),
        }
        if best < DECREMENT {
            best = old;
            break;
        }
        best -= DECREMENT;
    }
    let best = best.max(old);
    if best >= maxfiles {
        crate::log::notice(&format!(
            "Increased maximum number of open files to {maxfiles} (it was originally set to {old})."
        ));
        return Ok(());
    }
    if best <= RESERVED_FDS {
        return Err(format!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {maxfiles}. Exiting."
        ));
    }
    let reduced = best - RESERVED_FDS;
    set_maxclients(reduced);
    let why = error.map(|e| strerror(&e)).unwrap_or_default();
    crate::log::warning(&format!(
        "You requested maxclients of {maxclients} requiring at least {maxfiles} max file descriptors."
    ));
    crate::log::warning(&format!(
        "Server can't set maximum open files to {maxfiles} because of OS error: {why}."
    ));
    crate::log::warning(&format!(
        "Current maximum open files is {best}. maxclients has been reduced to {reduced} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    ));
    Ok(())
}
