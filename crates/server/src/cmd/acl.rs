//! ACL: users and what they may run (the model is `crate::acl`).

use super::args::{self, is};
use super::help::{reply_help, subcommand_syntax_error};
use super::Ctx;
use super::Handler;
use crate::acl::selector::{self, Selector};
use crate::acl::user::User;
use crate::cmd::table::{acl_category_bit, ACL_CATEGORIES};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("acl|cat", cat),
    ("acl|deluser", deluser),
    ("acl|dryrun", dryrun),
    ("acl|genpass", genpass),
    ("acl|getuser", getuser),
    ("acl|help", help),
    ("acl|list", list),
    ("acl|load", load),
    ("acl|log", log),
    ("acl|save", save),
    ("acl|setuser", setuser),
    ("acl|users", users),
    ("acl|whoami", whoami),
];

fn setuser(ctx: &mut Ctx, argv: &[&[u8]]) {
    // Nothing of the user's definition reaches MONITOR or the slow log.
    for j in 2..argv.len().min(64) {
        ctx.client.redacted |= 1 << j;
    }
    let name = argv[2];
    if selector::has_spaces(name) {
        return ctx
            .out
            .error("ERR Usernames can't contain spaces or null characters");
    }
    let all = crate::acl::pubsub_default_all(ctx.srv);
    match ctx
        .srv
        .acl
        .set_user(&ctx.srv.commands, name, &argv[3..], all)
    {
        Ok((old, new)) => {
            if let Some(old) = old {
                kill_pubsub_clients_if_needed(ctx, name, &old, &new);
            }
            ctx.out.ok();
        }
        Err(e) => ctx.out.error_bytes(&e),
    }
}

/// ACLKillPubsubClientsIfNeeded: a change that takes channels away from `name` closes
/// its subscribed clients whose subscriptions the new rules no longer permit.
fn kill_pubsub_clients_if_needed(ctx: &mut Ctx, name: &[u8], old: &User, new: &User) {
    if new.selectors.iter().any(|s| s.allchannels) {
        return;
    }
    let upcoming: Vec<&[u8]> = new
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().map(Vec::as_slice))
        .collect();
    let kept = old
        .selectors
        .iter()
        .all(|s| !s.allchannels && s.channels.iter().all(|c| upcoming.contains(&&c[..])));
    if kept {
        return;
    }
    let permitted = |ch: &[u8], is_pattern: bool| {
        upcoming.iter().any(|p| {
            if is_pattern {
                *p == ch
            } else {
                engine::glob::glob_match(p, ch, false)
            }
        })
    };
    for c in ctx.srv.clients.all() {
        if !crate::acl::authenticated_as(&c, name) {
            continue;
        }
        let kill = {
            let subs = c.pubsub.subs.lock();
            subs.patterns.iter().any(|p| !permitted(p, true))
                || subs.channels.iter().any(|ch| !permitted(ch, false))
                || subs.shard.iter().any(|ch| !permitted(ch, false))
        };
        if kill {
            close_client(ctx, &c);
        }
    }
}

/// Close another client, or the caller once its reply is written.
fn close_client(ctx: &mut Ctx, c: &crate::clients::ClientInfo) {
    if c.id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        ctx.srv.clients.kill(c);
    }
}

fn deluser(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv[2..].iter().any(|n| *n == b"default") {
        return ctx.out.error("ERR The 'default' user cannot be removed");
    }
    let removed = ctx.srv.acl.delete(&argv[2..]);
    for u in &removed {
        // ACLFreeUserAndKillClients.
        for c in ctx.srv.clients.all() {
            if crate::acl::authenticated_as(&c, &u.name) {
                crate::acl::close_client_of_removed_user(ctx.srv, ctx.client, &c);
            }
        }
    }
    ctx.out.int(removed.len() as i64);
}

/// A selector's commands, keys and channels as ACL GETUSER shows them.
fn reply_selector(ctx: &mut Ctx, s: &Selector) {
    ctx.out.bulk(b"commands");
    let rules = crate::acl::describe::command_rules(&ctx.srv.commands, s);
    ctx.out.bulk(&rules);
    ctx.out.bulk(b"keys");
    let keys = if s.allkeys {
        b"~*".to_vec()
    } else {
        joined(&s.patterns, |p, v| p.describe(v))
    };
    ctx.out.bulk(&keys);
    ctx.out.bulk(b"channels");
    let channels = if s.allchannels {
        b"&*".to_vec()
    } else {
        joined(&s.channels, |c, v| {
            v.push(b'&');
            v.extend_from_slice(c);
        })
    };
    ctx.out.bulk(&channels);
}

/// `items` written by `write`, separated by spaces.
fn joined<T>(items: &[T], write: impl Fn(&T, &mut Vec<u8>)) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            v.push(b' ');
        }
        write(item, &mut v);
    }
    v
}

fn getuser(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(slot) = ctx.srv.acl.get(argv[2]) else {
        return ctx.out.null();
    };
    let user = slot.read().clone();
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let flags = user.flag_names();
    ctx.out.set(flags.len());
    for f in flags {
        ctx.out.bulk(f.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(user.passwords.len());
    for p in &user.passwords {
        ctx.out.bulk(p.as_bytes());
    }
    reply_selector(ctx, user.root());
    ctx.out.bulk(b"selectors");
    ctx.out.array(user.selectors.len() - 1);
    for s in &user.selectors[1..] {
        ctx.out.map(3);
        reply_selector(ctx, s);
    }
}

fn list(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let users = ctx.srv.acl.all();
    ctx.out.array(users.len());
    for u in users {
        let line = crate::acl::file::user_line(ctx.srv, &u);
        ctx.out.bulk(&line);
    }
}

fn users(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let users = ctx.srv.acl.all();
    ctx.out.array(users.len());
    for u in users {
        ctx.out.bulk(&u.name);
    }
}

fn whoami(ctx: &mut Ctx, _argv: &[&[u8]]) {
    match &ctx.client.user {
        Some(u) => ctx.out.bulk(&u.name),
        None => ctx.out.null(),
    }
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn load(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let path = ctx.srv.config.get("aclfile");
    if path.is_empty() {
        return ctx.out.error(NO_ACL_FILE);
    }
    match crate::acl::file::load(ctx.srv, &path) {
        Ok(()) => {
            crate::acl::file::kill_clients_of_replaced_users(ctx.srv, ctx.client);
            ctx.out.ok()
        }
        Err(e) => ctx.out.error_bytes(&[b"ERR ", e.as_bytes()].concat()),
    }
}

fn save(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let path = ctx.srv.config.get("aclfile");
    if path.is_empty() {
        return ctx.out.error(NO_ACL_FILE);
    }
    match crate::acl::file::save(ctx.srv, &path) {
        Ok(()) => ctx.out.ok(),
        Err(e) => {
            crate::log::warning(&e);
            ctx.out.error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
        }
    }
}

fn cat(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    let Some(name) = argv.get(2) else {
        ctx.out.array(ACL_CATEGORIES.len());
        for c in ACL_CATEGORIES {
            ctx.out.bulk(c.as_bytes());
        }
        return;
    };
    let flag = std::str::from_utf8(name).map_or(0, acl_category_bit);
    if flag == 0 {
        return ctx.out.error_bytes(&args::error_text(&[
            b"ERR Unknown category '",
            args::c_str_max(name, 128),
            b"'",
        ]));
    }
    let mut names = Vec::new();
    for cmd in ctx.srv.commands.top_level() {
        if cmd.acl_categories & flag != 0 {
            names.push(cmd.fullname.clone());
        }
        for sub in cmd.sorted_subcommands() {
            if sub.acl_categories & flag != 0 {
                names.push(sub.fullname.clone());
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

fn genpass(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    const MAX_BITS: i64 = 4096;
    let bits = match argv.get(2) {
        Some(a) => match args::int(a) {
            Ok(b) => b,
            Err(e) => return ctx.out.error(e),
        },
        None => 256,
    };
    if bits <= 0 || bits > MAX_BITS {
        return ctx.out.error(&format!("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {MAX_BITS}"));
    }
    let chars = ((bits + 3) / 4) as usize;
    let bytes: Vec<u8> = (0..chars.div_ceil(2))
        .map(|_| rand::random::<u8>())
        .collect();
    let hex = crate::hex::to_string(&bytes);
    ctx.out.bulk(&hex.as_bytes()[..chars]);
}

fn log(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    let mut count = 10;
    if let Some(a) = argv.get(2) {
        if is(a, "reset") {
            ctx.srv.acl.log.lock().reset();
            return ctx.out.ok();
        }
        match args::int(a) {
            Ok(n) => count = n.max(0),
            Err(e) => return ctx.out.error(e),
        }
    }
    let now = engine::wall_ms();
    ctx.srv.acl.log.lock().reply(ctx.out, count as usize, now);
}

fn dryrun(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(user) = ctx.srv.acl.get(argv[2]) else {
        return ctx.out.error_bytes(&args::error_text(&[
            b"ERR User '",
            args::c_str(argv[2]),
            b"' not found",
        ]));
    };
    let call = &argv[3..];
    let Some(cmd) = ctx
        .srv
        .commands
        .lookup(call)
        .filter(|c| c.handler.is_some() || c.is_container())
    else {
        return ctx.out.error_bytes(&args::error_text(&[
            b"ERR Command '",
            args::c_str(argv[3]),
            b"' not found",
        ]));
    };
    if !cmd.arity_ok(call.len()) {
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.fullname
        ));
    }
    match user.check(cmd, call) {
        Ok(()) => ctx.out.ok(),
        Err(d) => {
            let text: Vec<u8> = match d {
                crate::acl::Denied::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    cmd.fullname
                )
                .into_bytes(),
                crate::acl::Denied::Key(i) => [
                    &b"This user has no permissions to access the '"[..],
                    args::c_str(call[i]),
                    b"' key",
                ]
                .concat(),
                crate::acl::Denied::Channel(i) => [
                    &b"This user has no permissions to access the '"[..],
                    args::c_str(call[i]),
                    b"' channel",
                ]
                .concat(),
            };
            ctx.out.bulk(&text);
        }
    }
}

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    );
}
