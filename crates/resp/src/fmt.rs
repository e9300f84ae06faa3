//! Number formatting exactly as Redis prints numbers.

/// C's `printf("%.17g", d)`.
pub fn fmt_g17(d: f64) -> String {
    fmt_g(d, 17)
}

/// C's `printf("%.<precision>g", d)` for finite values; `inf`, `-inf` and `nan` otherwise.
pub fn fmt_g(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let p = precision.max(1);
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // An integral value with at most `p` digits prints as that integer (no exponent, no
    // decimals): the common case of numbers passed from Lua scripts, without the
    // float formatting below. 10^p is exact as a double up to p = 22; i64 holds 10^18.
    if p <= 18 && d.fract() == 0.0 && d.abs() < 10u64.pow(p as u32) as f64 {
        return (d as i64).to_string();
    }
    fmt_g_general(d, p)
}

/// `%.<p>g` of a finite non-zero `d` by way of its scientific form.
fn fmt_g_general(d: f64, p: usize) -> String {
    // Scientific form rounded to p significant digits gives the exponent %g decides on.
    let sci = format!("{:.*e}", p - 1, d);
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", m, sign, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, d)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Append `s` quoted as Redis's sdscatrepr does.
pub fn cat_repr(o: &mut Vec<u8>, s: &[u8]) {
    o.push(b'"');
    for &c in s {
        match c {
            b'\\' => o.extend_from_slice(b"\\\\"),
            b'"' => o.extend_from_slice(b"\\\""),
            b'\n' => o.extend_from_slice(b"\\n"),
            b'\r' => o.extend_from_slice(b"\\r"),
            b'\t' => o.extend_from_slice(b"\\t"),
            7 => o.extend_from_slice(b"\\a"),
            8 => o.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => o.push(c),
            c => o.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    o.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17() {
        assert_eq!(fmt_g17(1.5), "1.5");
        assert_eq!(fmt_g17(0.1), "0.10000000000000001");
        assert_eq!(fmt_g17(1e20), "1e+20");
        assert_eq!(fmt_g17(123456.0), "123456");
        assert_eq!(fmt_g17(1e-5), "1.0000000000000001e-05");
        assert_eq!(fmt_g17(-2.0), "-2");
        assert_eq!(fmt_g(1.23456, 5), "1.2346");
        assert_eq!(fmt_g17(1e17), "1e+17");
        assert_eq!(fmt_g17(12345678901234567.0), "12345678901234568");
        assert_eq!(fmt_g(100.0, 2), "1e+02");
        assert_eq!(fmt_g(99.0, 2), "99");
    }

    /// The integer shortcut prints what the general path prints.
    #[test]
    fn integral_shortcut_agrees() {
        let mut values = vec![1.0, 7.0, 100.0, 65535.0, 4294967296.0, 9007199254740993.0];
        let mut x = 1.0f64;
        for _ in 0..63 {
            values.extend([x, x - 1.0, x + 1.0, x * 10.0 - 1.0]);
            x *= 2.0;
        }
        for p in 1..=18 {
            for &v in &values {
                for d in [v, -v] {
                    if d != 0.0 && d.fract() == 0.0 {
                        assert_eq!(fmt_g(d, p), fmt_g_general(d, p), "{d} at {p}");
                    }
                }
            }
        }
    }
}
