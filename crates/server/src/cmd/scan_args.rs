//! What SCAN, HSCAN, SSCAN and ZSCAN share: the cursor (parseScanCursorOrReply) and the
//! MATCH / COUNT options (and SCAN's TYPE) that scanGenericCommand reads, with Redis's
//! errors. A collection's scan reads its cursor before looking up the key, and its options
//! after, as Redis does.

use super::args::{self, is, SYNTAX_ERR};
use engine::glob::glob_match;
use resp::ReplyBuf;

pub const INVALID_CURSOR: &str = "ERR invalid cursor";

/// A cursor as Redis reads it (strtoul, base 10): optional sign, digits, no spaces, no
/// overflow; a minus sign negates modulo 2^64, and an empty string is cursor 0.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, &'static str> {
    let (neg, digits) = match arg.first() {
        None => return Ok(0),
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        Some(_) => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(INVALID_CURSOR);
    }
    let v: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(INVALID_CURSOR)?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// MATCH, COUNT and (SCAN only) TYPE.
pub struct ScanOpts<'a> {
    pub count: usize,
    /// None when absent or `*` (everything matches).
    pub pattern: Option<&'a [u8]>,
    /// Lower-cased type name (SCAN's TYPE).
    pub type_name: Option<String>,
}

impl ScanOpts<'_> {
    /// Does `item` match the MATCH pattern?
    pub fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, item, false))
    }
}

/// The options from `argv[from..]`.
pub fn parse_opts<'a>(
    argv: &[&'a [u8]],
    from: usize,
    with_type: bool,
) -> Result<ScanOpts<'a>, &'static str> {
    let mut o = ScanOpts {
        count: 10,
        pattern: None,
        type_name: None,
    };
    let mut j = from;
    while j < argv.len() {
        let has_next = j + 1 < argv.len();
        if is(argv[j], "count") && has_next {
            match args::int(argv[j + 1])? {
                n if n >= 1 => o.count = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return Err(SYNTAX_ERR),
            }
        } else if is(argv[j], "match") && has_next {
            o.pattern = Some(argv[j + 1]).filter(|p| *p != b"*");
        } else if with_type && is(argv[j], "type") && has_next {
            o.type_name = Some(String::from_utf8_lossy(argv[j + 1]).to_lowercase());
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 2;
    }
    Ok(o)
}

/// The reply for a key that does not exist: cursor 0, nothing.
pub fn reply_empty(out: &mut ReplyBuf) {
    out.array(2);
    out.bulk(b"0");
    out.array(0);
}
