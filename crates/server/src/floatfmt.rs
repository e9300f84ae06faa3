//! Redis's `long double` arithmetic for INCRBYFLOAT (and HINCRBYFLOAT), and its
//! `long double` printing of geo coordinates (addReplyHumanLongDouble): values are
//! x87 80-bit extended floats, parsed as `string2ld` does (glibc `strtold`, the whole
//! argument, no leading space, no NaN, no overflow or underflow to zero), added with
//! round-to-nearest-even, and printed as `ld2string(LD_STR_HUMAN)` does (`%.17Lf`,
//! trailing zeros removed, "-0" printed as "0").
//!
//! Parsing and addition use `rustc_apfloat`'s exact X87DoubleExtended emulation; the
//! decimal printing is done here, exactly, from the value's bits.

use rustc_apfloat::ieee::X87DoubleExtended;
use rustc_apfloat::{Float, Round, Status};

/// Longest string `string2ld` accepts is one less than this (MAX_LONG_DOUBLE_CHARS).
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// Decimal exponents beyond this overflow or underflow whatever the digits (at most
/// 5119 of them), so larger ones are clamped before handing the text to the parser.
const EXP_CLAMP: i64 = 100_000;

/// An x87 80-bit extended precision value (C's `long double` on x86-64).
#[derive(Clone, Copy, Debug)]
pub struct LongDouble(X87DoubleExtended);

impl LongDouble {
    /// Exact conversion of an integer (every i64 fits in the 64-bit significand).
    pub fn from_i64(n: i64) -> LongDouble {
        LongDouble(X87DoubleExtended::from_i128(i128::from(n)).value)
    }

    /// Redis's `string2ld`: None where Redis answers "value is not a valid float".
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS {
            return None;
        }
        let num = scan(s)?;
        let v = match num {
            Num::Inf(neg) => {
                let inf = X87DoubleExtended::INFINITY;
                return Some(LongDouble(if neg { -inf } else { inf }));
            }
            Num::Finite { text, nonzero } => {
                let r = X87DoubleExtended::from_str_r(&text, Round::NearestTiesToEven).ok()?;
                // ERANGE with a result of ±HUGE_VAL or zero is refused.
                if r.status.contains(Status::OVERFLOW) || r.value.is_infinite() {
                    return None;
                }
                if nonzero && r.value.is_zero() {
                    return None;
                }
                r.value
            }
        };
        Some(LongDouble(v))
    }

    pub fn is_finite(self) -> bool {
        self.0.is_finite()
    }

    /// `(long long) ceill(self * factor)` computed in long double, as Redis converts
    /// timeouts; None where the C conversion is out of range (or NaN).
    pub fn mul_ceil(self, factor: i64) -> Option<i64> {
        let f = X87DoubleExtended::from_i128(i128::from(factor)).value;
        let v = self.0.mul_r(f, Round::NearestTiesToEven).value;
        let c = v.round_to_integral(Round::TowardPositive).value;
        if !c.is_finite() {
            return None;
        }
        let n = c.to_i128(64);
        (n.status == Status::OK).then_some(n.value as i64)
    }

    /// `ld2string(..., LD_STR_HUMAN)`; only meaningful for finite values.
    pub fn to_human(self) -> String {
        let bits = self.0.to_bits();
        let neg = (bits >> 79) & 1 == 1;
        let biased = ((bits >> 64) & 0x7fff) as i64;
        let mant = bits as u64;
        // value = mant * 2^exp (the integer bit is explicit in the x87 format).
        let exp = if biased == 0 { 1 } else { biased } - 16383 - 63;
        human(neg, mant, exp)
    }
}

/// `ld2string(..., LD_STR_HUMAN)` of a finite double promoted to `long double` (exact,
/// so the double's own bits give the digits): how Redis prints geo coordinates.
pub fn human_f64(v: f64) -> String {
    let bits = v.to_bits();
    let neg = bits >> 63 == 1;
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    let (mant, exp) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    };
    human(neg, mant, exp)
}

/// `mant * 2^exp` with its sign, as `%.17Lf` without trailing zeros ("-0" as "0").
fn human(neg: bool, mant: u64, exp: i64) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp >= 0 {
        out.push_str(&big_decimal(mant, exp as u32));
    } else {
        push_fixed17(&mut out, mant, (-exp) as u32);
    }
    if out == "-0" {
        out = "0".to_string();
    }
    out
}

impl std::ops::Add for LongDouble {
    type Output = LongDouble;

    /// Extended precision addition, round to nearest even (the x87 default).
    fn add(self, other: LongDouble) -> LongDouble {
        LongDouble(self.0.add_r(other.0, Round::NearestTiesToEven).value)
    }
}

/// What `strtold` (or `strtod`) would read from a whole argument.
pub enum Num {
    Inf(bool),
    /// Text in a form `from_str_r` parses the same way as strtold, and whether any
    /// significand digit is nonzero.
    Finite {
        text: String,
        nonzero: bool,
    },
}

/// Check the argument is exactly one strtold/strtod number (C locale, no leading space)
/// and normalize it.
pub fn scan(s: &[u8]) -> Option<Num> {
    let (neg, body) = match *s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(Num::Inf(neg));
    }
    let hex = body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x';
    let (digits_part, radix) = if hex { (&body[2..], 16) } else { (body, 10) };
    let exp_char = if hex { b'p' } else { b'e' };
    let mut i = 0;
    let mut int_digits = String::new();
    let mut frac_digits = String::new();
    let mut seen_dot = false;
    while i < digits_part.len() {
        let c = digits_part[i];
        if c == b'.' && !seen_dot {
            seen_dot = true;
        } else if (c as char).is_digit(radix) {
            if seen_dot {
                frac_digits.push(c as char);
            } else {
                int_digits.push(c as char);
            }
        } else {
            break;
        }
        i += 1;
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let mut exp: i64 = 0;
    if i < digits_part.len() {
        if digits_part[i] | 0x20 != exp_char {
            return None;
        }
        exp = parse_exp(&digits_part[i + 1..])?;
    }
    let nonzero = int_digits
        .chars()
        .chain(frac_digits.chars())
        .any(|c| c != '0');
    let sign = if neg { "-" } else { "" };
    let int_digits = if int_digits.is_empty() {
        "0".to_string()
    } else {
        int_digits
    };
    let text = if hex {
        format!("{sign}0x{int_digits}.{frac_digits}p{exp}")
    } else {
        format!("{sign}{int_digits}.{frac_digits}e{exp}")
    };
    Some(Num::Finite { text, nonzero })
}

/// An exponent: optional sign, at least one decimal digit, nothing after; clamped.
fn parse_exp(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        v = (v * 10 + i64::from(d - b'0')).min(EXP_CLAMP);
    }
    Some(if neg { -v } else { v })
}

/// `mant * 2^-k` printed with 17 decimals (round half to even, as glibc does), then
/// trailing zeros and a trailing dot removed.
fn push_fixed17(out: &mut String, mant: u64, k: u32) {
    use std::fmt::Write;
    const SCALE: u128 = 100_000_000_000_000_000; // 10^17
    let scaled = u128::from(mant) * SCALE; // < 2^121
    let q = if k >= 122 {
        // scaled < 2^121 <= half: rounds to zero.
        0
    } else {
        let q = scaled >> k;
        let r = scaled & ((1u128 << k) - 1);
        let half = 1u128 << (k - 1);
        if r > half || (r == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    // Below 2^64 (values up to about 184, geo coordinates among them) in 64-bit
    // arithmetic; the digits are the same either way.
    let (int_part, frac) = match u64::try_from(q) {
        Ok(q) => (u128::from(q / SCALE as u64), q % SCALE as u64),
        Err(_) => (q / SCALE, (q % SCALE) as u64),
    };
    let _ = write!(out, "{int_part}");
    if frac != 0 {
        let (mut f, mut width) = (frac, 17);
        while f % 10 == 0 {
            f /= 10;
            width -= 1;
        }
        let _ = write!(out, ".{f:0width$}");
    }
}

/// Decimal digits of `mant * 2^shift`.
fn big_decimal(mant: u64, shift: u32) -> String {
    const BASE: u64 = 1_000_000_000;
    // Little-endian limbs in base 10^9.
    let mut limbs: Vec<u64> = Vec::new();
    let mut m = mant;
    while m > 0 {
        limbs.push(m % BASE);
        m /= BASE;
    }
    if limbs.is_empty() {
        return "0".to_string();
    }
    let mul = |limbs: &mut Vec<u64>, bits: u32| {
        let mut carry = 0u64;
        for l in limbs.iter_mut() {
            let v = (*l << bits) + carry;
            *l = v % BASE;
            carry = v / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    };
    // (10^9 - 1) << 32 + carry stays well below 2^64.
    for _ in 0..shift / 32 {
        mul(&mut limbs, 32);
    }
    mul(&mut limbs, shift % 32);
    let mut s = limbs.last().expect("nonzero").to_string();
    for l in limbs.iter().rev().skip(1) {
        s.push_str(&format!("{l:09}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> Option<String> {
        let x = LongDouble::parse(a.as_bytes())?;
        let y = LongDouble::parse(b.as_bytes())?;
        let v = x + y;
        Some(if v.is_finite() {
            v.to_human()
        } else {
            "NANINF".into()
        })
    }

    #[test]
    fn matches_glibc() {
        let cases = [
            ("10.5", "0.1", "10.6"),
            ("0.1", "0.2", "0.3"),
            ("0x1p3", "1", "9"),
            ("0x1", "1", "2"),
            ("inf", "1", "NANINF"),
            ("0x1.8", "1", "2.5"),
            ("0", "0.000003814697265625", "0.00000381469726562"),
            ("0", "0.000003814697265627", "0.00000381469726563"),
            ("-0", "-0", "0"),
            ("1e4932", "1e4932", "NANINF"),
            ("3.0e3", "0", "3000"),
            ("-5", "2", "-3"),
            ("1", "-1e-30", "1"),
        ];
        for (a, b, want) in cases {
            assert_eq!(incr(a, b).as_deref(), Some(want), "{a} + {b}");
        }
        let big = incr("0", "1e400").unwrap();
        assert_eq!(big.len(), 401);
        assert!(big.starts_with("10000000000000000000281880683947586514586"));
    }

    #[test]
    fn refuses_what_strtold_refuses() {
        for bad in [
            "", " 1", "1 ", "abc", "nan", "1e", "1e+", "0x", ".", "-", "1e-5000", "1e5000", "0x1p",
            "1.2.3", "infin", "1,5",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        for good in [
            "0",
            ".5",
            "5.",
            "+1",
            "-inf",
            "INFINITY",
            "0e-99999999999",
            "1E3",
        ] {
            assert!(LongDouble::parse(good.as_bytes()).is_some(), "{good:?}");
        }
    }
}
