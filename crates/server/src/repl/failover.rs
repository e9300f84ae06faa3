//! FAILOVER's state machine, the master's side (Redis 7.0's coordinated failover).
//!
//! FAILOVER pauses writes and enters `WAIT_FOR_SYNC`; the feeder thread checks, every
//! millisecond ([`check`]), whether the target (or, with no TO, any replica) acknowledged
//! the whole stream. Once one has, or once the TIMEOUT passes with FORCE, the state becomes
//! `IN_PROGRESS` and this server follows the target ([`super::link::follow`], which
//! offers our own ID and offset): its link sends `PSYNC <our replid> <our offset + 1>
//! FAILOVER`, which makes the target a master, and the answer (+CONTINUE or +FULLRESYNC:
//! [`finished`]; anything else: [`abort`]) ends the failover and the write pause. A
//! TIMEOUT without FORCE, or FAILOVER ABORT, ends it where it is (a server already
//! following the target is a master again).

use crate::log;
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The states INFO's `master_failover_state` names.
pub const NONE: u8 = 0;
pub const WAIT_FOR_SYNC: u8 = 1;
pub const IN_PROGRESS: u8 = 2;

#[derive(Default)]
pub struct Failover {
    state: AtomicU8,
    plan: Mutex<Plan>,
}

/// What FAILOVER asked for.
#[derive(Default, Clone)]
pub struct Plan {
    /// The replica to fail over to (TO host port, or the first one caught up).
    pub target: Option<(String, i64)>,
    /// Unix ms after which it gives up (or, with FORCE, fails over anyway); 0: never.
    pub end_ms: i64,
    pub force: bool,
}

impl Failover {
    #[inline]
    pub fn state(&self) -> u8 {
        self.state.load(Relaxed)
    }

    pub fn in_progress(&self) -> bool {
        self.state() == IN_PROGRESS
    }

    /// INFO's `master_failover_state`.
    pub fn state_name(&self) -> &'static str {
        match self.state() {
            NONE => "no-failover",
            IN_PROGRESS => "failover-in-progress",
            _ => "waiting-for-sync",
        }
    }
}

/// FAILOVER's checks (failoverCommand's, in its order, after the syntax), then wait for
/// a replica to catch up, writes paused. Err: the error to answer.
pub fn begin(srv: &Server, plan: Plan) -> Result<(), &'static str> {
    let f = &srv.repl.failover;
    let mut current = f.plan.lock();
    if f.state() != NONE {
        return Err("ERR FAILOVER already in progress.");
    }
    if srv.repl.link.is_replica() {
        return Err("ERR FAILOVER is not valid when server is a replica.");
    }
    let replicas = srv.repl.replicas();
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.");
    }
    if plan.force && (plan.end_ms == 0 || plan.target.is_none()) {
        return Err(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        );
    }
    match &plan.target {
        Some((host, port)) => {
            let Some(r) = replicas.iter().find(|r| is_target(r, host, *port)) else {
                return Err("ERR FAILOVER target HOST and PORT is not a replica.");
            };
            if r.state.load(Relaxed) != super::ONLINE {
                return Err("ERR FAILOVER target replica is not online.");
            }
            log::notice(&format!("FAILOVER requested to {host}:{port}."));
        }
        None => log::notice("FAILOVER requested to any replica."),
    }
    *current = plan;
    srv.clients.pause.failover(true);
    f.state.store(WAIT_FOR_SYNC, Relaxed);
    drop(current);
    srv.propagation.wake_feeder();
    Ok(())
}

/// The feeder's check while waiting (updateFailoverStatus): the timeout, then whether a
/// replica has caught up. Returns whether a failover is under way.
pub fn check(srv: &std::sync::Arc<Server>) -> bool {
    let f = &srv.repl.failover;
    match f.state() {
        NONE => return false,
        IN_PROGRESS => return true,
        _ => {}
    }
    // Transitions happen under the plan's lock (FAILOVER ABORT may run meanwhile).
    let mut plan = f.plan.lock();
    if f.state() != WAIT_FOR_SYNC {
        return f.state() != NONE;
    }
    if plan.end_ms != 0 && plan.end_ms <= engine::wall_ms() {
        match plan.target.clone() {
            Some((host, port)) if plan.force => {
                log::notice(&format!(
                    "FAILOVER to {host}:{port} time out exceeded, failing over."
                ));
                go(srv, host, port);
            }
            _ => {
                drop(plan);
                abort(srv, "Replica never caught up before timeout");
            }
        }
        return true;
    }
    let offset = super::offset(srv);
    let replicas = srv.repl.replicas();
    let caught_up = match &plan.target {
        Some((host, port)) => replicas
            .iter()
            .find(|r| is_target(r, host, *port))
            .is_some_and(|r| r.ack.load(Relaxed) == offset),
        None => match replicas.iter().find(|r| r.ack.load(Relaxed) == offset) {
            Some(r) => {
                plan.target = Some((r.ip.clone(), i64::from(r.port)));
                true
            }
            None => false,
        },
    };
    if let (true, Some((host, port))) = (caught_up, plan.target.clone()) {
        log::notice(&format!(
            "Failover target {host}:{port} is synced, failing over."
        ));
        go(srv, host, port);
    }
    true
}

/// findReplica's test: the address it announced (or connected from), case-insensitively,
/// and its listening port.
pub fn is_target(r: &super::Replica, host: &str, port: i64) -> bool {
    r.ip.eq_ignore_ascii_case(host) && i64::from(r.port) == port
}

/// Follow the target, which our PSYNC FAILOVER makes a master.
fn go(srv: &std::sync::Arc<Server>, host: String, port: i64) {
    srv.repl.failover.state.store(IN_PROGRESS, Relaxed);
    // The target was a replica's address: its port fits.
    super::link::follow(srv, host, port as u16);
}

/// The target answered our PSYNC FAILOVER with a sync: the failover is done.
pub fn finished(srv: &Server) {
    let f = &srv.repl.failover;
    let plan = f.plan.lock();
    if f.in_progress() {
        clear(srv, plan);
    }
}

/// abortFailover: end a failover under way where it is; a server already following the
/// target is a master again.
pub fn abort(srv: &Server, why: &str) {
    let f = &srv.repl.failover;
    let plan = f.plan.lock();
    if f.state() == NONE {
        return;
    }
    match &plan.target {
        Some((host, port)) => {
            log::notice(&format!("FAILOVER to {host}:{port} aborted: {why}"));
        }
        None => log::notice(&format!("FAILOVER to any replica aborted: {why}")),
    }
    if f.in_progress() {
        super::link::promote(srv);
    }
    clear(srv, plan);
}

/// clearFailoverState: no failover, writes go on.
fn clear(srv: &Server, mut plan: parking_lot::MutexGuard<'_, Plan>) {
    *plan = Plan::default();
    srv.repl.failover.state.store(NONE, Relaxed);
    drop(plan);
    srv.clients.pause.failover(false);
    srv.clients.wake_all_workers();
}
