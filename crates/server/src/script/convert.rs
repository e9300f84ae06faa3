//! Redis's conversions between Lua values and RESP (script_lua.c): a command's reply as
//! the Lua value `redis.call` returns, and a script's return value as the client's reply.

use mlua::{Lua, Table, Value};
use resp::ReplyBuf;

/// Deepest nesting converted (Redis stops at its Lua stack limit).
const MAX_DEPTH: usize = 1000;

/// Redis's luaPushErrorBuff: an error text ("-CODE message" or "message") as the text of
/// a Lua error table's `err` field: "CODE message", "ERR message" without a code, the
/// message trimmed of CR and LF at both ends.
pub fn error_text(raw: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match raw.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", raw),
    };
    let is_crlf = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_crlf(b)).unwrap_or(msg.len());
    let end = msg
        .iter()
        .rposition(|b| !is_crlf(b))
        .map_or(start, |e| e + 1);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(&msg[start..end]);
    out
}

/// A Lua error table `{err = text}` built from an error text as [`error_text`] reads it.
pub fn error_table(lua: &Lua, raw: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(raw))?)?;
    Ok(t)
}

/// An error reply with `msg` as its text exactly (no `ERR` added), CR and LF as spaces.
pub fn raw_error(out: &mut ReplyBuf, msg: &[u8]) {
    let msg = msg.strip_prefix(b"-").unwrap_or(msg);
    out.out.push(b'-');
    out.out.extend(
        msg.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.out.extend_from_slice(b"\r\n");
}

// ---- RESP -> Lua ----

/// The Lua value of a command's reply (one complete RESP2 or RESP3 reply in `reply`).
/// Error replies become `{err = ...}` tables; the second value says the reply was one.
pub fn reply_to_lua(lua: &Lua, reply: &[u8]) -> mlua::Result<(Value, bool)> {
    let mut p = Parser { buf: reply, pos: 0 };
    let is_error = reply.first() == Some(&b'-');
    let v = p.value(lua, 0)?;
    Ok((v.unwrap_or(Value::Nil), is_error))
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

    fn str(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let b = self.bytes(n).to_vec();
        Ok(Value::String(lua.create_string(b)?))
    }

    /// One reply; `None` when `lua` is not wanted (attributes are parsed and dropped).
    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Option<Value>> {
        if depth > MAX_DEPTH || self.pos >= self.buf.len() {
            return Ok(Some(Value::Nil));
        }
        let kind = self.buf[self.pos];
        self.pos += 1;
        let single = |t: &str, v: Value| -> mlua::Result<Value> {
            let tab = lua.create_table()?;
            tab.raw_set(t, v)?;
            Ok(Value::Table(tab))
        };
        let v = match kind {
            b':' => Value::Number(self.int() as f64),
            b'$' => match self.int() {
                n if n < 0 => Value::Boolean(false),
                n => self.str(lua, n as usize)?,
            },
            b'+' => {
                let s = lua.create_string(self.line())?;
                single("ok", Value::String(s))?
            }
            b'-' => {
                let line = self.line().to_vec();
                let mut raw = b"-".to_vec();
                raw.extend_from_slice(&line);
                let t = error_table(lua, &raw)?;
                // The command's own statistics already counted this error.
                t.raw_set("ignore_error_stats_update", true)?;
                Value::Table(t)
            }
            b'*' => {
                let n = self.int();
                if n < 0 {
                    Value::Boolean(false)
                } else {
                    let t = lua.create_table_with_capacity(n as usize, 0)?;
                    for i in 1..=n {
                        let v = self.value(lua, depth + 1)?.unwrap_or(Value::Nil);
                        t.raw_set(i, v)?;
                    }
                    Value::Table(t)
                }
            }
            b'%' => {
                let n = self.int().max(0);
                let inner = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua, depth + 1)?.unwrap_or(Value::Nil);
                    let v = self.value(lua, depth + 1)?.unwrap_or(Value::Nil);
                    if !k.is_nil() {
                        inner.raw_set(k, v)?;
                    }
                }
                single("map", Value::Table(inner))?
            }
            b'~' => {
                let n = self.int().max(0);
                let inner = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua, depth + 1)?.unwrap_or(Value::Nil);
                    if !k.is_nil() {
                        inner.raw_set(k, true)?;
                    }
                }
                single("set", Value::Table(inner))?
            }
            b'_' => {
                self.line();
                Value::Nil
            }
            b'#' => Value::Boolean(self.line() == b"t"),
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
                single("double", Value::Number(d))?
            }
            b'(' => {
                let s = lua.create_string(self.line())?;
                single("big_number", Value::String(s))?
            }
            b'=' => {
                let n = self.int().max(0) as usize;
                let b = self.bytes(n);
                let (format, text) = if b.len() >= 4 {
                    (&b[..3], &b[4..])
                } else {
                    (&b[..0], b)
                };
                let inner = lua.create_table()?;
                inner.raw_set("string", lua.create_string(text)?)?;
                inner.raw_set("format", lua.create_string(format)?)?;
                single("verbatim_string", Value::Table(inner))?
            }
            b'|' => {
                let n = self.int().max(0);
                for _ in 0..2 * n {
                    self.value(lua, depth + 1)?;
                }
                return self.value(lua, depth);
            }
            _ => {
                self.line();
                Value::Nil
            }
        };
        Ok(Some(v))
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

/// Redis's luaReplyToRedisReply: `v` as the reply to the client. `script_resp3`: the
/// protocol the script chose with `redis.setresp` (booleans depend on it).
pub fn lua_to_reply(v: &Value, out: &mut ReplyBuf, script_resp3: bool) -> mlua::Result<()> {
    write(v, out, script_resp3, 0)
}

fn write(v: &Value, out: &mut ReplyBuf, resp3: bool, depth: usize) -> mlua::Result<()> {
    if depth > MAX_DEPTH {
        out.error("reached lua stack limit");
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
        Value::Table(t) => return write_table(t, out, resp3, depth),
        _ => out.null(),
    }
    Ok(())
}

fn write_table(t: &Table, out: &mut ReplyBuf, resp3: bool, depth: usize) -> mlua::Result<()> {
    if let Value::String(e) = t.raw_get::<Value>("err")? {
        raw_error(out, &e.as_bytes());
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
            write(k, out, resp3, depth + 1)?;
            write(v, out, resp3, depth + 1)?;
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
            write(k, out, resp3, depth + 1)?;
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
        write(v, out, resp3, depth + 1)?;
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

    #[test]
    fn replies_round_trip_through_lua() {
        let lua = Lua::new();
        let reply = b"*5\r\n:7\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR no\r\n";
        let (v, err) = reply_to_lua(&lua, reply).unwrap();
        assert!(!err);
        let mut out = ReplyBuf::new(resp::Proto::Resp2);
        lua_to_reply(&v, &mut out, false).unwrap();
        assert_eq!(
            out.out,
            b"*5\r\n:7\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR no\r\n"
        );
    }
}
