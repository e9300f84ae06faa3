//! The number a SORT weight stands for: glibc's `strtod` as sortCommandGeneric calls it
//! (the C string up to its first NUL; leading white space, decimal and hexadecimal forms,
//! `inf`/`infinity`), refused as Redis refuses it: not read to the end, out of range
//! (`ERANGE`: an overflow, or an inexact result below the normal range) or NaN. The
//! number's form is [`crate::floatfmt::scan`]'s; `rustc_apfloat` rounds it to a double
//! and reports the overflow or underflow glibc signals with ERANGE.

use crate::floatfmt::{scan, Num};
use rustc_apfloat::ieee::Double;
use rustc_apfloat::{Float, Round, Status};

/// The weight `s` stands for, or None where Redis answers "One or more scores can't be
/// converted into double". The empty string converts nothing and stops on its NUL: 0.
pub fn weight(s: &[u8]) -> Option<f64> {
    let s = c_str(s);
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s.iter().position(|&b| !is_c_space(b)).unwrap_or(s.len());
    let body = &s[start..];
    if let Some(v) = plain_decimal(body) {
        return Some(v);
    }
    match scan(body)? {
        Num::Inf(neg) => Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        Num::Finite { text, .. } => {
            let r = Double::from_str_r(&text, Round::NearestTiesToEven).ok()?;
            if r.status.intersects(Status::OVERFLOW | Status::UNDERFLOW) {
                return None; // ERANGE
            }
            Some(f64::from_bits(r.value.to_bits() as u64))
        }
    }
}

/// The common case quickly: `[+-]digits[.digits][e[+-]digits]` whose double is normal
/// (or an exact zero), which Rust's parser rounds as strtod does. None: let the full path
/// decide (other forms, errors, results near the ends of the range).
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let mut i = usize::from(matches!(s.first(), Some(b'-' | b'+')));
    let digits = |i: usize| i + s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int_end = digits(i);
    let mut nonzero = s[i..int_end].iter().any(|&b| b != b'0');
    i = int_end;
    let mut count = int_end - usize::from(matches!(s.first(), Some(b'-' | b'+')));
    if s.get(i) == Some(&b'.') {
        let frac_end = digits(i + 1);
        nonzero |= s[i + 1..frac_end].iter().any(|&b| b != b'0');
        count += frac_end - i - 1;
        i = frac_end;
    }
    if count == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let at = i + 1 + usize::from(matches!(s.get(i + 1), Some(b'-' | b'+')));
        let end = digits(at);
        if end == at {
            return None;
        }
        i = end;
    }
    if i != s.len() {
        return None;
    }
    let v: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    let normal = v.is_finite() && (v.abs() >= f64::MIN_POSITIVE || (v == 0.0 && !nonzero));
    normal.then_some(v)
}

/// What C sees of a byte string: everything before its first NUL.
pub fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&b| b == 0) {
        Some(n) => &s[..n],
        None => s,
    }
}

/// C's isspace in the C locale.
fn is_c_space(b: u8) -> bool {
    b == b' ' || (b'\t'..=b'\r').contains(&b)
}

#[cfg(test)]
mod tests {
    use super::weight;

    #[test]
    fn reads_what_glibc_strtod_reads_whole() {
        let ok: &[(&[u8], f64)] = &[
            (b"", 0.0),
            (b"\0abc", 0.0),
            (b"1\0x", 1.0),
            (b" 5", 5.0),
            (b"\t\n-2.5", -2.5),
            (b"1.", 1.0),
            (b".5", 0.5),
            (b"1e3", 1000.0),
            (b"1E+3", 1000.0),
            (b"-1e-3", -0.001),
            (b"inf", f64::INFINITY),
            (b"-Infinity", f64::NEG_INFINITY),
            (b"+INF", f64::INFINITY),
            (b"0x10", 16.0),
            (b"0x1.8p1", 3.0),
            (b"0x.8", 0.5),
            (b"-0X1P-2", -0.25),
            (b"0x1p-1074", 5e-324),
            (b"0e-400", 0.0),
            (b"1e308", 1e308),
            (b"9223372036854775807", 9223372036854775807.0),
            (b"2.2250738585072014e-308", f64::MIN_POSITIVE),
            (b"0x1.fffffffffffff8p0", 2.0),
        ];
        for (s, v) in ok {
            assert_eq!(weight(s), Some(*v), "{:?}", String::from_utf8_lossy(s));
        }
        let bad: &[&[u8]] = &[
            b"  ",
            b"-",
            b"+",
            b".",
            b"1e",
            b"1e+",
            b"5 ",
            b"abc",
            b"1x",
            b"0x",
            b"0xg",
            b"infinit",
            b"nan",
            b"NaN",
            b"nan(12)",
            b"1e309",
            b"-1e309",
            b"1e-400",
            b"1e-310",
            b"4.9e-324",
            b"0x1p1024",
            b"0x1p-1080",
            b"1..2",
            b"--1",
        ];
        for s in bad {
            assert_eq!(weight(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }
}
