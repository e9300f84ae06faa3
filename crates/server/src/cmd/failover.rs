//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds] (Redis 7.0's
//! coordinated failover; the state machine is `crate::repl::failover`), and the target's
//! side: PSYNC ... FAILOVER makes a replica a master.

use super::args::{self, is, SYNTAX_ERR};
use super::{Ctx, Handler};
use crate::repl::failover::{self, Plan};

pub const COMMANDS: &[(&str, Handler)] = &[("failover", failover_cmd)];

/// failoverCommand: ABORT alone, or the options, checked as Redis checks them.
fn failover_cmd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let srv = ctx.srv;
    if srv.config.get_bool("cluster-enabled") {
        return ctx.out.error(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        );
    }
    if argv.len() == 2 && is(argv[1], "abort") {
        if srv.repl.failover.state() == failover::NONE {
            return ctx.out.error("ERR No failover in progress.");
        }
        failover::abort(srv, "Failover manually aborted");
        return ctx.out.ok();
    }
    let plan = match parse(argv) {
        Ok(plan) => plan,
        Err(e) => return ctx.out.error(e),
    };
    match failover::begin(srv, plan) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(e),
    }
}

/// The options: TIMEOUT ms (> 0), TO host port, FORCE, each at most once.
fn parse(argv: &[&[u8]]) -> Result<Plan, &'static str> {
    let mut plan = Plan::default();
    let mut timeout = 0i64;
    let mut j = 1;
    while j < argv.len() {
        let opt = argv[j];
        if is(opt, "timeout") && j + 1 < argv.len() && timeout == 0 {
            timeout = args::int(argv[j + 1])?;
            if timeout <= 0 {
                return Err("ERR FAILOVER timeout must be greater than 0");
            }
            j += 1;
        } else if is(opt, "to") && j + 2 < argv.len() && plan.target.is_none() {
            let port = args::int(argv[j + 2])?;
            let host = String::from_utf8_lossy(args::c_str(argv[j + 1])).into_owned();
            plan.target = Some((host, port));
            j += 2;
        } else if is(opt, "force") && !plan.force {
            plan.force = true;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    if timeout > 0 {
        plan.end_ms = engine::wall_ms().saturating_add(timeout);
    }
    Ok(plan)
}

/// PSYNC <replid> <offset> FAILOVER, from our master failing over to us: with our
/// master's replication ID, this server becomes a master (and the PSYNC then goes on as
/// any replica's). False once an error is answered.
pub fn psync_failover(ctx: &mut Ctx, argv: &[&[u8]]) -> bool {
    let id = String::from_utf8_lossy(args::c_str(argv[1])).into_owned();
    crate::log::warning(&format!("Failover request received for replid {id}."));
    let link = &ctx.srv.repl.link;
    if !link.is_replica() {
        ctx.out
            .error("ERR PSYNC FAILOVER can't be sent to a master.");
        return false;
    }
    let ours = link.master_replid.lock().clone();
    if ours.is_empty() || !ours.eq_ignore_ascii_case(&id) {
        ctx.out
            .error("ERR PSYNC FAILOVER replid must match my replid.");
        return false;
    }
    crate::repl::link::promote(ctx.srv);
    let me = ctx
        .client
        .info
        .describe(engine::now_ms(), |_| String::new());
    crate::log::notice(&format!(
        "MASTER MODE enabled (failover request from '{me}')"
    ));
    true
}
