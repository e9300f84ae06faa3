//! SLOWLOG GET / LEN / RESET / HELP.

use super::help::{reply_help, subcommand_syntax_error};
use super::{Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("slowlog|get", get),
    ("slowlog|len", len),
    ("slowlog|reset", reset),
    ("slowlog|help", help),
];

fn get(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    let log = &ctx.srv.stats.slowlog;
    let count = match argv.get(2) {
        None => 10,
        Some(a) => match super::args::int(a) {
            Ok(-1) => usize::MAX,
            Ok(n) if n >= 0 => n as usize,
            _ => {
                return ctx
                    .out
                    .error("ERR count should be greater than or equal to -1")
            }
        },
    };
    let out = &mut *ctx.out;
    log.with_newest(count, |entries| {
        let entries: Vec<_> = entries.collect();
        out.array(entries.len());
        for e in entries {
            out.array(6);
            out.int(e.id as i64);
            out.int(e.time);
            out.int(e.duration_us as i64);
            out.bulk_array(e.argv.iter());
            out.bulk(e.peer.as_bytes());
            out.bulk(&e.name);
        }
    });
}

fn len(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(ctx.srv.stats.slowlog.len() as i64);
}

fn reset(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.srv.stats.slowlog.reset();
    ctx.out.ok();
}

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
}
