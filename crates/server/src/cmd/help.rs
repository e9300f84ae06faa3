//! Replies shared by container commands: `<CMD> HELP` and the subcommand syntax error.

use super::args::{c_str, c_str_max, error_text};
use super::Ctx;

/// Redis's addReplyHelp: a header naming the command, `lines`, then the HELP entry.
pub fn reply_help(ctx: &mut Ctx, argv0: &[u8], lines: &[&str]) {
    let name = String::from_utf8_lossy(argv0).to_uppercase();
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(&format!(
        "{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.out.simple(l);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}

/// Redis's addReplySubcommandSyntaxError: the subcommand's bytes as `%.128s` prints them.
pub fn subcommand_syntax_error(ctx: &mut Ctx, argv: &[&[u8]]) {
    let name = c_str(argv[0]).to_ascii_uppercase();
    let sub = c_str_max(argv.get(1).copied().unwrap_or(b""), 128);
    ctx.out.error_bytes(&error_text(&[
        b"ERR unknown subcommand or wrong number of arguments for '",
        sub,
        b"'. Try ",
        &name,
        b" HELP.",
    ]));
}
