//! The Lua side of the debugger: the line hook that stops the script (Redis's
//! luaLdbLineHook), the prompt that reads the client's commands there (ldbRepl) and the
//! commands that look into the running script (print, trace, eval, redis), plus
//! `redis.debug()` and `redis.breakpoint()`.
//!
//! These are C functions of Lua's API (a hook, `lua_CFunction`s), so they work on the
//! raw state. As in `super::super::call_c`, Lua may `longjmp` out of them (`lua_error`),
//! which must not skip a Rust destructor: the Rust part runs first and returns plain
//! data ([`Stop`]), and the error is raised after every Rust value of the frame is gone.

use super::human;
use super::session::{self, Next, Session, MAX_BREAKPOINTS};
use mlua::ffi;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::time::Instant;

/// Free stack slots the debugger's own work needs (value dumps, `redis` calls).
const STACK_NEEDED: c_int = 40;

/// Install the debugger's hook on `state` (LUA_MASKLINE | LUA_MASKCOUNT, every 100,000
/// instructions, as Redis): a `lua_CFunction` called once before the script runs.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn install(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: `state` is the calling Lua state; `line_hook` is a sound lua_Hook.
    unsafe {
        ffi::lua_sethook(
            state,
            Some(line_hook),
            ffi::LUA_MASKLINE | ffi::LUA_MASKCOUNT,
            100_000,
        );
    }
    0
}

/// Why a stop ends in an error raised in the script.
enum Raise {
    None,
    Message(&'static [u8]),
}

/// The hook, called as Lua is about to run a new line (or every 100,000 instructions).
///
/// # Safety
/// Called by Lua with its state and the event's activation record.
unsafe extern "C-unwind" fn line_hook(state: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
    let raise = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: as this function's.
        unsafe { on_line(state, ar) }
    }))
    .unwrap_or(Raise::None);
    if let Raise::Message(msg) = raise {
        // SAFETY: nothing of Rust's is left in this frame; the error table needs a few
        // slots, which a hook has (Lua gives hooks LUA_MINSTACK).
        unsafe {
            super::super::convert::push_error_table(state, msg);
            ffi::lua_error(state);
        }
    }
}

/// The hook's work (luaLdbLineHook).
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn on_line(state: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) -> Raise {
    // SAFETY: `ar` is the hook's record; level 0 is the running function.
    let (line, user, count_event) = unsafe {
        ffi::lua_getstack(state, 0, ar);
        ffi::lua_getinfo(state, c"Sl".as_ptr(), ar);
        let src = CStr::from_ptr((*ar).short_src.as_ptr()).to_bytes();
        (
            (*ar).currentline,
            contains(src, b"user_script"),
            (*ar).event == ffi::LUA_HOOKCOUNT,
        )
    };
    let stop = session::with(|s| {
        s.current_line = line;
        let bp = s.is_breakpoint(line) || s.luabp;
        if !user {
            return None;
        }
        let mut timeout = false;
        if count_event && !s.step && !bp {
            if s.since.elapsed().as_millis() >= s.timeout_ms {
                timeout = true;
                s.step = true;
            } else {
                return None;
            }
        }
        if !(s.step || bp) {
            return None;
        }
        let reason = if bp {
            if s.luabp {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        s.step = false;
        s.luabp = false;
        s.log(format!("* Stopped at {line}, stop reason = {reason}").into_bytes());
        s.log_source_line(line);
        s.send_logs();
        Some(timeout)
    })
    .flatten();
    let Some(timeout) = stop else {
        return Raise::None;
    };
    // While the client looks at the stopped script, the run is listed as busy: other
    // clients needing its shards get -BUSY rather than waiting on their workers.
    super::mark_busy();
    // SAFETY: as this function's.
    let outcome = unsafe { prompt(state) };
    session::with(|s| s.since = Instant::now());
    match outcome {
        Prompt::Resume => Raise::None,
        Prompt::Gone if timeout => {
            Raise::Message(b"timeout during Lua debugging with client closing connection")
        }
        Prompt::Gone => Raise::None,
        Prompt::Raise(msg) => Raise::Message(msg),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

enum Prompt {
    /// Step or continue.
    Resume,
    /// The client disconnected: the script runs on without stopping.
    Gone,
    Raise(&'static [u8]),
}

/// Read and run debugger commands until one resumes the script (ldbRepl).
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn prompt(state: *mut ffi::lua_State) -> Prompt {
    loop {
        let next = session::with(Session::next_command).unwrap_or(Next::Gone);
        let argv = match next {
            Next::Command(argv) => argv,
            Next::Gone => {
                session::with(|s| {
                    s.step = false;
                    s.breakpoints.clear();
                });
                return Prompt::Gone;
            }
        };
        // Redis's own parser takes 1 to 1024 arguments of 1 to 1024 bytes.
        if argv.len() > 1024 || argv.iter().any(|a| a.is_empty() || a.len() > 1024) {
            return Prompt::Raise(b"protocol error");
        }
        let name = argv[0].to_ascii_lowercase();
        let is = |short: &str, long: &str| name == short.as_bytes() || name == long.as_bytes();
        if is("s", "step") || is("n", "next") {
            session::with(|s| s.step = true);
            return Prompt::Resume;
        }
        if is("c", "continue") {
            return Prompt::Resume;
        }
        if is("a", "abort") {
            return Prompt::Raise(b"script aborted for user request");
        }
        // SAFETY: as this function's.
        unsafe {
            if is("h", "help") {
                session::with(help);
            } else if is("t", "trace") {
                trace(state);
            } else if is("m", "maxlen") {
                session::with(|s| maxlen(s, &argv));
            } else if is("b", "break") {
                session::with(|s| breakpoints(s, &argv));
            } else if is("e", "eval") {
                eval(state, &argv);
            } else if argv.len() > 1 && is("r", "redis") {
                redis(state, &argv);
            } else if is("p", "print") {
                match argv.get(1) {
                    Some(var) if argv.len() == 2 => print(state, var),
                    _ => print_all(state),
                }
            } else if is("l", "list") {
                session::with(|s| {
                    let mut around = s.current_line;
                    if let Some(n) = argv.get(1).map(|a| atoi(a)) {
                        if n > 0 {
                            around = n;
                        }
                    }
                    let context = argv.get(2).map_or(5, |a| atoi(a));
                    s.list(around, context);
                });
            } else if is("w", "whole") {
                session::with(|s| s.list(1, 1_000_000));
            } else {
                session::with(|s| {
                    s.log(
                        b"<error> Unknown Redis Lua debugger command or wrong number of arguments."
                            .to_vec(),
                    )
                });
            }
        }
        session::with(Session::send_logs);
    }
}

/// C's atoi as glibc has it: `(int) strtol(s, NULL, 10)`: leading blanks, a sign,
/// digits; 0 when none; a value past a long saturates, then keeps its low 32 bits.
fn atoi(s: &[u8]) -> i32 {
    let mut rest = s;
    while let [c, tail @ ..] = rest {
        if !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            break;
        }
        rest = tail;
    }
    let neg = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &c in rest.iter().take_while(|c| c.is_ascii_digit()) {
        let d = i64::from(c - b'0');
        n = match n.checked_mul(10).and_then(|m| {
            if neg {
                m.checked_sub(d)
            } else {
                m.checked_add(d)
            }
        }) {
            Some(v) => v,
            None if neg => i64::MIN,
            None => i64::MAX,
        };
        if n == i64::MIN || n == i64::MAX {
            break;
        }
    }
    n as i32
}

/// Redis's string2l: the whole argument a decimal integer.
fn parse_line(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?;
    if t.starts_with('+') || (t.len() > 1 && (t.starts_with('0') || t.starts_with("-0"))) {
        return None;
    }
    t.parse().ok()
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

fn help(s: &mut Session) {
    for l in HELP {
        s.log(l.as_bytes().to_vec());
    }
}

/// ldbMaxlen.
fn maxlen(s: &mut Session, argv: &[Vec<u8>]) {
    if argv.len() == 2 {
        let mut n = atoi(&argv[1]);
        s.maxlen_hint_sent = true;
        if n != 0 && n <= 60 {
            n = 60;
        }
        s.maxlen = n as usize;
    }
    if s.maxlen != 0 {
        let shown = s.maxlen;
        s.log(format!("<value> replies are truncated at {shown} bytes.").into_bytes());
    } else {
        s.log(b"<value> replies are unlimited.".to_vec());
    }
}

/// ldbBreak.
fn breakpoints(s: &mut Session, argv: &[Vec<u8>]) {
    if argv.len() == 1 {
        if s.breakpoints.is_empty() {
            s.log(b"No breakpoints set. Use 'b <line>' to add one.".to_vec());
        } else {
            s.log(format!("{} breakpoints set:", s.breakpoints.len()).into_bytes());
            for bp in s.breakpoints.clone() {
                s.log_source_line(bp);
            }
        }
        return;
    }
    for arg in &argv[1..] {
        let Some(line) = parse_line(arg) else {
            let mut l = b"Invalid argument:'".to_vec();
            l.extend_from_slice(arg);
            l.push(b'\'');
            s.log(l);
            continue;
        };
        if line == 0 {
            s.breakpoints.clear();
            s.log(b"All breakpoints removed.".to_vec());
        } else if line > 0 {
            if s.breakpoints.len() == MAX_BREAKPOINTS {
                s.log(b"Too many breakpoints set.".to_vec());
            } else if line <= s.src.len() as i64 && !s.is_breakpoint(line as i32) {
                s.breakpoints.push(line as i32);
                s.list(line as i32, 1);
            } else {
                s.log(b"Wrong line number.".to_vec());
            }
        } else {
            let line = line.unsigned_abs();
            match s.breakpoints.iter().position(|&b| b as u64 == line) {
                Some(i) => {
                    s.breakpoints.remove(i);
                    s.log(b"Breakpoint removed.".to_vec());
                }
                None => s.log(b"No breakpoint in the specified line.".to_vec()),
            }
        }
    }
}

/// Log the value on top of the stack after `prefix`, cut at maxlen (ldbLogStackValue).
///
/// # Safety
/// `state` is live with a value on top and [`STACK_NEEDED`] slots checked.
unsafe fn log_top(state: *mut ffi::lua_State, prefix: Vec<u8>) {
    let mut line = prefix;
    // SAFETY: as this function's.
    unsafe { human::value(&mut line, state, -1) };
    session::with(|s| s.log_with_maxlen(line));
}

/// Visit the locals of the frame at `level`, each value on top of the stack while
/// `visit` looks at its name, until `visit` returns true (`Some(true)`). `None`: there
/// is no such frame.
///
/// # Safety
/// `state` is live with [`STACK_NEEDED`] slots checked; `visit` leaves the stack as it
/// found it.
unsafe fn each_local(
    state: *mut ffi::lua_State,
    level: c_int,
    mut visit: impl FnMut(&[u8]) -> bool,
) -> Option<bool> {
    // SAFETY: as this function's; every value lua_getlocal pushes is popped.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(state, level, &mut ar) == 0 {
            return None;
        }
        let mut i = 1;
        loop {
            let name = ffi::lua_getlocal(state, &ar, i);
            if name.is_null() {
                return Some(false);
            }
            i += 1;
            let stop = visit(CStr::from_ptr(name).to_bytes());
            ffi::lua_settop(state, -2);
            if stop {
                return Some(true);
            }
        }
    }
}

/// ldbPrint: the first local named `var` from the current frame outwards, else the
/// globals KEYS and ARGV.
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn print(state: *mut ffi::lua_State, var: &[u8]) {
    // SAFETY: as this function's.
    unsafe {
        if ffi::lua_checkstack(state, STACK_NEEDED) == 0 {
            return;
        }
        let mut level = 0;
        while let Some(found) = each_local(state, level, |name| {
            let found = name == var;
            if found {
                log_top(state, b"<value> ".to_vec());
            }
            found
        }) {
            if found {
                return;
            }
            level += 1;
        }
        if var == b"ARGV" || var == b"KEYS" {
            let name = if var == b"ARGV" { c"ARGV" } else { c"KEYS" };
            // (Through the sandbox's globals, which fall through to the allow-listed
            // table where KEYS and ARGV are.)
            ffi::lua_getfield(state, ffi::LUA_GLOBALSINDEX, name.as_ptr());
            log_top(state, b"<value> ".to_vec());
            ffi::lua_settop(state, -2);
        } else {
            session::with(|s| s.log(b"No such variable.".to_vec()));
        }
    }
}

/// ldbPrintAll: the locals of the current frame.
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn print_all(state: *mut ffi::lua_State) {
    let mut vars = 0;
    // SAFETY: as this function's.
    unsafe {
        if ffi::lua_checkstack(state, STACK_NEEDED) == 0 {
            return;
        }
        each_local(state, 0, |name| {
            if !contains(name, b"(*temporary)") {
                let mut prefix = b"<value> ".to_vec();
                prefix.extend_from_slice(name);
                prefix.extend_from_slice(b" = ");
                log_top(state, prefix);
                vars += 1;
            }
            false
        });
    }
    if vars == 0 {
        session::with(|s| s.log(b"No local variables in the current context.".to_vec()));
    }
}

/// ldbTrace: the script's frames, innermost first.
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn trace(state: *mut ffi::lua_State) {
    let mut frames = Vec::new();
    let mut level = 0;
    // SAFETY: as this function's.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        while ffi::lua_getstack(state, level, &mut ar) != 0 {
            ffi::lua_getinfo(state, c"Snl".as_ptr(), &mut ar);
            let src = CStr::from_ptr(ar.short_src.as_ptr()).to_bytes();
            if contains(src, b"user_script") {
                let name = if ar.name.is_null() {
                    "top level".to_string()
                } else {
                    CStr::from_ptr(ar.name).to_string_lossy().into_owned()
                };
                frames.push((level, name, ar.currentline));
            }
            level += 1;
        }
    }
    session::with(|s| {
        for (l, name, line) in frames {
            let at = if l == 0 { "In" } else { "From" };
            s.log(format!("{at} {name}:").into_bytes());
            s.log_source_line(line);
        }
        if level == 0 {
            s.log(b"<error> Can't retrieve Lua stack.".to_vec());
        }
    });
}

/// The message of the error on top of the stack (lua_tostring; empty for a table).
///
/// # Safety
/// `state` is live with a value on top.
unsafe fn top_message(state: *mut ffi::lua_State) -> Vec<u8> {
    // SAFETY: as this function's; only a string or a number is read (a number is
    // converted in place, which is harmless for an error value about to be popped).
    unsafe {
        match ffi::lua_type(state, -1) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut len = 0;
                let p = ffi::lua_tolstring(state, -1, &mut len);
                std::slice::from_raw_parts(p as *const u8, len).to_vec()
            }
            _ => b"(null)".to_vec(),
        }
    }
}

/// ldbEval: compile the arguments as an expression (`return ...`), else as a statement,
/// run it in a frame of its own and log what it returned.
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn eval(state: *mut ffi::lua_State, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let mut expr = b"return ".to_vec();
    expr.extend_from_slice(&code);
    // SAFETY: as this function's; the stack is left as found.
    unsafe {
        if ffi::lua_checkstack(state, STACK_NEEDED) == 0 {
            return;
        }
        let load = |src: &[u8]| {
            ffi::luaL_loadbuffer(
                state,
                src.as_ptr() as *const _,
                src.len(),
                c"@ldb_eval".as_ptr(),
            )
        };
        if load(&expr) != 0 {
            ffi::lua_settop(state, -2);
            if load(&code) != 0 {
                let mut l = b"<error> ".to_vec();
                l.extend_from_slice(&top_message(state));
                ffi::lua_settop(state, -2);
                session::with(|s| s.log(l));
                return;
            }
        }
        if ffi::lua_pcall(state, 0, 1, 0) != 0 {
            let mut l = b"<error> ".to_vec();
            l.extend_from_slice(&top_message(state));
            ffi::lua_settop(state, -2);
            session::with(|s| s.log(l));
            return;
        }
        log_top(state, b"<retval> ".to_vec());
        ffi::lua_settop(state, -2);
    }
}

/// ldbRedis: `redis.call` with the arguments, stepping on so that the command and its
/// reply are logged.
///
/// # Safety
/// As [`line_hook`]'s.
unsafe fn redis(state: *mut ffi::lua_State, argv: &[Vec<u8>]) {
    // SAFETY: as this function's; the stack is left as found.
    unsafe {
        if ffi::lua_checkstack(state, argv.len() as c_int + 1) == 0 {
            let mut l = b"<reply> ".to_vec();
            human::reply(&mut l, b"max lua stack reached", 0);
            session::with(|s| s.log_with_maxlen(l));
            return;
        }
        ffi::lua_getfield(state, ffi::LUA_GLOBALSINDEX, c"redis".as_ptr());
        ffi::lua_pushstring(state, c"call".as_ptr());
        ffi::lua_gettable(state, -2);
        for a in &argv[1..] {
            ffi::lua_pushlstring(state, a.as_ptr() as *const _, a.len());
        }
        session::with(|s| s.step = true);
        ffi::lua_pcall(state, argv.len() as c_int - 1, 1, 0);
        session::with(|s| s.step = false);
        ffi::lua_settop(state, -3);
    }
}

/// `redis.debug(...)`: log the arguments, comma separated, while a session runs.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn lua_debug(state: *mut ffi::lua_State) -> c_int {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the arguments are on the stack; each is read in place.
        unsafe {
            let Some(line) = session::with(|s| s.current_line) else {
                return;
            };
            if ffi::lua_checkstack(state, STACK_NEEDED) == 0 {
                return;
            }
            let argc = ffi::lua_gettop(state);
            let mut log = format!("<debug> line {line}: ").into_bytes();
            for i in 1..=argc {
                // (A negative index, as the value dump expects.)
                human::value(&mut log, state, i - argc - 1);
                if i != argc {
                    log.extend_from_slice(b", ");
                }
            }
            session::with(|s| s.log(log));
        }
    }));
    let _ = result;
    0
}

/// `redis.breakpoint()`: stop at the next line while a session runs (true), else false.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn lua_breakpoint(state: *mut ffi::lua_State) -> c_int {
    let active = session::with(|s| s.luabp = true).is_some();
    // SAFETY: a C function has a free slot for its result.
    unsafe { ffi::lua_pushboolean(state, c_int::from(active)) };
    1
}

#[cfg(test)]
mod tests {
    use super::atoi;

    #[test]
    fn atoi_as_glibc() {
        for (s, n) in [
            ("12", 12),
            ("  -7x", -7),
            ("+3", 3),
            ("x", 0),
            ("", 0),
            ("99999999999", 1215752191),
            ("-99999999999", -1215752191),
            ("99999999999999999999", -1),
            ("-99999999999999999999", 0),
            ("2147483648", i32::MIN),
        ] {
            assert_eq!(atoi(s.as_bytes()), n, "{s}");
        }
    }
}
