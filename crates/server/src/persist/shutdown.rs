//! Saving on the way out (prepareForShutdown / finishShutdown): SHUTDOWN [NOSAVE|SAVE]
//! [NOW] [FORCE], and SIGTERM/SIGINT, which the cron turns into a shutdown.

use super::{rules, save};
use crate::log;
use crate::server::Server;
use engine::{Changes, Locked, Plan};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// How SHUTDOWN was asked for.
#[derive(Clone, Copy, Default)]
pub struct Flags {
    pub save: bool,
    pub nosave: bool,
    pub force: bool,
    /// SHUTDOWN NOW: no waiting for replicas.
    pub now: bool,
}

/// Save if asked or if `save` rules exist (unless NOSAVE), with every shard held by
/// `keys`. True when the server may exit; false (logged) when the save failed without
/// FORCE: the server keeps running.
pub fn finish(srv: &Server, keys: &mut Locked<'_>, mut flags: Flags) -> bool {
    if srv.persist.is_loading() {
        flags.save = false;
        flags.nosave = true;
    }
    log::warning("User requested shutdown...");
    if !flags.now && !srv.persist.is_loading() {
        wait_for_replicas(srv);
    }
    if srv.persist.bgsave_in_progress() {
        log::warning("There is a child saving an .rdb. Killing it!");
        save::kill_bgsave(srv);
    }
    super::aof::on_shutdown(srv);
    let rules = !rules::parse(&srv.config.get("save")).is_empty();
    if (rules && !flags.nosave) || flags.save {
        log::notice("Saving the final RDB snapshot before exiting.");
        if save::save_held(srv, keys, 0).is_err() {
            if flags.force {
                log::warning("Error trying to save the DB. Exit anyway.");
            } else {
                log::warning("Error trying to save the DB, can't exit.");
                log::warning(
                    "Errors trying to shut down the server. Check the logs for more information.",
                );
                return false;
            }
        }
    }
    true
}

/// Redis 7's `shutdown-timeout`: with writes stopped (every shard is held), wait up to that
/// many seconds for the connected replicas to acknowledge the whole stream, asking them
/// with REPLCONF GETACK, so a failover loses no acknowledged write.
fn wait_for_replicas(srv: &Server) {
    let timeout = srv.config.get_i64("shutdown-timeout");
    let replicas = srv.repl.replicas();
    if timeout <= 0 || replicas.is_empty() {
        return;
    }
    log::notice("Waiting for replicas before shutting down.");
    let target = crate::repl::offset(srv);
    crate::repl::request_acks(srv);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(timeout as u64);
    loop {
        let synced = srv.repl.acked(target) as usize;
        // A replica whose link is gone is not waited for.
        let live = replicas
            .iter()
            .filter(|r| !r.gone.load(std::sync::atomic::Ordering::Relaxed))
            .count();
        if synced >= live || std::time::Instant::now() >= deadline {
            log::notice(&format!(
                "{synced} of {} replicas are in sync when shutting down.",
                replicas.len()
            ));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One flag per caught signal, raised by the signal handler.
static CAUGHT: OnceLock<Vec<(i32, Arc<AtomicBool>)>> = OnceLock::new();

/// Catch SIGTERM and SIGINT: the cron shuts the server down (saving as SHUTDOWN does).
pub fn install_signal_handlers() {
    let flags = [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT]
        .into_iter()
        .map(|sig| {
            let flag = Arc::new(AtomicBool::new(false));
            let _ = signal_hook::flag::register(sig, flag.clone());
            (sig, flag)
        })
        .collect();
    let _ = CAUGHT.set(flags);
}

/// A signal was received and its shutdown not yet carried out.
static PENDING: AtomicBool = AtomicBool::new(false);

/// Is a signalled shutdown waiting (for busy scripts to end)?
pub fn pending() -> bool {
    PENDING.load(Relaxed)
}

/// Called by the cron: act on a received signal. As in Redis, whose serverCron does not
/// run while a script is busy, the shutdown waits while a script runs past
/// `busy-reply-threshold`: clients are still served (`-BUSY`, SCRIPT KILL, SHUTDOWN
/// NOSAVE), and the server shuts down once the script has ended or been killed.
pub fn on_signal(srv: &Server) {
    if let Some(caught) = CAUGHT.get() {
        if let Some((sig, _)) = caught.iter().find(|(_, f)| f.swap(false, Relaxed)) {
            if !srv.is_shutting_down() {
                log::warning(if srv.persist.is_loading() {
                    "Received shutdown signal during loading, scheduling shutdown."
                } else if *sig == signal_hook::consts::SIGINT {
                    "Received SIGINT scheduling shutdown..."
                } else {
                    "Received SIGTERM scheduling shutdown..."
                });
                PENDING.store(true, Relaxed);
            }
        }
    }
    if !PENDING.load(Relaxed) || srv.is_shutting_down() || srv.scripts.busy.active() {
        return;
    }
    PENDING.store(false, Relaxed);
    let mut changes = Changes::default();
    let mut plan = Plan::new();
    plan.all();
    let mut keys = srv.keyspace.lock(&mut plan, 0, &mut changes);
    if finish(srv, &mut keys, Flags::default()) {
        crate::supervise::stopping();
        srv.shutting_down.store(true, Relaxed);
    }
}
