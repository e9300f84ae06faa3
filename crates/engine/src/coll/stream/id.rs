//! Stream entry IDs (`<ms>-<seq>`, two unsigned 64-bit numbers) and Redis's rules for
//! reading them from arguments (streamGenericParseIDOrReply).

use std::fmt;

/// A stream entry ID. Ordered as Redis orders them (by `ms`, then `seq`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// An ID argument that may leave its sequence to the server (XADD's `<ms>-*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdArg {
    Exact(StreamId),
    /// `<ms>-*`: the sequence is generated.
    AutoSeq(u64),
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        *self == StreamId::MIN
    }

    /// The next ID (streamIncrID); None past the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The previous ID (streamDecrID); None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }

    /// The 128-bit big-endian form (rax keys, RDB PEL entries).
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn from_be_bytes(b: &[u8; 16]) -> StreamId {
        let (ms, seq) = b.split_at(8);
        StreamId::new(
            u64::from_be_bytes(ms.try_into().expect("8 bytes")),
            u64::from_be_bytes(seq.try_into().expect("8 bytes")),
        )
    }

    /// Parse an ID argument as Redis does: `-` and `+` (unless `strict`), `<ms>` (the
    /// sequence is `missing_seq`), `<ms>-<seq>`, and `<ms>-*` when `auto_seq` allows it.
    /// None for anything Redis calls an invalid stream ID.
    pub fn parse_arg(arg: &[u8], missing_seq: u64, strict: bool, auto_seq: bool) -> Option<IdArg> {
        if arg.len() > 127 {
            return None;
        }
        // Redis copies the argument into a C string: it ends at the first NUL.
        let s = match arg.iter().position(|&b| b == 0) {
            Some(n) => &arg[..n],
            None => arg,
        };
        match s {
            b"-" | b"+" if strict => return None,
            b"-" => return Some(IdArg::Exact(StreamId::MIN)),
            b"+" => return Some(IdArg::Exact(StreamId::MAX)),
            _ => {}
        }
        let (ms, seq) = match s.iter().position(|&b| b == b'-') {
            Some(d) => (&s[..d], Some(&s[d + 1..])),
            None => (s, None),
        };
        let ms = string2ull(ms)?;
        match seq {
            Some(b"*") if auto_seq => Some(IdArg::AutoSeq(ms)),
            Some(seq) => Some(IdArg::Exact(StreamId::new(ms, string2ull(seq)?))),
            None => Some(IdArg::Exact(StreamId::new(ms, missing_seq))),
        }
    }

    /// An exact ID (no `<ms>-*` form): `-` and `+` allowed unless `strict`.
    pub fn parse(arg: &[u8], missing_seq: u64, strict: bool) -> Option<StreamId> {
        match StreamId::parse_arg(arg, missing_seq, strict, false)? {
            IdArg::Exact(id) => Some(id),
            IdArg::AutoSeq(_) => None,
        }
    }
}

/// An ID's text (`<ms>-<seq>`) on the stack: replies and propagated commands format IDs
/// often.
pub struct IdText {
    buf: [u8; 41],
    len: usize,
}

impl IdText {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl StreamId {
    /// The ID as `<ms>-<seq>` text, without allocating.
    pub fn text(&self) -> IdText {
        let mut t = IdText {
            buf: [0; 41],
            len: 0,
        };
        t.put(self.ms);
        t.buf[t.len] = b'-';
        t.len += 1;
        t.put(self.seq);
        t
    }
}

impl IdText {
    fn put(&mut self, mut n: u64) {
        let start = self.len;
        loop {
            self.buf[self.len] = b'0' + (n % 10) as u8;
            self.len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.buf[start..self.len].reverse();
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(self.text().as_bytes()).map_err(|_| fmt::Error)?)
    }
}

/// Redis's string2ull: a strict decimal (string2ll, not negative), else what C's strtoull
/// accepts for the whole string (leading white space, a sign, leading zeros; a minus sign
/// negates modulo 2^64), refusing overflow.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(n) = crate::value::parse_strict_i64(s) {
        return u64::try_from(n).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<StreamId> {
        StreamId::parse(s.as_bytes(), 0, false)
    }

    #[test]
    fn parsing() {
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 0)));
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(StreamId::parse(b"+", 0, true), None);
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("18446744073709551616"), None);
        assert_eq!(p("01-02"), Some(StreamId::new(1, 2)));
        assert_eq!(p(" 1"), Some(StreamId::new(1, 0)));
        assert_eq!(p("1--1"), None);
        assert_eq!(p("1--01"), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(p("a"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("1-*"), None);
        assert_eq!(
            StreamId::parse_arg(b"7-*", 0, true, true),
            Some(IdArg::AutoSeq(7))
        );
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::MIN.decr(), None);
        assert_eq!(StreamId::new(3, 0).to_string(), "3-0");
        assert_eq!(
            StreamId::MAX.text().as_bytes(),
            b"18446744073709551615-18446744073709551615"
        );
        assert_eq!(StreamId::new(0, 120).text().as_bytes(), b"0-120");
    }
}
