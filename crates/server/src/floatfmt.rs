//! Float text as Redis prints it for INCRBYFLOAT (ld2string with LD_STR_HUMAN:
//! `%.17Lf`, trailing zeros removed).

/// Human-friendly text of `v`.
pub fn long_double_human(v: f64) -> String {
    let s = format!("{v:.17}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}
