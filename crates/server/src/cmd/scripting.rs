//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (LOAD, EXISTS, FLUSH, HELP). The script
//! cache, the Lua states and the run itself are `crate::script`.

use super::args::{self, is};
use super::help::{reply_help, subcommand_syntax_error};
use super::{Ctx, Handler};
use crate::script::{cache::Script, run, state};
use std::sync::Arc;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("eval", eval),
    ("evalsha", evalsha),
    ("eval_ro", eval_ro),
    ("evalsha_ro", evalsha_ro),
    ("script|load", script_load),
    ("script|exists", script_exists),
    ("script|flush", script_flush),
    ("script|help", script_help),
    ("script|kill", script_kill),
    ("script|debug", crate::script::ldb::script_debug),
];

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

fn eval(ctx: &mut Ctx, argv: &[&[u8]]) {
    eval_generic(ctx, argv, false, false);
}

fn eval_ro(ctx: &mut Ctx, argv: &[&[u8]]) {
    eval_generic(ctx, argv, false, true);
}

fn evalsha(ctx: &mut Ctx, argv: &[&[u8]]) {
    eval_generic(ctx, argv, true, false);
}

fn evalsha_ro(ctx: &mut Ctx, argv: &[&[u8]]) {
    eval_generic(ctx, argv, true, true);
}

/// Redis's evalGenericCommand: `argv` is `EVAL script|sha numkeys key... arg...`.
fn eval_generic(ctx: &mut Ctx, argv: &[&[u8]], by_sha: bool, ro: bool) {
    super::client::feed_monitors_first(ctx, argv);
    if by_sha && argv[1].len() != 40 {
        return ctx.out.error(NOSCRIPT);
    }
    // With debugging on (only inside a debugged EXEC gets here): EVALSHA is refused,
    // EVAL is the session's script.
    if crate::script::ldb::session::active() {
        if by_sha {
            return ctx
                .out
                .error("ERR Please use EVAL instead of EVALSHA for debugging");
        }
        crate::script::ldb::session::note_eval(argv[1]);
    }
    let numkeys = match args::int(argv[2]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let split = match run::keys_end(argv, numkeys) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(e),
    };
    let script = if by_sha {
        match ctx.srv.scripts.get(argv[1]) {
            Some(s) => s,
            None => return ctx.out.error(NOSCRIPT),
        }
    } else {
        match load(ctx, argv[1]) {
            Ok(s) => s,
            Err(e) => return ctx.out.error_bytes(&e),
        }
    };
    let target = run::Target::Eval(&script);
    run::run(ctx, &target, &argv[3..split], &argv[split..], ro);
}

/// The cached script with this body, compiled on this worker first when new.
fn load(ctx: &mut Ctx, body: &[u8]) -> Result<Arc<Script>, Vec<u8>> {
    let srv = ctx.srv;
    srv.scripts.get_or_add(body, |script| {
        state::with(srv, |st| st.function(script).map(|_| ()))?
    })
}

fn script_load(ctx: &mut Ctx, argv: &[&[u8]]) {
    match load(ctx, argv[2]) {
        Ok(s) => ctx.out.bulk(&s.sha),
        Err(e) => ctx.out.error_bytes(&e),
    }
}

fn script_exists(ctx: &mut Ctx, argv: &[&[u8]]) {
    ctx.out.array(argv.len() - 2);
    for sha in &argv[2..] {
        let known = ctx.srv.scripts.get(sha).is_some();
        ctx.out.int(known as i64);
    }
}

fn script_flush(ctx: &mut Ctx, argv: &[&[u8]]) {
    let background = match argv.len() {
        2 => ctx.srv.config.get_bool("lazyfree-lazy-user-flush"),
        3 if is(argv[2], "sync") => false,
        3 if is(argv[2], "async") => true,
        _ => {
            return ctx
                .out
                .error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
        }
    };
    ctx.srv.scripts.flush(background);
    ctx.out.ok();
}

fn script_kill(ctx: &mut Ctx, _argv: &[&[u8]]) {
    match ctx.srv.scripts.busy.kill(true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(e),
    }
}

fn script_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() != 2 {
        return subcommand_syntax_error(ctx, argv);
    }
    reply_help(
        ctx,
        argv[0],
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
}
