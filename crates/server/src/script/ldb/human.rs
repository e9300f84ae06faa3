//! The debugger's text forms, as Redis's ldb writes them: a quoted string (sds's
//! `sdscatrepr`), a command's RESP reply in human form (`ldbRedisProtocolToHuman`) and a
//! Lua value on the stack (`ldbCatStackValue`).

use mlua::ffi;

/// Append `s` quoted, with C escapes for what is not printable (sdscatrepr).
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// The line of `reply` starting at `at` (without its CRLF) and where the next starts.
fn line(reply: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = reply.get(at..)?;
    let end = rest.iter().position(|&c| c == b'\r')?;
    Some((&rest[..end], at + end + 2))
}

fn count(header: &[u8]) -> i64 {
    std::str::from_utf8(header.get(1..).unwrap_or_default())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Append the reply starting at `at` in human form; where the next reply starts
/// (`None`: the reply was cut short, which a command's own reply never is).
pub fn reply(out: &mut Vec<u8>, r: &[u8], at: usize) -> Option<usize> {
    let (head, next) = line(r, at)?;
    match head.first()? {
        b':' => {
            out.extend_from_slice(&head[1..]);
            Some(next)
        }
        b'$' => {
            let n = count(head);
            if n < 0 {
                out.extend_from_slice(b"NULL");
                return Some(next);
            }
            let end = next + n as usize;
            repr(out, r.get(next..end)?);
            Some(end + 2)
        }
        b'+' | b'-' => {
            repr(out, head);
            Some(next)
        }
        b'*' | b'~' => {
            let n = count(head);
            if n < 0 {
                out.extend_from_slice(b"NULL");
                return Some(next);
            }
            let set = head[0] == b'~';
            out.extend_from_slice(if set { b"~(" } else { b"[" });
            let mut at = next;
            for j in 0..n {
                at = reply(out, r, at)?;
                if j != n - 1 {
                    out.push(b',');
                }
            }
            out.extend_from_slice(if set { b")" } else { b"]" });
            Some(at)
        }
        b'%' => {
            let n = count(head);
            out.push(b'{');
            let mut at = next;
            for j in 0..n {
                at = reply(out, r, at)?;
                out.extend_from_slice(b" => ");
                at = reply(out, r, at)?;
                if j != n - 1 {
                    out.push(b',');
                }
            }
            out.push(b'}');
            Some(at)
        }
        b'_' => {
            out.extend_from_slice(b"(null)");
            Some(next)
        }
        b'#' => {
            out.extend_from_slice(if head.get(1) == Some(&b't') {
                b"#true"
            } else {
                b"#false"
            });
            Some(next)
        }
        b',' => {
            out.extend_from_slice(b"(double) ");
            out.extend_from_slice(&head[1..]);
            Some(next)
        }
        // (Redis leaves other types out.)
        _ => Some(next),
    }
}

/// How deep nested tables are shown (LDB_MAX_VALUES_DEPTH: LUA_MINSTACK / 2).
const MAX_DEPTH: u32 = 10;

/// Append the Lua value at `idx` (a negative index) of `state`'s stack (ldbCatStackValue).
///
/// # Safety
/// `state` is a live Lua state with `idx` a valid negative index, and at least
/// 3 * [`MAX_DEPTH`] free stack slots (the debugger's callers check with
/// `lua_checkstack`). Only non-raising calls are made: `lua_next` with keys it gave, and
/// `lua_tolstring`/`lua_tonumber` on values of those types only (never converting a key
/// in place).
pub unsafe fn value(out: &mut Vec<u8>, state: *mut ffi::lua_State, idx: i32) {
    // SAFETY: as this function's.
    unsafe { value_rec(out, state, idx, 0) }
}

unsafe fn value_rec(out: &mut Vec<u8>, state: *mut ffi::lua_State, idx: i32, level: u32) {
    if level == MAX_DEPTH {
        out.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    let level = level + 1;
    // SAFETY: see `value`.
    unsafe {
        match ffi::lua_type(state, idx) {
            ffi::LUA_TSTRING => {
                let mut len = 0;
                let p = ffi::lua_tolstring(state, idx, &mut len);
                repr(out, std::slice::from_raw_parts(p as *const u8, len));
            }
            ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(state, idx) != 0 {
                b"true"
            } else {
                b"false"
            }),
            ffi::LUA_TNUMBER => {
                out.extend_from_slice(resp::fmt::fmt_g(ffi::lua_tonumber(state, idx), 6).as_bytes())
            }
            ffi::LUA_TNIL => out.extend_from_slice(b"nil"),
            ffi::LUA_TTABLE => {
                let mut expected = 1.0;
                let mut is_array = true;
                let (mut as_array, mut as_map) = (Vec::new(), Vec::new());
                ffi::lua_pushnil(state);
                while ffi::lua_next(state, idx - 1) != 0 {
                    if is_array
                        && (ffi::lua_type(state, -2) != ffi::LUA_TNUMBER
                            || ffi::lua_tonumber(state, -2) != expected)
                    {
                        is_array = false;
                    }
                    value_rec(&mut as_array, state, -1, level);
                    as_array.extend_from_slice(b"; ");
                    as_map.push(b'[');
                    value_rec(&mut as_map, state, -2, level);
                    as_map.extend_from_slice(b"]=");
                    value_rec(&mut as_map, state, -1, level);
                    as_map.extend_from_slice(b"; ");
                    ffi::lua_settop(state, -2);
                    expected += 1.0;
                }
                let chosen = if is_array { as_array } else { as_map };
                out.push(b'{');
                out.extend_from_slice(&chosen[..chosen.len().saturating_sub(2)]);
                out.push(b'}');
            }
            t @ (ffi::LUA_TFUNCTION
            | ffi::LUA_TUSERDATA
            | ffi::LUA_TTHREAD
            | ffi::LUA_TLIGHTUSERDATA) => {
                let name = match t {
                    ffi::LUA_TFUNCTION => "function",
                    ffi::LUA_TUSERDATA => "userdata",
                    ffi::LUA_TTHREAD => "thread",
                    _ => "light-userdata",
                };
                let p = ffi::lua_topointer(state, idx);
                out.extend_from_slice(format!("\"{name}@{p:p}\"").as_bytes());
            }
            _ => out.extend_from_slice(b"\"<unknown-lua-type>\""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(r: &[u8]) -> String {
        let mut o = Vec::new();
        reply(&mut o, r, 0);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn replies_in_human_form() {
        assert_eq!(human(b":5\r\n"), "5");
        assert_eq!(human(b"$-1\r\n"), "NULL");
        assert_eq!(human(b"$3\r\na\nb\r\n"), "\"a\\nb\"");
        assert_eq!(human(b"+OK\r\n"), "\"+OK\"");
        assert_eq!(human(b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n"), "[1,[\"x\"]]");
        assert_eq!(human(b"%1\r\n+a\r\n,1.5\r\n"), "{\"+a\" => (double) 1.5}");
        assert_eq!(human(b"~1\r\n#t\r\n"), "~(#true)");
        assert_eq!(human(b"_\r\n"), "(null)");
        assert_eq!(human(b"*3\r\n:1\r\n"), "[1,");
    }

    #[test]
    fn repr_escapes() {
        let mut o = Vec::new();
        repr(&mut o, b"a\"\\\x01\t");
        assert_eq!(o, b"\"a\\\"\\\\\\x01\\t\"");
    }
}
