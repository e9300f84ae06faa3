//! Replies shared by container commands: `<CMD> HELP` and the subcommand syntax error.

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

/// Redis's addReplySubcommandSyntaxError.
pub fn subcommand_syntax_error(ctx: &mut Ctx, argv: &[&[u8]]) {
    let name = String::from_utf8_lossy(argv[0]).to_uppercase();
    let sub = argv.get(1).copied().unwrap_or(b"");
    let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]);
    ctx.out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {name} HELP."
    ));
}
