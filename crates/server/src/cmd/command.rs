//! COMMAND and its subcommands, answered from the command table: COMMAND INFO and
//! COMMAND DOCS reply exactly as Redis 7.0.15 does for the same command.

use super::args::{is, SYNTAX_ERR};
use super::help::reply_help;
use super::keyspec::{key_flag_names, BeginSearch, FindKeys, KeySpec};
use super::table::{acl_category_bit, CommandDef};
use super::{Ctx, Handler};
use crate::server::Server;
use resp::ReplyBuf;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::Arc;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("command", command),
    ("command|count", count),
    ("command|list", list),
    ("command|info", info),
    ("command|docs", docs),
    ("command|getkeys", getkeys),
    ("command|getkeysandflags", getkeysandflags),
    ("command|help", help),
];

fn command(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let cmds = ctx.srv.commands.top_level();
    ctx.out.array(cmds.len());
    for c in cmds {
        reply_info(ctx.out, c);
    }
}

fn count(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(ctx.srv.commands.len() as i64);
}

/// A status-reply set (flags, categories) as Redis's addReplyCommandFlags writes it.
fn status_set<S: AsRef<str>>(out: &mut ReplyBuf, items: &[S]) {
    out.set(items.len());
    for i in items {
        out.simple(i.as_ref());
    }
}

/// addReplyCommandInfo.
pub fn reply_info(out: &mut ReplyBuf, cmd: &CommandDef) {
    out.array(10);
    out.bulk(cmd.fullname.as_bytes());
    out.int(cmd.arity);
    status_set(out, &cmd.flag_names());
    let k = cmd.legacy_keys;
    out.int(k.first);
    out.int(k.last);
    out.int(k.step);
    let cats: Vec<String> = cmd
        .acl_category_names()
        .iter()
        .map(|c| format!("@{c}"))
        .collect();
    status_set(out, &cats);
    out.set(cmd.tips.len());
    for t in &cmd.tips {
        out.bulk(t.as_bytes());
    }
    out.set(cmd.key_specs.len());
    for ks in &cmd.key_specs {
        reply_key_spec(out, ks);
    }
    if cmd.is_container() {
        let subs = cmd.sorted_subcommands();
        out.array(subs.len());
        for s in subs {
            reply_info(out, s);
        }
    } else {
        out.set(0);
    }
}

fn bulk_str(out: &mut ReplyBuf, s: &str) {
    out.bulk(s.as_bytes());
}

/// addReplyCommandKeySpecs, one spec.
fn reply_key_spec(out: &mut ReplyBuf, ks: &KeySpec) {
    out.map(if ks.notes.is_some() { 4 } else { 3 });
    if let Some(n) = &ks.notes {
        bulk_str(out, "notes");
        bulk_str(out, n);
    }
    bulk_str(out, "flags");
    status_set(out, &key_flag_names(ks.flags));
    bulk_str(out, "begin_search");
    out.map(2);
    bulk_str(out, "type");
    match &ks.begin {
        BeginSearch::Index(pos) => {
            bulk_str(out, "index");
            bulk_str(out, "spec");
            out.map(1);
            bulk_str(out, "index");
            out.int(*pos);
        }
        BeginSearch::Keyword { keyword, startfrom } => {
            bulk_str(out, "keyword");
            bulk_str(out, "spec");
            out.map(2);
            bulk_str(out, "keyword");
            bulk_str(out, keyword);
            bulk_str(out, "startfrom");
            out.int(*startfrom);
        }
        BeginSearch::Unknown => {
            bulk_str(out, "unknown");
            bulk_str(out, "spec");
            out.map(0);
        }
    }
    bulk_str(out, "find_keys");
    out.map(2);
    bulk_str(out, "type");
    match &ks.find {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => {
            bulk_str(out, "range");
            bulk_str(out, "spec");
            out.map(3);
            bulk_str(out, "lastkey");
            out.int(*lastkey);
            bulk_str(out, "keystep");
            out.int(*step);
            bulk_str(out, "limit");
            out.int(*limit);
        }
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            step,
        } => {
            bulk_str(out, "keynum");
            bulk_str(out, "spec");
            out.map(3);
            bulk_str(out, "keynumidx");
            out.int(*keynumidx);
            bulk_str(out, "firstkey");
            out.int(*firstkey);
            bulk_str(out, "keystep");
            out.int(*step);
        }
        FindKeys::Unknown => {
            bulk_str(out, "unknown");
            bulk_str(out, "spec");
            out.map(0);
        }
    }
}

/// A `"name": text` pair of a docs map, when the text is present.
fn opt_text(out: &mut ReplyBuf, name: &str, value: &Option<Cow<str>>) {
    if let Some(v) = value {
        bulk_str(out, name);
        bulk_str(out, v);
    }
}

/// A JSON string field, absent when missing or empty (as Redis's generator makes NULL).
fn text<'a>(v: &'a Json, field: &str) -> Option<Cow<'a, str>> {
    v.get(field)
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .map(c_literal)
}

/// The string C sees once Redis's generator has pasted `s` between quotes unescaped:
/// an inner `"` ends one literal and starts the next (`""` is the empty string).
fn c_literal(s: &str) -> Cow<'_, str> {
    if !s.contains('"') {
        return Cow::Borrowed(s);
    }
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '"' => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn items<'a>(v: &'a Json, field: &str) -> &'a [Json] {
    v.get(field)
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// addReplyCommandArgList.
fn reply_args(out: &mut ReplyBuf, args: &[Json]) {
    out.array(args.len());
    for a in args {
        let ty = a.get("type").and_then(Json::as_str).unwrap_or("string");
        let nested = ty == "oneof" || ty == "block";
        let key_spec = a.get("key_spec_index").and_then(Json::as_i64);
        let token = text(a, "token").map(|t| Cow::Owned(t.to_uppercase()));
        let summary = text(a, "summary");
        let since = text(a, "since");
        let deprecated = a
            .get("deprecated_since")
            .and_then(Json::as_str)
            .map(c_literal);
        let flag = |f: &str| a.get(f).and_then(Json::as_bool).unwrap_or(false);
        let flags: Vec<&str> = [
            ("optional", flag("optional")),
            ("multiple", flag("multiple")),
            ("multiple_token", flag("multiple_token")),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect();
        let len = 2
            + key_spec.is_some() as usize
            + token.is_some() as usize
            + summary.is_some() as usize
            + since.is_some() as usize
            + deprecated.is_some() as usize
            + !flags.is_empty() as usize
            + nested as usize;
        out.map(len);
        bulk_str(out, "name");
        let name = a.get("name").and_then(Json::as_str).unwrap_or("");
        bulk_str(out, &name.to_lowercase());
        bulk_str(out, "type");
        bulk_str(out, ty);
        if let Some(k) = key_spec {
            bulk_str(out, "key_spec_index");
            out.int(k);
        }
        opt_text(out, "token", &token);
        opt_text(out, "summary", &summary);
        opt_text(out, "since", &since);
        opt_text(out, "deprecated_since", &deprecated);
        if !flags.is_empty() {
            bulk_str(out, "flags");
            status_set(out, &flags);
        }
        if nested {
            bulk_str(out, "arguments");
            reply_args(out, items(a, "arguments"));
        }
    }
}

/// addReplyCommandDocs.
pub fn reply_docs(out: &mut ReplyBuf, cmd: &CommandDef) {
    let spec = &cmd.spec;
    let summary = text(spec, "summary");
    let since = text(spec, "since");
    let complexity = text(spec, "complexity");
    let doc_flags: Vec<String> = ["DEPRECATED", "SYSCMD"]
        .iter()
        .filter(|f| {
            items(spec, "doc_flags")
                .iter()
                .any(|x| x.as_str() == Some(f))
        })
        .map(|f| f.to_lowercase())
        .collect();
    let deprecated = text(spec, "deprecated_since");
    let replaced = text(spec, "replaced_by");
    let history = items(spec, "history");
    let args = items(spec, "arguments");
    let len = 1
        + summary.is_some() as usize
        + since.is_some() as usize
        + complexity.is_some() as usize
        + !doc_flags.is_empty() as usize
        + deprecated.is_some() as usize
        + replaced.is_some() as usize
        + !history.is_empty() as usize
        + !args.is_empty() as usize
        + cmd.is_container() as usize;
    out.map(len);
    opt_text(out, "summary", &summary);
    opt_text(out, "since", &since);
    bulk_str(out, "group");
    bulk_str(out, &cmd.group().replace('_', "-"));
    opt_text(out, "complexity", &complexity);
    if !doc_flags.is_empty() {
        bulk_str(out, "doc_flags");
        status_set(out, &doc_flags);
    }
    opt_text(out, "deprecated_since", &deprecated);
    opt_text(out, "replaced_by", &replaced);
    if !history.is_empty() {
        bulk_str(out, "history");
        out.set(history.len());
        for h in history {
            out.array(2);
            for i in 0..2 {
                let t = h.get(i).and_then(Json::as_str).unwrap_or("");
                bulk_str(out, &c_literal(t));
            }
        }
    }
    if !args.is_empty() {
        bulk_str(out, "arguments");
        reply_args(out, args);
    }
    if cmd.is_container() {
        bulk_str(out, "subcommands");
        let subs = cmd.sorted_subcommands();
        out.map(subs.len());
        for s in subs {
            bulk_str(out, &s.fullname);
            reply_docs(out, s);
        }
    }
}

/// Redis's lookupCommandBySds: `name` or `container|sub`, exactly one level.
pub fn lookup_by_name<'a>(srv: &'a Server, name: &[u8]) -> Option<&'a Arc<CommandDef>> {
    let parts: Vec<&[u8]> = name.split(|&b| b == b'|').collect();
    let base = srv.commands.get(parts[0])?;
    match parts.len() {
        1 => Some(base),
        2 if base.is_container() => {
            let sub = String::from_utf8_lossy(parts[1]).to_lowercase();
            base.subcommands.get(&sub)
        }
        _ => None,
    }
}

fn info(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() == 2 {
        return command(ctx, argv);
    }
    ctx.out.array(argv.len() - 2);
    for name in &argv[2..] {
        match lookup_by_name(ctx.srv, name) {
            Some(c) => reply_info(ctx.out, c),
            None => ctx.out.null(),
        }
    }
}

fn docs(ctx: &mut Ctx, argv: &[&[u8]]) {
    let cmds: Vec<&Arc<CommandDef>> = if argv.len() == 2 {
        ctx.srv.commands.top_level()
    } else {
        argv[2..]
            .iter()
            .filter_map(|n| lookup_by_name(ctx.srv, n))
            .collect()
    };
    ctx.out.map(cmds.len());
    for c in cmds {
        bulk_str(ctx.out, &c.fullname);
        reply_docs(ctx.out, c);
    }
}

/// Which commands COMMAND LIST FILTERBY keeps.
enum Filter<'a> {
    All,
    Module,
    AclCat(u64),
    Pattern(&'a [u8]),
}

fn list(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut filter = Filter::All;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if !(is(argv[i], "filterby") && more == 2) {
            return ctx.out.error(SYNTAX_ERR);
        }
        let arg = argv[i + 2];
        filter = if is(argv[i + 1], "module") {
            Filter::Module
        } else if is(argv[i + 1], "aclcat") {
            Filter::AclCat(acl_category_bit(&String::from_utf8_lossy(arg)))
        } else if is(argv[i + 1], "pattern") {
            Filter::Pattern(arg)
        } else {
            return ctx.out.error(SYNTAX_ERR);
        };
        i += 3;
    }
    let keep = |c: &CommandDef| match filter {
        Filter::All => true,
        Filter::Module => false,
        Filter::AclCat(bit) => c.acl_categories & bit != 0,
        Filter::Pattern(p) => engine::glob::glob_match(p, c.fullname.as_bytes(), true),
    };
    let mut names = Vec::new();
    for c in ctx.srv.commands.top_level() {
        if keep(c) {
            names.push(c.fullname.as_str());
        }
        for s in c.sorted_subcommands() {
            if keep(s) {
                names.push(s.fullname.as_str());
            }
        }
    }
    ctx.out.bulk_array(names.iter());
}

fn getkeys_impl(ctx: &mut Ctx, argv: &[&[u8]], with_flags: bool) {
    let call = &argv[2..];
    let Some(cmd) = ctx.srv.commands.lookup(call) else {
        return ctx.out.error("ERR Invalid command specified");
    };
    if !cmd.has_keys() {
        return ctx.out.error("ERR The command has no key arguments");
    }
    if !cmd.arity_ok(call.len()) {
        return ctx
            .out
            .error("ERR Invalid number of arguments specified for command");
    }
    let keys = cmd.keys(call);
    if keys.is_empty() {
        if cmd.flag_names().contains(&"no_mandatory_keys") {
            ctx.out.array(0);
        } else {
            ctx.out.error("ERR Invalid arguments specified for command");
        }
        return;
    }
    ctx.out.array(keys.len());
    for (pos, flags) in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(call[pos]);
            status_set(ctx.out, &key_flag_names(flags));
        } else {
            ctx.out.bulk(call[pos]);
        }
    }
}

fn getkeys(ctx: &mut Ctx, argv: &[&[u8]]) {
    getkeys_impl(ctx, argv, false)
}

fn getkeysandflags(ctx: &mut Ctx, argv: &[&[u8]]) {
    getkeys_impl(ctx, argv, true)
}

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::table::CommandTable;

    fn noop(_: &mut Ctx, _: &[&[u8]]) {}

    /// Dumps COMMAND INFO / DOCS of every Redis command (not only Skein's) to
    /// $SKEIN_DUMP_COMMANDS, for checking the renderers against a real Redis.
    #[test]
    #[ignore]
    fn dump_all_commands() {
        let Ok(dir) = std::env::var("SKEIN_DUMP_COMMANDS") else {
            return;
        };
        let doc: Json =
            serde_json::from_str(include_str!(concat!(env!("OUT_DIR"), "/commands.json"))).unwrap();
        let mut handlers = std::collections::HashMap::new();
        for (name, spec) in doc.as_object().unwrap() {
            let name: &'static str = Box::leak(name.clone().into_boxed_str());
            handlers.insert(name, noop as Handler);
            for sub in spec
                .get("subcommands")
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
            {
                let full: &'static str = Box::leak(format!("{name}|{}", sub.0).into_boxed_str());
                handlers.insert(full, noop as Handler);
            }
        }
        let table = CommandTable::with_handlers(handlers, 1);
        for c in &table.all {
            for (proto, tag) in [(resp::Proto::Resp2, 2), (resp::Proto::Resp3, 3)] {
                let mut out = ReplyBuf::new(proto);
                reply_info(&mut out, c);
                std::fs::write(format!("{dir}/{}.info.{tag}", c.fullname), &out.out).unwrap();
                let mut out = ReplyBuf::new(proto);
                out.map(1);
                bulk_str(&mut out, &c.fullname);
                reply_docs(&mut out, c);
                std::fs::write(format!("{dir}/{}.docs.{tag}", c.fullname), &out.out).unwrap();
            }
        }
    }
}
