//! FUNCTION (LOAD, DELETE, LIST, FLUSH, STATS, KILL, HELP), FCALL and FCALL_RO. The
//! library registry is `crate::script::functions`; a function runs like an EVAL script
//! (`crate::script::run`).

use super::args::{self, is};
use super::help::{reply_help, subcommand_syntax_error};
use super::{Ctx, Handler};
use crate::script::busy::BUSY_EVAL;
use crate::script::functions::{self, Function, Library, BAD_NAME};
use crate::script::{run, state};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("fcall", fcall),
    ("fcall_ro", fcall_ro),
    ("function|load", function_load),
    ("function|delete", function_delete),
    ("function|list", function_list),
    ("function|flush", function_flush),
    ("function|stats", function_stats),
    ("function|kill", function_kill),
    ("function|help", function_help),
    ("function|dump", function_dump),
    ("function|restore", function_restore),
];

/// RDB_OPCODE_FUNCTION2: a library's code follows.
const OPCODE_FUNCTION2: u8 = 245;
/// RDB_OPCODE_FUNCTION: Redis 7.0's release candidates' library format.
const OPCODE_FUNCTION: u8 = 246;

/// Flag names in the order FUNCTION LIST shows them (Redis's scripts_flags_def).
const FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

fn fcall(ctx: &mut Ctx, argv: &[&[u8]]) {
    fcall_generic(ctx, argv, false);
}

fn fcall_ro(ctx: &mut Ctx, argv: &[&[u8]]) {
    fcall_generic(ctx, argv, true);
}

/// Redis's fcallCommandGeneric: `FCALL name numkeys key... arg...`.
fn fcall_generic(ctx: &mut Ctx, argv: &[&[u8]], ro: bool) {
    super::client::feed_monitors_first(ctx, argv);
    let Some(lib) = ctx.srv.scripts.functions.library_of(argv[1]) else {
        return ctx.out.error("ERR Function not found");
    };
    let Some(def) = lib.function(argv[1]) else {
        return ctx.out.error("ERR Function not found");
    };
    let Ok(numkeys) = args::int(argv[2]) else {
        return ctx.out.error("ERR Bad number of keys provided");
    };
    let split = match run::keys_end(argv, numkeys) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(e),
    };
    let target = run::Target::Function(&lib, def);
    run::run(ctx, &target, &argv[3..split], &argv[split..], ro);
}

/// FUNCTION LOAD [REPLACE] code.
fn function_load(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut replace = false;
    let mut at = 2;
    while at < argv.len() - 1 {
        if !is(argv[at], "replace") {
            return ctx.out.error_bytes(&args::error_text(&[
                b"ERR Unknown option given: ",
                args::c_str(argv[at]),
            ]));
        }
        replace = true;
        at += 1;
    }
    if at >= argv.len() {
        return ctx.out.error("ERR Function code is missing");
    }
    match load(ctx, argv[at], replace) {
        Ok(name) => ctx.out.bulk(&name),
        Err(e) => ctx.out.error_bytes(&e),
    }
}

/// Compile `code` on this worker, collect its functions and add the library. The error
/// is the reply's text.
fn load(ctx: &mut Ctx, code: &[u8], replace: bool) -> Result<Vec<u8>, Vec<u8>> {
    let lib = compile(ctx, code, |name| {
        !replace && ctx.srv.scripts.functions.exists(name)
    })?;
    let name = lib.name.clone();
    ctx.srv
        .scripts
        .functions
        .add(lib, replace)
        .map_err(|e| format!("ERR {e}"))?;
    ctx.keys.add_dirty(1);
    Ok(name)
}

/// A library from its code, compiled on this worker (Redis's functionsCreateWithLibraryCtx
/// up to linking it); `taken(name)`: a library of that name already exists.
/// The error quotes the code's bytes as Redis does (`%S`: all of them).
fn compile(ctx: &Ctx, code: &[u8], taken: impl Fn(&[u8]) -> bool) -> Result<Library, Vec<u8>> {
    let md = functions::metadata(code).map_err(|e| [b"ERR ".as_slice(), &e].concat())?;
    if !functions::valid_name(&md.name) {
        return Err(format!("ERR {BAD_NAME}").into());
    }
    if !md.engine.eq_ignore_ascii_case(b"lua") {
        return Err([b"ERR Engine '".as_slice(), &md.engine, b"' not found"].concat());
    }
    let registry = &ctx.srv.scripts.functions;
    if taken(&md.name) {
        return Err([b"ERR Library '".as_slice(), &md.name, b"' already exists"].concat());
    }
    let body = &code[md.body_start..];
    let registered = state::with(ctx.srv, |st| st.load_library(body))??;
    Ok(Library {
        id: registry.next_id(),
        name: md.name.clone(),
        code: code.to_vec(),
        body_start: md.body_start,
        functions: registered
            .into_iter()
            .map(|r| Function {
                name: r.name,
                description: r.description,
                flags: r.flags,
                whole_db: Default::default(),
            })
            .collect(),
    })
}

/// FUNCTION DUMP: each library's code after RDB_OPCODE_FUNCTION2, then the RDB version
/// and CRC64, as Redis writes it.
fn function_dump(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let compress = super::dump::compression(ctx);
    let mut out = Vec::new();
    for lib in ctx.srv.scripts.functions.libraries() {
        out.push(OPCODE_FUNCTION2);
        engine::rdb::write_string(&mut out, &lib.code, compress);
    }
    engine::rdb::seal_payload(&mut out);
    ctx.out.bulk(&out);
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
fn function_restore(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return subcommand_syntax_error(ctx, argv);
    }
    let (mut flush, mut replace) = (false, false);
    if let Some(p) = argv.get(3) {
        if is(p, "flush") {
            flush = true;
        } else if is(p, "replace") {
            replace = true;
        } else if !is(p, "append") {
            return ctx.out.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    }
    let data = argv[2];
    if !engine::rdb::verify_payload(data, ctx.srv.stats.skip_checksum()) {
        return ctx
            .out
            .error("ERR DUMP payload version or checksum are wrong");
    }
    match restored_libraries(ctx, &data[..data.len() - 10]) {
        Ok(libs) => match ctx.srv.scripts.functions.restore(libs, flush, replace) {
            Ok(()) => {
                ctx.keys.add_dirty(1);
                ctx.out.ok();
            }
            Err(e) => ctx.out.error(&format!("ERR {e}")),
        },
        Err(e) => ctx.out.error_bytes(&e),
    }
}

/// The libraries of a FUNCTION DUMP payload (footer removed), compiled here.
fn restored_libraries(ctx: &Ctx, body: &[u8]) -> Result<Vec<Library>, Vec<u8>> {
    let mut reader = engine::rdb::Reader::new(body);
    let mut libs: Vec<Library> = Vec::new();
    while reader.remaining() > 0 {
        let t = reader
            .read_u8()
            .map_err(|_| "ERR can not read data type".to_string())?;
        let string = |r: &mut engine::rdb::Reader, what: &str| {
            r.read_string()
                .map(|s| s.into_bytes().into_owned())
                .map_err(|_| format!("ERR Failed loading {what}"))
        };
        let code = match t {
            OPCODE_FUNCTION2 => string(&mut reader, "library payload")?,
            // 7.0's release candidates: name, engine, description, code.
            OPCODE_FUNCTION => {
                let name = string(&mut reader, "library name")?;
                let engine_name = string(&mut reader, "engine name")?;
                let has_desc = reader
                    .read_len()
                    .map_err(|_| "ERR Failed loading library description indicator".to_string())?;
                if has_desc != 0 {
                    string(&mut reader, "library description")?;
                }
                let blob = string(&mut reader, "library blob")?;
                let mut code = b"#!".to_vec();
                code.extend_from_slice(&engine_name);
                code.extend_from_slice(b" name=");
                code.extend_from_slice(&name);
                code.push(b'\n');
                code.extend_from_slice(&blob);
                code
            }
            _ => return Err("ERR given type is not a function".into()),
        };
        let lib = compile(ctx, &code, |name| libs.iter().any(|l| l.name == name))?;
        libs.push(lib);
    }
    Ok(libs)
}

fn function_delete(ctx: &mut Ctx, argv: &[&[u8]]) {
    if !ctx.srv.scripts.functions.delete(argv[2]) {
        return ctx.out.error("ERR Library not found");
    }
    ctx.keys.add_dirty(1);
    ctx.out.ok();
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn function_list(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < argv.len() {
        if !with_code && is(argv[i], "withcode") {
            with_code = true;
        } else if pattern.is_none() && is(argv[i], "libraryname") {
            if i >= argv.len() - 1 {
                return ctx.out.error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(argv[i]);
        } else {
            // sdscatfmt's %s and addReplyErrorSds: no trimming.
            return ctx.out.error_bytes(
                &[b"ERR Unknown argument ".as_slice(), args::c_str(argv[i])].concat(),
            );
        }
        i += 1;
    }
    let libs: Vec<_> = ctx
        .srv
        .scripts
        .functions
        .libraries()
        .into_iter()
        .filter(|l| pattern.is_none_or(|p| engine::glob::glob_match(p, &l.name, true)))
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for lib in &libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(&lib.name);
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(&f.name);
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let fl = f.flags;
            let set = [
                fl.no_writes,
                fl.allow_oom,
                fl.allow_stale,
                fl.no_cluster,
                fl.allow_cross_slot,
            ];
            out.set(set.iter().filter(|&&b| b).count());
            for (name, on) in FLAG_NAMES.iter().zip(set) {
                if on {
                    out.simple(name);
                }
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
}

fn function_flush(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    if argv.len() == 3 && !is(argv[2], "sync") && !is(argv[2], "async") {
        return ctx
            .out
            .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    ctx.srv.scripts.functions.flush();
    ctx.keys.add_dirty(1);
    ctx.out.ok();
}

/// FUNCTION STATS: the engines' counts. `running_script` is nil: a function runs on its
/// worker without others waiting for it unless it is busy (then they get -BUSY).
fn function_stats(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if ctx.srv.scripts.busy.eval_busy() {
        return ctx.out.error(BUSY_EVAL);
    }
    let (libs, fns) = ctx.srv.scripts.functions.counts();
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    out.null();
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libs as i64);
    out.bulk(b"functions_count");
    out.int(fns as i64);
}

fn function_kill(ctx: &mut Ctx, _argv: &[&[u8]]) {
    match ctx.srv.scripts.busy.kill(false) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(e),
    }
}

fn function_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
}
