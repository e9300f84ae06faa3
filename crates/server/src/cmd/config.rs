//! CONFIG GET, SET, RESETSTAT, REWRITE, HELP.

use super::help::reply_help;
use super::{Ctx, Handler};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|resetstat", config_resetstat),
    ("config|rewrite", config_rewrite),
    ("config|help", config_help),
];

fn config_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
}

fn config_get(ctx: &mut Ctx, argv: &[&[u8]]) {
    let pairs = ctx.srv.config.get_matching(&argv[2..]);
    ctx.out.map(pairs.len());
    for (k, v) in pairs {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}

fn config_set(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() % 2 == 1 {
        return ctx.out.error(super::args::SYNTAX_ERR);
    }
    let pairs: Vec<(&[u8], &[u8])> = argv[2..].chunks(2).map(|p| (p[0], p[1])).collect();
    // As Redis: values of sensitive options (requirepass, masterauth...) never reach the
    // slow log or MONITOR.
    for (i, (name, _)) in pairs.iter().enumerate() {
        let value_at = 3 + 2 * i;
        let sensitive = crate::config::find_option(&String::from_utf8_lossy(name))
            .is_some_and(|o| o.flags & crate::config::table::SENSITIVE != 0);
        if sensitive && value_at < 64 {
            ctx.client.redacted |= 1 << value_at;
        }
    }
    let local = ctx.client.info.is_local();
    let config = &ctx.srv.config;
    let before = crate::metrics::OPTIONS.map(|o| config.get(o));
    let aof_was = config.get_bool("appendonly");
    let maxclients_was = config.get_i64("maxclients");
    let tls_before = crate::net::tls::OPTIONS.map(|o| config.get(o));
    if let Err(e) = config.config_set(&pairs, local) {
        return ctx.out.error_bytes(&e);
    }
    if let Err(e) = tls_changed(ctx, &pairs, tls_before) {
        return ctx.out.error(&e);
    }
    let oom_names: [&[u8]; 2] = [b"oom-score-adj", b"oom-score-adj-values"];
    if pairs
        .iter()
        .any(|(n, _)| oom_names.iter().any(|o| n.eq_ignore_ascii_case(o)))
        && !crate::supervise::set_oom_score_adj(config, ctx.srv.repl.link.is_replica())
    {
        return ctx.out.error("ERR CONFIG SET failed (possibly related to argument 'oom-score-adj') - Failed to set current oom_score_adj. Check server logs.");
    }
    if pairs
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case(b"requirepass"))
    {
        // updateRequirePass: the default user's password follows.
        let pass = config.get("requirepass");
        ctx.srv.acl.set_default_password(&ctx.srv.commands, &pass);
    }
    if let Err(e) = maxclients_changed(ctx, maxclients_was) {
        return ctx.out.error(&e);
    }
    // The metrics endpoint moves at once; if it cannot, its options keep their values.
    if let Err(e) = crate::metrics::reconfigure(ctx.srv) {
        for (name, value) in crate::metrics::OPTIONS.iter().zip(before) {
            let _ = config.set(name, &[value]);
        }
        let arg = pairs
            .iter()
            .map(|(name, _)| String::from_utf8_lossy(name).to_lowercase())
            .find(|n| crate::metrics::OPTIONS.contains(&n.as_str()))
            .unwrap_or_default();
        return ctx.out.error(&format!(
            "ERR CONFIG SET failed (possibly related to argument '{arg}') - {e}"
        ));
    }
    if let Err(e) = aof_changed(ctx, aof_was) {
        // updateAppendonly failed: the old value stays.
        let _ = config.set("appendonly", &["no".to_string()]);
        return ctx.out.error(&e);
    }
    ctx.out.ok()
}

/// applyTlsCfg / applyTLSPort: certificates and the rest are loaded again (even when a
/// file's name did not change); if they cannot be, the TLS options keep their old values
/// and the old context stays.
fn tls_changed(
    ctx: &mut Ctx,
    pairs: &[(&[u8], &[u8])],
    before: [String; crate::net::tls::OPTIONS.len()],
) -> Result<(), String> {
    let names: Vec<String> = pairs
        .iter()
        .map(|(n, _)| String::from_utf8_lossy(n).to_lowercase())
        .collect();
    let Err(e) = crate::net::tls::config_changed(ctx.srv, &names) else {
        return Ok(());
    };
    for (name, value) in crate::net::tls::OPTIONS.iter().zip(before) {
        let _ = ctx.srv.config.set(name, &[value]);
    }
    let arg = names
        .iter()
        .find(|n| crate::net::tls::OPTIONS.contains(&n.as_str()))
        .cloned()
        .unwrap_or_default();
    Err(format!(
        "ERR CONFIG SET failed (possibly related to argument '{arg}') - {e}"
    ))
}

/// Redis's updateMaxclients: a raised `maxclients` raises the open-file limit; when the
/// OS grants less, the old value stays and the error names what it would allow.
fn maxclients_changed(ctx: &mut Ctx, was: i64) -> Result<(), String> {
    let config = &ctx.srv.config;
    let wanted = config.get_i64("maxclients");
    if wanted == was {
        return Ok(());
    }
    let _ = crate::net::fdlimit::adjust(ctx.srv);
    let got = config.get_i64("maxclients");
    if got == wanted {
        return Ok(());
    }
    let _ = config.set("maxclients", &[was.to_string()]);
    Err(format!(
        "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with {got}"
    ))
}

/// updateAppendonly / appendfsync: start or stop the AOF when `appendonly` changed.
fn aof_changed(ctx: &mut Ctx, was: bool) -> Result<(), String> {
    use crate::persist::aof;
    let srv = ctx.srv;
    aof::config_changed(srv);
    let now = srv.config.get_bool("appendonly");
    let state = srv.persist.aof.state();
    if !now && (state != aof::OFF || srv.persist.aof.rw.scheduled.load(Relaxed)) {
        srv.persist.aof.rw.scheduled.store(false, Relaxed);
        aof::stop(srv);
    } else if now && !was && state == aof::OFF {
        if ctx.exec_ops.is_some() {
            srv.persist.aof.rw.scheduled.store(true, Relaxed);
            crate::log::warning("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
        } else if aof::rewrite::turn_on(srv).is_err() {
            return Err("ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.".into());
        }
    }
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx, _argv: &[&[u8]]) {
    crate::stats::reset_stats(ctx.srv);
    ctx.out.ok();
}

fn config_rewrite(ctx: &mut Ctx, _argv: &[&[u8]]) {
    // rewriteConfigUserOption: the users as the ACL now has them.
    let lines: Vec<String> = ctx
        .srv
        .acl
        .all()
        .iter()
        .map(|u| String::from_utf8_lossy(&crate::acl::file::user_line(ctx.srv, u)).into_owned())
        .collect();
    *ctx.srv.config.users.lock() = lines;
    match crate::config::rewrite::rewrite(&ctx.srv.config) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&e),
    }
}
