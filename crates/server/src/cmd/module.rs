//! MODULE on a server that loads no modules: LIST is empty, LOAD and LOADEX fail as Redis
//! fails for a file it cannot load (the reason goes to the log, as Redis's does), UNLOAD
//! finds no such module. LOAD, LOADEX and UNLOAD are PROTECTED commands
//! (`enable-module-command`), checked by the dispatcher.

use super::help::reply_help;
use super::{Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("module|help", help),
    ("module|list", list),
    ("module|load", load),
    ("module|loadex", load),
    ("module|unload", unload),
];

const HELP: &[&str] = &[
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
];

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(ctx, argv[0], HELP);
}

fn list(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.array(0);
}

/// MODULE LOAD / LOADEX path ...: Skein has no module API, so no file loads; the log says
/// why, as Redis logs dlopen's reason.
fn load(ctx: &mut Ctx, argv: &[&[u8]]) {
    let path = String::from_utf8_lossy(argv[2]);
    crate::log::warning(&format!(
        "Module {path} failed to load: this server (Skein) does not load Redis modules"
    ));
    ctx.out
        .error("ERR Error loading the extension. Please check the server logs.");
}

fn unload(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out
        .error("ERR Error unloading module: no such module with that name");
}
