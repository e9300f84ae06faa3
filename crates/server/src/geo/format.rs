//! How Redis 7.0 prints geo values: distances with four decimals (addReplyDoubleDistance,
//! a bulk string in both protocols), coordinates as `long double`s in the "human" form
//! (addReplyHumanLongDouble: `%.17Lf` without trailing zeros; a bulk string in RESP2, a
//! double in RESP3), and coordinates in error messages with `%f`.

use super::hash::c_i64;
use crate::floatfmt::human_f64;
use resp::ReplyBuf;

/// fixedpoint_d2string(d, 4): `llrint(d * 10000)` written with four decimals.
pub fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    // llrint rounds half to even; NaN and out-of-range values give LLONG_MIN on x86-64.
    let svalue = c_i64((d * 10000.0).round_ties_even());
    let sign = if svalue < 0 { "-" } else { "" };
    let value = svalue.unsigned_abs();
    format!("{sign}{}.{:04}", value / 10000, value % 10000)
}

/// A distance reply.
pub fn reply_distance(out: &mut ReplyBuf, d: f64) {
    out.bulk(distance_text(d).as_bytes());
}

/// A coordinate reply.
pub fn reply_coord(out: &mut ReplyBuf, v: f64) {
    let text = if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        human_f64(v)
    };
    out.double_text(text.as_bytes());
}

/// A [longitude, latitude] pair reply.
pub fn reply_position(out: &mut ReplyBuf, xy: [f64; 2]) {
    out.array(2);
    reply_coord(out, xy[0]);
    reply_coord(out, xy[1]);
}

/// The error for coordinates beyond the limits (C's `%f` of each).
pub fn invalid_pair(lon: f64, lat: f64) -> String {
    format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(-0.0), "0.0000");
        assert_eq!(distance_text(0.775), "0.7750");
        assert_eq!(distance_text(0.005), "0.0050");
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.00005), "0.0000");
        assert_eq!(distance_text(f64::NAN), "-922337203685477.5808");
    }

    #[test]
    fn coordinates() {
        let mut out = ReplyBuf::new(resp::Proto::Resp2);
        reply_coord(&mut out, 13.361389338970184);
        assert_eq!(out.out, b"$20\r\n13.36138933897018433\r\n");
        let mut out = ReplyBuf::new(resp::Proto::Resp3);
        reply_coord(&mut out, -0.0);
        assert_eq!(out.out, b",0\r\n");
        // The exact decimal value rounded half to even at 17 decimals, as `%.17Lf`
        // (Rust's exact formatting rounds the same way), less trailing zeros.
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if !v.is_finite() {
                continue;
            }
            for v in [v, (v % 400.0) - 200.0, (x % 1_000_000) as f64 / 262144.0] {
                let exact = format!("{v:.17}");
                let mut want = exact
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string();
                if want == "-0" {
                    want = "0".to_string();
                }
                assert_eq!(human_f64(v), want, "{v:e}");
            }
        }
    }

    #[test]
    fn pair_error() {
        assert_eq!(
            invalid_pair(200.0078125, 1e3),
            "ERR invalid longitude,latitude pair 200.007812,1000.000000"
        );
    }
}
