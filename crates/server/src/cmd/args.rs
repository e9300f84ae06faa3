//! Argument parsing shared by all handlers, with Redis's error texts.

pub const SYNTAX_ERR: &str = "ERR syntax error";
pub const NOT_INT: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// Parse a C `int` argument as Redis's getIntFromObjectOrReply does.
pub fn c_int(arg: &[u8]) -> Result<i32, &'static str> {
    i32::try_from(int(arg)?)
        .map_err(|_| "ERR value is out of range, value must between -2147483648 and 2147483647")
}

/// A database number (SELECT, MOVE, COPY DB): a C int naming one of `databases`.
pub fn db_index(arg: &[u8], databases: usize) -> Result<usize, &'static str> {
    let n = c_int(arg)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n < databases)
        .ok_or(DB_OUT_OF_RANGE)
}

/// Parse a 64-bit integer argument as Redis's string2ll does.
pub fn int(arg: &[u8]) -> Result<i64, &'static str> {
    engine::value::parse_strict_i64(arg).ok_or(NOT_INT)
}

/// strtod-like parsing: leading/trailing spaces are errors, "inf"/"-inf" allowed, NaN not.
pub fn parse_f64(arg: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(arg).ok()?;
    if s.is_empty() || s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            if lower.contains("inf") || lower.contains("nan") {
                return None;
            }
            if let Some(hex) = lower
                .strip_prefix("0x")
                .or_else(|| lower.strip_prefix("-0x"))
            {
                let neg = lower.starts_with('-');
                let n = i64::from_str_radix(hex, 16).ok()? as f64;
                return Some(if neg { -n } else { n });
            }
            s.parse::<f64>().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

/// Case-insensitive keyword comparison.
/// A timeout in milliseconds (WAIT, XREAD BLOCK, CLIENT PAUSE): Redis's
/// getTimeoutFromObjectOrReply with UNIT_MILLISECONDS, before the current time is added.
pub fn timeout_ms(arg: &[u8]) -> Result<i64, &'static str> {
    let ms = int(arg).map_err(|_| "ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok(ms)
}

pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Lossy text of an argument (for messages).
pub fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// An argument as C's `%s` prints it: its bytes up to the first NUL.
pub fn c_str(arg: &[u8]) -> &[u8] {
    arg.split(|&b| b == 0).next().unwrap_or(arg)
}

/// An argument as C's `%.<max>s` prints it: at most `max` bytes of [`c_str`].
pub fn c_str_max(arg: &[u8], max: usize) -> &[u8] {
    let s = c_str(arg);
    &s[..s.len().min(max)]
}

/// An error text as Redis's addReplyErrorFormat builds it: `parts` joined (client bytes as
/// they came, through [`c_str`] where Redis prints them with `%s`), CR and LF trimmed from
/// both ends (sdstrim). Those inside become spaces when `ReplyBuf::error_bytes` writes it.
pub fn error_text(parts: &[&[u8]]) -> Vec<u8> {
    let mut s = parts.concat();
    let crlf = |b: &u8| *b == b'\r' || *b == b'\n';
    let end = s.iter().rposition(|b| !crlf(b)).map_or(0, |i| i + 1);
    s.truncate(end);
    let start = s.iter().position(|b| !crlf(b)).unwrap_or(s.len());
    s.drain(..start);
    s
}

/// C's atoi: leading white space, an optional sign, digits; stops at the first other byte;
/// the result clamped to a C int.
pub fn c_atoi(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && (s[i] == b' ' || (b'\t'..=b'\r').contains(&s[i])) {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let mut n: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    let n = if neg { -n } else { n };
    n.clamp(i32::MIN as i64, i32::MAX as i64)
}

/// A signed count of random picks (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER):
/// getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX), so i64::MIN is out of range.
pub fn random_count(arg: &[u8]) -> Result<i64, &'static str> {
    match int(arg)? {
        i64::MIN => Err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ),
        n => Ok(n),
    }
}

/// The LIMIT of SINTERCARD and ZINTERCARD (0: no limit).
pub fn card_limit(arg: &[u8]) -> Result<usize, &'static str> {
    match int(arg) {
        Ok(n) if n >= 0 => Ok(n as usize),
        _ => Err("ERR LIMIT can't be negative"),
    }
}

/// What LMPOP/ZMPOP and their blocking forms parse after `numkeys_idx`:
/// `numkeys key... FIRST|SECOND [COUNT count]`.
pub struct Mpop<'a> {
    pub keys: Vec<&'a [u8]>,
    /// The first of the two words was given (LEFT, MIN).
    pub first: bool,
    pub count: usize,
}

/// lmpopGenericCommand / zmpopGenericCommand's parsing (LMPOP, ZMPOP, BLMPOP, BZMPOP), with
/// Redis's errors.
pub fn mpop<'a>(
    argv: &[&'a [u8]],
    numkeys_idx: usize,
    words: [&str; 2],
) -> Result<Mpop<'a>, &'static str> {
    const NUMKEYS: &str = "ERR numkeys should be greater than 0";
    let numkeys = int(argv[numkeys_idx]).map_err(|_| NUMKEYS)?;
    if numkeys < 1 {
        return Err(NUMKEYS);
    }
    let where_idx = (numkeys as u64)
        .checked_add(numkeys_idx as u64 + 1)
        .filter(|&w| w < argv.len() as u64)
        .ok_or(SYNTAX_ERR)? as usize;
    let first = if is(argv[where_idx], words[0]) {
        true
    } else if is(argv[where_idx], words[1]) {
        false
    } else {
        return Err(SYNTAX_ERR);
    };
    let mut count = None;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count.is_none() && is(argv[j], "count") && j + 1 < argv.len() {
            j += 1;
            const COUNT: &str = "ERR count should be greater than 0";
            let n = int(argv[j]).map_err(|_| COUNT)?;
            if n < 1 {
                return Err(COUNT);
            }
            count = Some(n as usize);
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(Mpop {
        keys: argv[numkeys_idx + 1..where_idx].to_vec(),
        first,
        count: count.unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_and_error_texts() {
        assert_eq!(c_str(b"ab\0cd"), b"ab");
        assert_eq!(c_str(b"\xff\xc3"), b"\xff\xc3");
        assert_eq!(c_str_max(b"abc\0", 2), b"ab");
        assert_eq!(c_str_max(b"a\0bc", 3), b"a");
        assert_eq!(
            error_text(&[b"ERR bad '", b"\xff\r\n", b"' x\r\n"]),
            b"ERR bad '\xff\r\n' x"
        );
        assert_eq!(error_text(&[b"ERR opt ", b"\n\r"]), b"ERR opt ");
    }
}
