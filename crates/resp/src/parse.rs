//! Incremental request parser.
//!
//! Clients send either RESP multibulk arrays (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or inline
//! commands (`GET k\r\n`, what telnet and `redis-cli` in some modes send). The parser never
//! copies an argument: it returns byte ranges into the caller's buffer. It keeps a small
//! amount of state between calls so that a large bulk string arriving in many reads is not
//! rescanned: once the header of a bulk is known, the parser waits until the whole value is
//! in the buffer.
//!
//! Limits and error texts follow Redis 7.0 (`networking.c`).

use std::ops::Range;

/// Longest inline request, and longest header line, Redis accepts (PROTO_INLINE_MAX_SIZE).
pub const INLINE_MAX_SIZE: usize = 64 * 1024;

/// Limits the parser enforces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `proto-max-bulk-len`: the longest bulk string accepted.
    pub max_bulk_len: u64,
    /// Whether the client still has to authenticate (tighter limits, as Redis does).
    pub auth_required: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            auth_required: false,
        }
    }
}

/// A protocol violation. The connection must get `-ERR Protocol error: <msg>` and be closed.
/// A client's byte quoted in `msg` is held as the char of the same value (U+0000..U+00FF).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    /// The error line Redis sends, without the leading `-` and trailing CRLF: a quoted
    /// byte goes out as itself, as Redis's `%c` writes it.
    pub fn reply_bytes(&self) -> Vec<u8> {
        let mut out = b"ERR Protocol error: ".to_vec();
        out.extend(self.0.chars().map(|c| u8::try_from(c).unwrap_or(b'?')));
        out
    }
}

/// Outcome of one parse step.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command: its argument ranges into the buffer were pushed onto the caller's
    /// vector; `consumed` bytes were used. No arguments (empty inline line, `*0`) is a
    /// no-op the caller skips.
    Command { consumed: usize },
    /// A whole inline command whose quoted arguments had to be unescaped into owned bytes.
    Owned { args: Vec<Vec<u8>>, consumed: usize },
    /// More bytes are needed.
    Incomplete,
}

/// Parser state carried across reads for one connection.
///
/// A multibulk request that arrives over many reads is not rescanned: the parser keeps how
/// many arguments remain, where the next argument's header starts (relative to the
/// request's first byte, which the caller keeps at the start of `buf` until the request is
/// consumed) and the argument ranges found so far.
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Bytes the buffer must hold before parsing again is worthwhile (0 = unknown).
    need: usize,
    /// A multibulk request parsed in part: (arguments remaining, offset of the next header).
    partial: Option<(i64, usize)>,
    /// The argument ranges of the partly parsed request.
    partial_args: Vec<Range<usize>>,
}

impl RequestParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse one command from the start of `buf`.
    ///
    /// On `Parsed::Command`, `args` (cleared first) holds the argument ranges.
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        args: &mut Vec<Range<usize>>,
    ) -> Result<Parsed, ProtocolError> {
        args.clear();
        if buf.is_empty() || buf.len() < self.need {
            return Ok(Parsed::Incomplete);
        }
        let r = if buf[0] == b'*' {
            self.parse_multibulk(buf, limits, args)
        } else {
            self.partial = None;
            parse_inline(buf, args)
        };
        match r {
            Ok(Step::Done(p)) => {
                self.need = 0;
                Ok(p)
            }
            Ok(Step::NeedAtLeast(n)) => {
                self.need = n;
                Ok(Parsed::Incomplete)
            }
            Err(e) => Err(e),
        }
    }
}

enum Step {
    Done(Parsed),
    NeedAtLeast(usize),
}

fn incomplete() -> Result<Step, ProtocolError> {
    Ok(Step::Done(Parsed::Incomplete))
}

fn err<T>(msg: &str) -> Result<T, ProtocolError> {
    Err(ProtocolError(msg.to_string()))
}

/// Redis's `string2ll`: optional '-', digits, no leading zeros (except "0"), no '+'.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let (neg, digits) = if s[0] == b'-' {
        (true, &s[1..])
    } else {
        (false, s)
    };
    if digits.is_empty() || (digits[0] == b'0' && (digits.len() > 1 || neg)) {
        return if s == b"0" { Some(0) } else { None };
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i128).wrapping_neg() as i64)
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Find the `\r` ending a header line that starts at `from`.
/// The CR ending a multibulk header, found as Redis's `strchr(p, '\r')` finds it: a NUL
/// byte stops the search, so a header with a NUL before its CR stays incomplete (until
/// the "too big" limit).
fn find_cr(buf: &[u8], from: usize) -> Option<usize> {
    buf[from..]
        .iter()
        .position(|&b| b == b'\r' || b == 0)
        .map(|p| p + from)
        .filter(|&i| buf[i] == b'\r')
}

impl RequestParser {
    /// Parse (or resume parsing) a multibulk request at the start of `buf`.
    fn parse_multibulk(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        args: &mut Vec<Range<usize>>,
    ) -> Result<Step, ProtocolError> {
        let (mut remaining, mut pos) = match self.partial.take() {
            Some((remaining, pos)) if pos <= buf.len() => (remaining, pos),
            _ => {
                let Some(cr) = find_cr(buf, 0) else {
                    if buf.len() > INLINE_MAX_SIZE {
                        return err("too big mbulk count string");
                    }
                    return incomplete();
                };
                if cr + 1 >= buf.len() {
                    return incomplete();
                }
                let count = match parse_i64(&buf[1..cr]) {
                    Some(n) if n <= i32::MAX as i64 => n,
                    _ => return err("invalid multibulk length"),
                };
                if count > 10 && limits.auth_required {
                    return err("unauthenticated multibulk length");
                }
                if count <= 0 {
                    return Ok(Step::Done(Parsed::Command { consumed: cr + 2 }));
                }
                self.partial_args.clear();
                self.partial_args.reserve((count as usize).min(1024));
                (count, cr + 2)
            }
        };
        while remaining > 0 {
            let wait = |parser: &mut RequestParser, step| {
                parser.partial = Some((remaining, pos));
                Ok(step)
            };
            if pos >= buf.len() {
                return wait(self, Step::Done(Parsed::Incomplete));
            }
            let Some(cr) = find_cr(buf, pos) else {
                if buf.len() - pos > INLINE_MAX_SIZE {
                    return err("too big bulk count string");
                }
                return wait(self, Step::Done(Parsed::Incomplete));
            };
            if cr + 1 >= buf.len() {
                return wait(self, Step::Done(Parsed::Incomplete));
            }
            if buf[pos] != b'$' {
                return Err(ProtocolError(format!(
                    "expected '$', got '{}'",
                    buf[pos] as char
                )));
            }
            let len = match parse_i64(&buf[pos + 1..cr]) {
                Some(n) if n >= 0 && (n as u64) <= limits.max_bulk_len => n as usize,
                _ => return err("invalid bulk length"),
            };
            if len > 16384 && limits.auth_required {
                return err("unauthenticated bulk length");
            }
            let start = cr + 2;
            let end = start + len;
            if buf.len() < end + 2 {
                // Wait for the whole value (and its CRLF) before looking again.
                return wait(self, Step::NeedAtLeast(end + 2));
            }
            self.partial_args.push(start..end);
            pos = end + 2;
            remaining -= 1;
        }
        std::mem::swap(args, &mut self.partial_args);
        self.partial_args.clear();
        Ok(Step::Done(Parsed::Command { consumed: pos }))
    }
}

fn parse_inline(buf: &[u8], args: &mut Vec<Range<usize>>) -> Result<Step, ProtocolError> {
    // Redis looks for the newline with strchr, which stops at a NUL byte: an inline
    // request with a NUL before its newline never completes (until the 64 KiB limit).
    let nl = match buf.iter().position(|&b| b == b'\n' || b == 0) {
        Some(i) if buf[i] == b'\n' => i,
        _ => {
            if buf.len() > INLINE_MAX_SIZE {
                return err("too big inline request");
            }
            return incomplete();
        }
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    let line = &buf[..line_end];
    let consumed = nl + 1;
    if line.iter().any(|&b| b == b'"' || b == b'\'') {
        // Quoted arguments may carry escapes, so they cannot be ranges of the input.
        return match split_args(line) {
            Some(args) => Ok(Step::Done(Parsed::Owned { args, consumed })),
            None => err("unbalanced quotes in request"),
        };
    }
    let mut i = 0;
    while i < line.len() {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        let start = i;
        while i < line.len() && !ends_word(line[i]) {
            i += 1;
        }
        if i > start {
            args.push(start..i);
        }
    }
    Ok(Step::Done(Parsed::Command { consumed }))
}

/// C's isspace: what sdssplitargs skips between arguments.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// What ends an unquoted argument in sdssplitargs (vertical tab and form feed do not).
fn ends_word(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0)
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Redis's `sdssplitargs`: split a line into arguments, handling "double quotes" with
/// escapes (\n \r \t \b \a \\ \" \xHH) and 'single quotes' (only \' escaped).
/// Returns None on unbalanced quotes or a closing quote not followed by a space.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut p = 0;
    let n = line.len();
    loop {
        while p < n && is_space(line[p]) {
            p += 1;
        }
        if p >= n {
            return Some(out);
        }
        let mut inq = false;
        let mut insq = false;
        let mut done = false;
        let mut cur = Vec::new();
        while !done {
            let c = line.get(p).copied();
            if inq {
                match c {
                    None => return None,
                    Some(b'\\')
                        if p + 3 < n
                            && line[p + 1] == b'x'
                            && line[p + 2].is_ascii_hexdigit()
                            && line[p + 3].is_ascii_hexdigit() =>
                    {
                        cur.push(hex_val(line[p + 2]) * 16 + hex_val(line[p + 3]));
                        p += 3;
                    }
                    Some(b'\\') if p + 1 < n => {
                        p += 1;
                        cur.push(match line[p] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if p + 1 < n && !is_space(line[p + 1]) {
                            return None;
                        }
                        done = true;
                    }
                    Some(ch) => cur.push(ch),
                }
            } else if insq {
                match c {
                    None => return None,
                    Some(b'\\') if p + 1 < n && line[p + 1] == b'\'' => {
                        p += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if p + 1 < n && !is_space(line[p + 1]) {
                            return None;
                        }
                        done = true;
                    }
                    Some(ch) => cur.push(ch),
                }
            } else {
                match c {
                    None => done = true,
                    Some(c) if ends_word(c) => done = true,
                    Some(b'"') => inq = true,
                    Some(b'\'') => insq = true,
                    Some(ch) => cur.push(ch),
                }
            }
            if p < n {
                p += 1;
            }
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(buf: &[u8]) -> Vec<Vec<u8>> {
        let mut p = RequestParser::new();
        let mut v = Vec::new();
        match p.parse(buf, &Limits::default(), &mut v).unwrap() {
            Parsed::Command { .. } => v.into_iter().map(|r| buf[r].to_vec()).collect(),
            Parsed::Owned { args, .. } => args,
            Parsed::Incomplete => panic!("incomplete"),
        }
    }

    #[test]
    fn multibulk() {
        assert_eq!(
            args(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
            vec![b"GET".to_vec(), b"k".to_vec()]
        );
    }

    #[test]
    fn inline() {
        assert_eq!(
            args(b"set  a b\r\n"),
            vec![b"set".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
    }

    #[test]
    fn incomplete_then_complete() {
        let full = b"*1\r\n$4\r\nPING\r\n";
        let mut p = RequestParser::new();
        for i in 0..full.len() {
            assert_eq!(
                p.parse(&full[..i], &Limits::default(), &mut Vec::new())
                    .unwrap(),
                Parsed::Incomplete
            );
        }
        assert!(matches!(
            p.parse(full, &Limits::default(), &mut Vec::new()).unwrap(),
            Parsed::Command { consumed: 14, .. }
        ));
    }

    #[test]
    fn errors() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        assert_eq!(
            p.parse(b"*x\r\n", &l, &mut Vec::new()).unwrap_err().0,
            "invalid multibulk length"
        );
        assert_eq!(
            p.parse(b"*1\r\n+a\r\n", &l, &mut Vec::new()).unwrap_err().0,
            "expected '$', got '+'"
        );
        let e = p
            .parse(b"*1\r\n\xffa\r\n", &l, &mut Vec::new())
            .unwrap_err();
        assert_eq!(
            e.reply_bytes(),
            b"ERR Protocol error: expected '$', got '\xff'".to_vec()
        );
        assert_eq!(
            p.parse(b"*1\r\n$536870913\r\n", &l, &mut Vec::new())
                .unwrap_err()
                .0,
            "invalid bulk length"
        );
        assert_eq!(
            p.parse(b"\"abc\r\n", &l, &mut Vec::new()).unwrap_err().0,
            "unbalanced quotes in request"
        );
    }

    #[test]
    fn inline_words_as_sdssplitargs() {
        // \v and \f separate only before a word, not inside one.
        assert_eq!(
            args(b"set\x0bx \x0c a\x0cb\r\n"),
            vec![b"set\x0bx".to_vec(), b"a\x0cb".to_vec()]
        );
        // A NUL before the newline: Redis's strchr never finds the end of the line.
        let mut p = RequestParser::new();
        let r = p.parse(b"ping\0x\r\n", &Limits::default(), &mut Vec::new());
        assert_eq!(r.unwrap(), Parsed::Incomplete);
    }

    #[test]
    fn split_quotes() {
        assert_eq!(
            split_args(b"set \"a b\" 'c\\'d' \"\\x41\\n\"").unwrap(),
            vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]
        );
        assert!(split_args(b"\"a\"b").is_none());
    }

    #[test]
    fn ints() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b""), None);
    }
}
