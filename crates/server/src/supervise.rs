//! How the process lives under its operator: `daemonize`, `supervised` (systemd's
//! readiness notifications), the `pidfile` a daemon writes, and `oom-score-adj`, as
//! Redis's daemonize, redisIsSupervised, redisCommunicateSystemd and setOOMScoreAdj.

use crate::config::Config;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};

/// The pid file a daemon writes when `pidfile` is not set (Redis's default).
pub const DEFAULT_PID_FILE: &str = "/var/run/redis.pid";

/// systemd supervision is on: readiness and stopping are reported.
static SYSTEMD: AtomicBool = AtomicBool::new(false);

/// Redis's redisIsSupervised: `supervised systemd` (or `auto` with NOTIFY_SOCKET set)
/// reports to systemd; `upstart` (or `auto` with UPSTART_JOB) stops itself with SIGSTOP
/// so upstart sees it started. True when supervised (the process then stays in the
/// foreground even with `daemonize yes`).
pub fn start_supervision(cfg: &Config) -> bool {
    let mut mode = cfg.get("supervised");
    if mode == "auto" {
        if std::env::var_os("UPSTART_JOB").is_some() {
            crate::log::at(
                crate::log::level_of("verbose"),
                "Upstart supervision detected.",
            );
            mode = "upstart".into();
        } else if std::env::var_os("NOTIFY_SOCKET").is_some() {
            crate::log::at(
                crate::log::level_of("verbose"),
                "Systemd supervision detected.",
            );
            mode = "systemd".into();
        }
    }
    match mode.as_str() {
        "upstart" => {
            if std::env::var_os("UPSTART_JOB").is_none() {
                crate::log::warning("upstart supervision requested, but UPSTART_JOB not found!");
                return false;
            }
            crate::log::notice("supervised by upstart, will stop to signal readiness.");
            // SAFETY: raise takes a signal number; SIGSTOP stops the process until
            // upstart continues it.
            unsafe { libc::raise(libc::SIGSTOP) };
            std::env::remove_var("UPSTART_JOB");
            true
        }
        "systemd" => {
            if notify_systemd("STATUS=Redis is loading...\n") <= 0 {
                return false;
            }
            SYSTEMD.store(true, Relaxed);
            crate::log::notice("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.");
            true
        }
        _ => false,
    }
}

/// Send `msg` to systemd's NOTIFY_SOCKET (a path, or an abstract name after `@`).
/// Returns 1 when sent, 0 without a socket, -1 on error (logged as Redis logs them).
fn notify_systemd(msg: &str) -> i32 {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        crate::log::warning("systemd supervision error: NOTIFY_SOCKET not found!");
        return 0;
    };
    let sent = (|| -> std::io::Result<()> {
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let sock = UnixDatagram::unbound()?;
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        let addr = match bytes.strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name)?
            }
            None => SocketAddr::from_pathname(std::path::Path::new(&path))?,
        };
        sock.send_to_addr(msg.as_bytes(), &addr)?;
        Ok(())
    })();
    match sent {
        Ok(()) => 1,
        Err(e) => {
            crate::log::warning(&format!("systemd supervision error: sd_notify: {e}"));
            -1
        }
    }
}

/// The server is ready (after loading): tell systemd.
pub fn ready(replica_syncing: bool) {
    if !SYSTEMD.load(Relaxed) {
        return;
    }
    if replica_syncing {
        notify_systemd("STATUS=Ready to accept connections in read-only mode. Waiting for MASTER <-> REPLICA sync\n");
    } else {
        notify_systemd("STATUS=Ready to accept connections\n");
    }
    notify_systemd("READY=1\n");
}

/// The server begins to shut down: tell systemd.
pub fn stopping() {
    if SYSTEMD.load(Relaxed) {
        notify_systemd("STOPPING=1\n");
    }
}

/// Redis's daemonize: the parent exits, the child leaves the terminal's session and
/// points stdin, stdout and stderr at /dev/null. Call before any thread is started.
pub fn daemonize() {
    // SAFETY: called from main before any other thread exists, so the child is a full
    // copy of the only thread; fork, setsid, open, dup2 and close take plain values and
    // a NUL-terminated path.
    unsafe {
        match libc::fork() {
            -1 => {
                crate::log::warning(&format!(
                    "Can't daemonize: fork: {}",
                    std::io::Error::last_os_error()
                ));
                std::process::exit(1);
            }
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0);
        if fd != -1 {
            libc::dup2(fd, libc::STDIN_FILENO);
            libc::dup2(fd, libc::STDOUT_FILENO);
            libc::dup2(fd, libc::STDERR_FILENO);
            if fd > libc::STDERR_FILENO {
                libc::close(fd);
            }
        }
    }
}

/// The oom_score_adj the process had before `oom-score-adj` first changed it, or
/// `i64::MIN` while it has not.
static OOM_BASE: AtomicI64 = AtomicI64::new(i64::MIN);

const OOM_FILE: &str = "/proc/self/oom_score_adj";

/// setOOMScoreAdj for this process's class (master or replica; Skein forks no
/// children): `oom-score-adj-values`' entry, plus the original value when `relative`
/// (`yes`); back to the original value when turned `no`. False when the file could not
/// be read or written (logged; CONFIG SET then fails).
pub fn set_oom_score_adj(cfg: &Config, replica: bool) -> bool {
    let mode = cfg.get("oom-score-adj");
    let val = if mode != "no" {
        if OOM_BASE.load(Relaxed) == i64::MIN {
            match std::fs::read_to_string(OOM_FILE) {
                Ok(base) => {
                    OOM_BASE.store(crate::cmd::args::c_atoi(base.trim().as_bytes()), Relaxed)
                }
                Err(e) => {
                    crate::log::warning(&format!("Unable to read oom_score_adj: {e}"));
                    return false;
                }
            }
        }
        let values = cfg.get("oom-score-adj-values");
        let class = usize::from(replica);
        let mut v: i64 = values
            .split(' ')
            .nth(class)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if mode == "yes" || mode == "relative" {
            v += OOM_BASE.load(Relaxed);
        }
        v.clamp(-1000, 1000)
    } else {
        let base = OOM_BASE.swap(i64::MIN, Relaxed);
        if base == i64::MIN {
            return true;
        }
        base
    };
    match std::fs::write(OOM_FILE, format!("{val}\n")) {
        Ok(()) => true,
        Err(e) => {
            crate::log::warning(&format!("Unable to write oom_score_adj: {e}"));
            false
        }
    }
}

/// The role `oom-score-adj` was last applied for (0: not yet, 1: master, 2: replica).
static OOM_ROLE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// From the cron: apply `oom-score-adj` at start and whenever the role changes
/// (REPLICAOF, FAILOVER).
pub fn oom_follow_role(srv: &crate::server::Server) {
    let replica = srv.repl.link.is_replica();
    let role = 1 + u8::from(replica);
    if OOM_ROLE.swap(role, Relaxed) != role && srv.config.get("oom-score-adj") != "no" {
        set_oom_score_adj(&srv.config, replica);
    }
}
