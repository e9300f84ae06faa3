//! Redis's conversions between Lua values and RESP (script_lua.c): a command's reply as
//! the Lua value `redis.call` returns, and a script's return value as the client's reply.

use mlua::{ffi, Lua, Table, Value};
use resp::ReplyBuf;

/// Deepest nesting converted (Redis stops at its Lua stack limit).
const MAX_DEPTH: usize = 1000;
/// Stack slots one level of [`Parser::push`] uses beyond what it leaves: at most five,
/// for an error reply's table while its text is put together.
const PUSH_SLOTS: i32 = 5;

/// Redis's luaPushErrorBuff: an error text ("-CODE message" or "message") as the text of
/// a Lua error table's `err` field: "CODE message", "ERR message" without a code, the
/// message trimmed of CR and LF at both ends. ([`error_parts`] gives its two parts.)
pub fn error_text(raw: &[u8]) -> Vec<u8> {
    let (code, msg) = error_parts(raw);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(msg);
    out
}

/// The code and the trimmed message of [`error_text`], without allocating. Like Redis's
/// luaPushErrorBuff (C strings), the text ends at a NUL byte.
pub fn error_parts(raw: &[u8]) -> (&[u8], &[u8]) {
    let raw = c_str(raw);
    match raw.strip_prefix(b"-") {
        Some(line) => error_line_parts(line),
        None => (b"ERR", trim_crlf(raw)),
    }
}

/// The code and message of an error reply's line (after its `-`), up to a NUL byte.
fn error_line_parts(line: &[u8]) -> (&[u8], &[u8]) {
    let line = c_str(line);
    match line.iter().position(|&b| b == b' ') {
        Some(sp) => (&line[..sp], trim_crlf(&line[sp + 1..])),
        None => (b"ERR", trim_crlf(line)),
    }
}

/// `s` up to its first NUL byte (what C's string functions see of it).
pub fn c_str(s: &[u8]) -> &[u8] {
    s.split(|&b| b == 0).next().unwrap_or_default()
}

/// `msg` without CR and LF at either end.
fn trim_crlf(msg: &[u8]) -> &[u8] {
    let is_crlf = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_crlf(b)).unwrap_or(msg.len());
    let end = msg
        .iter()
        .rposition(|b| !is_crlf(b))
        .map_or(start, |e| e + 1);
    &msg[start..end]
}

/// A Lua error table `{err = text}` built from an error text as [`error_text`] reads it.
pub fn error_table(lua: &Lua, raw: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(raw))?)?;
    Ok(t)
}

/// An error reply of a script's error table: `-` and `msg` as Redis's `"-%s"` writes it
/// (no `ERR` added, a `-` of msg's own kept, so `--`), CR and LF as spaces.
pub fn raw_error(out: &mut ReplyBuf, msg: &[u8]) {
    out.out.push(b'-');
    out.out.extend(
        msg.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.out.extend_from_slice(b"\r\n");
}

// ---- RESP -> Lua ----

/// Push the Lua value of a command's reply (one complete RESP2 or RESP3 reply in
/// `reply`) onto `state`'s stack, as Redis's redisProtocolToLuaType: error replies become
/// `{err = ..., ignore_error_stats_update = true}` tables.
///
/// # Safety
/// `state` is the running Lua state, with room for one more value on its stack. Lua's
/// API may raise (only on memory exhaustion) and leave by `longjmp`: nothing here, nor in
/// the caller's frame, holds a value with a destructor (the parser is slices and
/// integers), so that skips no destructor.
pub unsafe fn push_reply(state: *mut ffi::lua_State, reply: &[u8]) {
    let mut p = Parser { buf: reply, pos: 0 };
    // SAFETY: as this function's.
    unsafe { p.push(state, 0) }
}

/// Push the error table `{err = "CODE message"}` of an error text as [`error_text`] reads
/// it.
///
/// # Safety
/// As [`push_reply`]'s.
pub unsafe fn push_error_table(state: *mut ffi::lua_State, raw: &[u8]) {
    // SAFETY: as this function's.
    unsafe { push_error_parts(state, error_parts(raw)) }
}

/// Push `{err = "CODE message"}`.
///
/// # Safety
/// As [`push_reply`]'s, with [`PUSH_SLOTS`] free slots on the stack (a C function has
/// LUA_MINSTACK, 20): the table, its key and the three parts of the text.
unsafe fn push_error_parts(state: *mut ffi::lua_State, (code, msg): (&[u8], &[u8])) {
    // SAFETY: as this function's.
    unsafe {
        ffi::lua_createtable(state, 0, 2);
        push_bytes(state, b"err");
        push_bytes(state, code);
        push_bytes(state, b" ");
        push_bytes(state, msg);
        ffi::lua_concat(state, 3);
        ffi::lua_rawset(state, -3);
    }
}

/// Whether the value a script returned (`raised`: raised) is an error table already in
/// the error statistics (`ignore_error_stats_update = true`): Redis's
/// luaExtractErrorInformation, for a returned table only when it has a string `err`.
pub fn error_counted(v: &Value, raised: bool) -> bool {
    let Value::Table(t) = v else {
        return false;
    };
    let is_err = raised || matches!(t.raw_get::<Value>("err"), Ok(Value::String(_)));
    is_err && says_counted(t)
}

fn says_counted(t: &Table) -> bool {
    matches!(
        t.get::<Value>("ignore_error_stats_update"),
        Ok(Value::Boolean(true))
    )
}

/// Set `ignore_error_stats_update = true` in the error table on top of the stack (the
/// error is already in the statistics).
///
/// # Safety
/// As [`push_reply`]'s, with two free slots on the stack.
pub unsafe fn mark_counted(state: *mut ffi::lua_State) {
    // SAFETY: as this function's.
    unsafe {
        push_bytes(state, b"ignore_error_stats_update");
        ffi::lua_pushboolean(state, 1);
        ffi::lua_rawset(state, -3);
    }
}

/// # Safety
/// As [`push_reply`]'s.
unsafe fn push_bytes(state: *mut ffi::lua_State, b: &[u8]) {
    // SAFETY: `b` is valid for `b.len()` bytes; Lua copies them.
    unsafe {
        ffi::lua_pushlstring(state, b.as_ptr() as *const _, b.len());
    }
}

/// Wrap the value on top of the stack as `{name = value}`.
///
/// # Safety
/// As [`push_reply`]'s.
unsafe fn wrap_single(state: *mut ffi::lua_State, name: &[u8]) {
    // SAFETY: as this function's: the value is under the new table, key pushed on top.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_insert(state, -2);
        push_bytes(state, name);
        ffi::lua_insert(state, -2);
        ffi::lua_rawset(state, -3);
    }
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn line(&mut self) -> &[u8] {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let n = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or(rest.len());
        self.pos += n + 2;
        &rest[..n]
    }

    fn int(&mut self) -> i64 {
        let l = self.line();
        std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let start = self.pos.min(self.buf.len());
        let end = (start + n).min(self.buf.len());
        self.pos = end + 2;
        &self.buf[start..end]
    }

    /// Push one reply (attributes are parsed and dropped).
    ///
    /// # Safety
    /// As [`push_reply`]'s. Each level of nesting first makes sure the stack has room
    /// for the few slots it uses; past [`MAX_DEPTH`] or Lua's stack limit, nil.
    unsafe fn push(&mut self, state: *mut ffi::lua_State, depth: usize) {
        // SAFETY: as this function's. Every branch leaves exactly one more value on the
        // stack.
        unsafe {
            if depth > MAX_DEPTH
                || self.pos >= self.buf.len()
                || ffi::lua_checkstack(state, PUSH_SLOTS) == 0
            {
                ffi::lua_pushnil(state);
                return;
            }
            let kind = self.buf[self.pos];
            self.pos += 1;
            match kind {
                b':' => ffi::lua_pushnumber(state, self.int() as f64),
                b'$' => match self.int() {
                    n if n < 0 => ffi::lua_pushboolean(state, 0),
                    n => push_bytes(state, self.bytes(n as usize)),
                },
                b'+' => {
                    push_bytes(state, self.line());
                    wrap_single(state, b"ok");
                }
                b'-' => {
                    push_error_parts(state, error_line_parts(self.line()));
                    // The command's own statistics already counted this error.
                    mark_counted(state);
                }
                b'*' => {
                    let n = self.int();
                    if n < 0 {
                        ffi::lua_pushboolean(state, 0);
                    } else {
                        ffi::lua_createtable(state, n.min(1 << 20) as i32, 0);
                        for i in 1..=n {
                            self.push(state, depth + 1);
                            ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
                        }
                    }
                }
                b'%' => {
                    let n = self.int().max(0);
                    ffi::lua_createtable(state, 0, n.min(1 << 20) as i32);
                    for _ in 0..n {
                        self.push(state, depth + 1);
                        self.push(state, depth + 1);
                        if ffi::lua_isnil(state, -2) != 0 {
                            ffi::lua_pop(state, 2);
                        } else {
                            ffi::lua_rawset(state, -3);
                        }
                    }
                    wrap_single(state, b"map");
                }
                b'~' => {
                    let n = self.int().max(0);
                    ffi::lua_createtable(state, 0, n.min(1 << 20) as i32);
                    for _ in 0..n {
                        self.push(state, depth + 1);
                        if ffi::lua_isnil(state, -1) != 0 {
                            ffi::lua_pop(state, 1);
                        } else {
                            ffi::lua_pushboolean(state, 1);
                            ffi::lua_rawset(state, -3);
                        }
                    }
                    wrap_single(state, b"set");
                }
                b'_' => {
                    self.line();
                    ffi::lua_pushnil(state);
                }
                b'#' => ffi::lua_pushboolean(state, (self.line() == b"t") as i32),
                b',' => {
                    let l = self.line();
                    let d = match l {
                        b"inf" => f64::INFINITY,
                        b"-inf" => f64::NEG_INFINITY,
                        _ => std::str::from_utf8(l)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(f64::NAN),
                    };
                    ffi::lua_pushnumber(state, d);
                    wrap_single(state, b"double");
                }
                b'(' => {
                    push_bytes(state, self.line());
                    wrap_single(state, b"big_number");
                }
                b'=' => {
                    let n = self.int().max(0) as usize;
                    let b = self.bytes(n);
                    let (format, text) = if b.len() >= 4 {
                        (&b[..3], &b[4..])
                    } else {
                        (&b[..0], b)
                    };
                    ffi::lua_createtable(state, 0, 2);
                    push_bytes(state, b"string");
                    push_bytes(state, text);
                    ffi::lua_rawset(state, -3);
                    push_bytes(state, b"format");
                    push_bytes(state, format);
                    ffi::lua_rawset(state, -3);
                    wrap_single(state, b"verbatim_string");
                }
                b'|' => {
                    let n = self.int().max(0);
                    for _ in 0..2 * n {
                        self.push(state, depth + 1);
                        ffi::lua_pop(state, 1);
                    }
                    self.push(state, depth);
                }
                _ => {
                    self.line();
                    ffi::lua_pushnil(state);
                }
            }
        }
    }
}

// ---- Lua -> RESP ----

/// `(long long)d` as x86-64 computes it: out of range (or NaN) gives i64::MIN.
fn c_cast_i64(d: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// The error replies written inside an array, map or set of a script's reply, which
/// Redis counts as it writes them (afterErrorReply), as the script's failed call.
#[derive(Default)]
pub struct NestedErrors {
    /// Those from tables saying `ignore_error_stats_update`: a failed call each.
    pub counted: u64,
    /// The texts (after the `-`) of the others: an error stat each.
    pub texts: Vec<Vec<u8>>,
}

/// Redis's luaReplyToRedisReply: `v` as the reply to the client. `script_resp3`: the
/// protocol the script chose with `redis.setresp` (booleans depend on it).
pub fn lua_to_reply(
    v: &Value,
    out: &mut ReplyBuf,
    script_resp3: bool,
) -> mlua::Result<NestedErrors> {
    let mut errs = NestedErrors::default();
    write(v, out, script_resp3, 0, &mut errs)?;
    Ok(errs)
}

fn write(
    v: &Value,
    out: &mut ReplyBuf,
    resp3: bool,
    depth: usize,
    errs: &mut NestedErrors,
) -> mlua::Result<()> {
    if depth > MAX_DEPTH {
        const MSG: &str = "ERR reached lua stack limit";
        out.error(MSG);
        errs.texts.push(MSG.as_bytes().to_vec());
        return Ok(());
    }
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if resp3 {
                out.bool(*b);
            } else if *b {
                out.int(1);
            } else {
                out.null();
            }
        }
        Value::Integer(i) => out.int(*i),
        Value::Number(n) => out.int(c_cast_i64(*n)),
        Value::Table(t) => return write_table(t, out, resp3, depth, errs),
        _ => out.null(),
    }
    Ok(())
}

fn write_table(
    t: &Table,
    out: &mut ReplyBuf,
    resp3: bool,
    depth: usize,
    errs: &mut NestedErrors,
) -> mlua::Result<()> {
    if let Value::String(e) = t.raw_get::<Value>("err")? {
        // A C string, whose CR and LF at the end addReplyErrorFormatEx drops.
        let e = e.as_bytes();
        let e = c_str(&e);
        let end = e
            .iter()
            .rposition(|&b| b != b'\r' && b != b'\n')
            .map_or(0, |i| i + 1);
        raw_error(out, &e[..end]);
        if depth > 0 && says_counted(t) {
            errs.counted += 1;
        } else if depth > 0 {
            errs.texts.push(e[..end].to_vec());
        }
        return Ok(());
    }
    if let Value::String(s) = t.raw_get::<Value>("ok")? {
        let s: Vec<u8> = s
            .as_bytes()
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        out.out.push(b'+');
        out.out.extend_from_slice(&s);
        out.out.extend_from_slice(b"\r\n");
        return Ok(());
    }
    let double = match t.raw_get::<Value>("double")? {
        Value::Number(d) => Some(d),
        Value::Integer(i) => Some(i as f64),
        _ => None,
    };
    if let Some(d) = double {
        out.double(d);
        return Ok(());
    }
    if let Value::String(s) = t.raw_get::<Value>("big_number")? {
        let s: String = String::from_utf8_lossy(&s.as_bytes())
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        out.big_number(&s);
        return Ok(());
    }
    if let Value::Table(vt) = t.raw_get::<Value>("verbatim_string")? {
        if let (Value::String(f), Value::String(s)) = (
            vt.raw_get::<Value>("format")?,
            vt.raw_get::<Value>("string")?,
        ) {
            let f = String::from_utf8_lossy(&f.as_bytes()).into_owned();
            out.verbatim(&s.as_bytes(), &f);
            return Ok(());
        }
    }
    if let Value::Table(m) = t.raw_get::<Value>("map")? {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
        out.map(pairs.len());
        for (k, v) in &pairs {
            write(k, out, resp3, depth + 1, errs)?;
            write(v, out, resp3, depth + 1, errs)?;
        }
        return Ok(());
    }
    if let Value::Table(s) = t.raw_get::<Value>("set")? {
        let keys: Vec<Value> = s
            .pairs::<Value, Value>()
            .map(|kv| kv.map(|(k, _)| k))
            .collect::<mlua::Result<_>>()?;
        out.set(keys.len());
        for k in &keys {
            write(k, out, resp3, depth + 1, errs)?;
        }
        return Ok(());
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i)? {
            Value::Nil => break,
            v => items.push(v),
        }
    }
    out.array(items.len());
    for v in &items {
        write(v, out, resp3, depth + 1, errs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_as_redis_pushes_them() {
        assert_eq!(error_text(b"-ERR bad thing\r\n"), b"ERR bad thing");
        assert_eq!(error_text(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(error_text(b"-NOSPACE"), b"ERR NOSPACE");
        assert_eq!(error_text(b"plain text"), b"ERR plain text");
    }

    /// The Lua value `push_reply` makes of `reply`.
    fn pushed(lua: &Lua, reply: &[u8]) -> Value {
        // SAFETY: exec_raw runs the closure as a protected C function on the state, with
        // room for a value; push_reply pushes exactly one.
        unsafe { lua.exec_raw::<Value>((), |state| push_reply(state, reply)) }.unwrap()
    }

    #[test]
    fn replies_round_trip_through_lua() {
        let lua = Lua::new();
        let reply = b"*5\r\n:7\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR no\r\n";
        let v = pushed(&lua, reply);
        let mut out = ReplyBuf::new(resp::Proto::Resp2);
        lua_to_reply(&v, &mut out, false).unwrap();
        assert_eq!(
            out.out,
            b"*5\r\n:7\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR no\r\n"
        );
    }

    #[test]
    fn resp3_replies_become_redis_tables() {
        let lua = Lua::new();
        let get = |v: &Value, k: &str| match v {
            Value::Table(t) => t.raw_get::<Value>(k).unwrap(),
            _ => panic!("not a table: {v:?}"),
        };
        let err = pushed(&lua, b"-WRONGTYPE Operation against a key\r\n");
        assert_eq!(
            get(&err, "err").as_string().unwrap().to_str().unwrap(),
            "WRONGTYPE Operation against a key"
        );
        assert_eq!(get(&err, "ignore_error_stats_update"), Value::Boolean(true));
        let map = pushed(&lua, b"%2\r\n$1\r\na\r\n:1\r\n_\r\n:2\r\n");
        let inner = get(&map, "map");
        assert_eq!(get(&inner, "a"), Value::Number(1.0));
        let set = pushed(&lua, b"~1\r\n+x\r\n");
        assert!(matches!(get(&set, "set"), Value::Table(_)));
        assert_eq!(
            get(&pushed(&lua, b",1.5\r\n"), "double"),
            Value::Number(1.5)
        );
        assert_eq!(pushed(&lua, b"#t\r\n"), Value::Boolean(true));
        assert_eq!(pushed(&lua, b"_\r\n"), Value::Nil);
        assert_eq!(pushed(&lua, b"*-1\r\n"), Value::Boolean(false));
        let big = pushed(&lua, b"(123\r\n");
        assert_eq!(
            get(&big, "big_number")
                .as_string()
                .unwrap()
                .to_str()
                .unwrap(),
            "123"
        );
        let verb = get(&pushed(&lua, b"=7\r\ntxt:abc\r\n"), "verbatim_string");
        assert_eq!(
            get(&verb, "format").as_string().unwrap().to_str().unwrap(),
            "txt"
        );
        assert_eq!(
            get(&verb, "string").as_string().unwrap().to_str().unwrap(),
            "abc"
        );
        // An attribute is read and dropped.
        assert_eq!(
            pushed(&lua, b"|1\r\n+k\r\n+v\r\n:5\r\n"),
            Value::Number(5.0)
        );
    }
}
