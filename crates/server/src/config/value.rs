//! Parsing and printing of option values, kind by kind, with Redis's reason texts.
//! A value is kept as its canonical text: exactly what CONFIG GET prints.

use super::table::{EnumWords, Kind, NumFmt, OptionDef, Special, MULTI_ARG};

/// A validity check run on a new value (Redis's `is_valid_fn`); gets the raw string for
/// string options and the canonical text for bool and enum options.
pub type Check = fn(&str) -> Result<(), String>;

/// Redis's `memtoull`: digits then an optional unit (b, k, kb, m, mb, g, gb, any case).
/// Overflow saturates and the unit multiplies with wrap-around, as in C.
pub fn memtoull(s: &str) -> Option<u64> {
    if s.starts_with('-') {
        return None;
    }
    let digits_end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let mul: u64 = match s[digits_end..].to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits_end >= 128 {
        return None;
    }
    let val = s[..digits_end].bytes().fold(0u64, |acc, d| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .unwrap_or(u64::MAX)
    });
    Some(val.wrapping_mul(mul))
}

/// C's `strtoll(s, &end, base)` requiring `*end == '\0'` and no overflow.
pub fn strtoll_full(s: &str, base: u32) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        // No conversion: end points at the start, fine only for an empty string.
        return if t.is_empty() { Some(0) } else { None };
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        v = v * base as i128 + c.to_digit(base)? as i128;
        if v > i64::MAX as i128 + 1 {
            return None;
        }
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

fn yes_no(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("yes") {
        Some(true)
    } else if s.eq_ignore_ascii_case("no") {
        Some(false)
    } else {
        None
    }
}

/// Redis's `configEnumGetValue`.
pub fn enum_value(words: EnumWords, args: &[String], bitflags: bool) -> Option<i32> {
    if args.is_empty() || (!bitflags && args.len() != 1) {
        return None;
    }
    let mut values = 0;
    for a in args {
        let mut matched = false;
        for (w, v) in words {
            if a.eq_ignore_ascii_case(w) {
                values |= v;
                matched = true;
            }
        }
        if !matched {
            return None;
        }
    }
    Some(values)
}

/// Redis's `configEnumGetName`.
pub fn enum_name(words: EnumWords, values: i32, bitflags: bool) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut unmatched = values;
    for (w, v) in words {
        if values == *v {
            return w.to_string();
        }
        if bitflags && *v != 0 && *v == (unmatched & v) {
            names.push(w);
            unmatched &= !v;
        }
    }
    if names.is_empty() || unmatched != 0 {
        return "unknown".to_string();
    }
    names.join(" ")
}

fn enum_error(words: EnumWords) -> String {
    let list: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let mut msg = format!(
        "argument(s) must be one of the following: {}",
        list.join(", ")
    );
    msg.truncate(255);
    msg
}

/// Redis's `numericParseString`: the C `long long` a string stands for.
fn parse_number(fmt: NumFmt, s: &str) -> Result<i64, &'static str> {
    if matches!(fmt, NumFmt::Mem | NumFmt::MemPercent) {
        if let Some(v) = memtoull(s) {
            return Ok(v as i64);
        }
    }
    if fmt == NumFmt::MemPercent && s.len() > 1 && s.ends_with('%') {
        if let Some(v) = engine::value::parse_strict_i64(&s.as_bytes()[..s.len() - 1]) {
            if v >= 0 {
                return Ok(-v);
            }
        }
    }
    if fmt == NumFmt::Octal {
        if let Some(v) = strtoll_full(s, 8) {
            return Ok(v);
        }
    }
    if fmt == NumFmt::Int {
        if let Some(v) = engine::value::parse_strict_i64(s.as_bytes()) {
            return Ok(v);
        }
    }
    Err(match fmt {
        NumFmt::MemPercent => "argument must be a memory or percent value",
        NumFmt::Mem => "argument must be a memory value",
        NumFmt::Octal => "argument couldn't be parsed as an octal number",
        NumFmt::Int => "argument couldn't be parsed into an integer",
    })
}

/// Redis's `numericBoundaryCheck`.
fn check_bounds(v: i64, min: i64, max: i64, unsigned: bool, fmt: NumFmt) -> Result<(), String> {
    if unsigned {
        let (uv, lo, hi) = (v as u64, min as u64, max as u64);
        if uv > hi || uv < lo {
            return Err(if fmt == NumFmt::Octal {
                format!("argument must be between {lo:o} and {hi:o} inclusive")
            } else {
                format!("argument must be between {lo} and {hi} inclusive")
            });
        }
    } else if fmt == NumFmt::MemPercent && v < 0 {
        if v < min {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                -min
            ));
        }
    } else if v > max || v < min {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(())
}

/// How CONFIG GET prints a number.
pub fn format_number(v: i64, fmt: NumFmt) -> String {
    match fmt {
        NumFmt::MemPercent if v < 0 => format!("{}%", -(v as i128)),
        NumFmt::Mem | NumFmt::MemPercent => (v as u64).to_string(),
        NumFmt::Octal => format!("{:o}", v as u64),
        NumFmt::Int => v.to_string(),
    }
}

/// Read back a canonical number (inverse of [`format_number`]).
pub fn canonical_number(s: &str, fmt: NumFmt) -> i64 {
    if let Some(p) = s.strip_suffix('%') {
        return -p.parse::<i64>().unwrap_or(0);
    }
    match fmt {
        NumFmt::Octal => i64::from_str_radix(s, 8).unwrap_or(0),
        NumFmt::Mem | NumFmt::MemPercent => s.parse::<u64>().map(|v| v as i64).unwrap_or(0),
        NumFmt::Int => s.parse().unwrap_or(0),
    }
}

/// The canonical text of an option's default value.
pub fn default_text(def: &OptionDef) -> String {
    match def.kind {
        Kind::Bool { default, .. } => if default { "yes" } else { "no" }.to_string(),
        Kind::Str { default, .. } => default.unwrap_or("").to_string(),
        Kind::Enum { words, default, .. } => enum_name(words, default, def.has(MULTI_ARG)),
        Kind::Num { default, fmt, .. } => format_number(default, fmt),
        Kind::Special(sp) => match sp {
            Special::Dir => String::new(),
            Special::Save => "3600 1 300 100 60 10000".to_string(),
            Special::ClientOutputBufferLimit => format_obuf(&OBUF_DEFAULTS),
            Special::OomScoreAdjValues => "0 200 800".to_string(),
            Special::NotifyKeyspaceEvents => String::new(),
            Special::Bind => "* -::*".to_string(),
            Special::ReplicaOf => String::new(),
            Special::LatencyPercentiles => "50 99 99.9".to_string(),
        },
    }
}

/// Check `args` for `def` and return the new canonical value. `current` is the value now
/// (client-output-buffer-limit changes only the classes it names).
pub fn parse(def: &OptionDef, args: &[String], current: &str) -> Result<String, String> {
    match def.kind {
        Kind::Bool { check, .. } => {
            let b = yes_no(&args[0]).ok_or("argument must be 'yes' or 'no'")?;
            let v = if b { "yes" } else { "no" };
            if let Some(c) = check {
                c(v)?;
            }
            Ok(v.to_string())
        }
        Kind::Str { check, .. } => {
            if let Some(c) = check {
                c(&args[0])?;
            }
            Ok(args[0].clone())
        }
        Kind::Enum { words, check, .. } => {
            let bitflags = def.has(MULTI_ARG);
            let v = enum_value(words, args, bitflags).ok_or_else(|| enum_error(words))?;
            let name = enum_name(words, v, bitflags);
            if let Some(c) = check {
                c(&name)?;
            }
            Ok(name)
        }
        Kind::Num {
            min,
            max,
            unsigned,
            fmt,
            ..
        } => {
            let v = parse_number(fmt, &args[0])?;
            check_bounds(v, min, max, unsigned, fmt)?;
            Ok(format_number(v, fmt))
        }
        Kind::Special(sp) => parse_special(sp, args, current),
    }
}

fn parse_special(sp: Special, args: &[String], current: &str) -> Result<String, String> {
    const WRONG_ARGS: &str = "wrong number of arguments";
    match sp {
        Special::Dir => {
            if args.len() != 1 {
                return Err(WRONG_ARGS.into());
            }
            std::env::set_current_dir(&args[0]).map_err(|e| strerror(&e))?;
            Ok(current_dir())
        }
        Special::Save => parse_save(args),
        Special::ClientOutputBufferLimit => parse_obuf(args, current),
        Special::OomScoreAdjValues => {
            if args.len() != 3 {
                return Err(WRONG_ARGS.into());
            }
            let mut out = Vec::new();
            for a in args {
                match strtoll_full(a, 10) {
                    Some(v) if (-2000..=2000).contains(&v) => out.push(v.to_string()),
                    _ => return Err(
                        "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
                            .into(),
                    ),
                }
            }
            Ok(out.join(" "))
        }
        Special::NotifyKeyspaceEvents => {
            if args.len() != 1 {
                return Err(WRONG_ARGS.into());
            }
            let flags = keyspace_events_flags(&args[0])
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(keyspace_events_stored(flags))
        }
        Special::Bind => {
            if args.len() > 16 {
                return Err("Too many bind addresses specified.".into());
            }
            if args.len() == 1 && args[0].is_empty() {
                return Ok(String::new());
            }
            Ok(args.join(" "))
        }
        Special::ReplicaOf => {
            if args.len() != 2 {
                return Err(WRONG_ARGS.into());
            }
            if args[0].eq_ignore_ascii_case("no") && args[1].eq_ignore_ascii_case("one") {
                return Ok(String::new());
            }
            match strtoll_full(&args[1], 10) {
                Some(p) if (0..=65535).contains(&p) => Ok(format!("{} {}", args[0], p)),
                _ => Err("Invalid master port".into()),
            }
        }
        Special::LatencyPercentiles => {
            if args.len() == 1 && args[0].is_empty() {
                return Ok(String::new());
            }
            let mut out = Vec::new();
            for a in args {
                let p = crate::cmd::args::parse_f64(a.as_bytes())
                    .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                if !(0.0..=100.0).contains(&p) {
                    return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                }
                out.push(trim_double(&format!("{p:.6}")));
            }
            Ok(out.join(" "))
        }
    }
}

/// Redis's `trimDoubleString`: drop trailing zeros (and the dot) of a "%f" number.
pub fn trim_double(s: &str) -> String {
    if !s.contains('.') {
        return s.to_string();
    }
    let t = s.trim_end_matches('0');
    t.strip_suffix('.').unwrap_or(t).to_string()
}

fn parse_save(args: &[String]) -> Result<String, String> {
    const BAD: &str = "Invalid save parameters";
    let args: &[String] = if args.len() == 1 && args[0].is_empty() {
        &[]
    } else {
        args
    };
    if args.len() % 2 == 1 {
        return Err(BAD.into());
    }
    let mut out = Vec::new();
    for pair in args.chunks(2) {
        let secs = strtoll_full(&pair[0], 10).filter(|v| *v >= 1).ok_or(BAD)?;
        let changes = strtoll_full(&pair[1], 10).filter(|v| *v >= 0).ok_or(BAD)?;
        out.push(format!("{} {}", secs, changes as i32));
    }
    Ok(out.join(" "))
}

/// One client class's output buffer limits: hard bytes, soft bytes, soft seconds.
pub type ObufLimit = (u64, u64, i64);
pub const OBUF_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];
pub const OBUF_DEFAULTS: [ObufLimit; 3] = [
    (0, 0, 0),
    (256 << 20, 64 << 20, 60),
    (32 << 20, 8 << 20, 60),
];

pub fn format_obuf(limits: &[ObufLimit; 3]) -> String {
    let parts: Vec<String> = OBUF_CLASSES
        .iter()
        .zip(limits)
        .map(|(c, (h, s, secs))| format!("{c} {h} {s} {secs}"))
        .collect();
    parts.join(" ")
}

/// The limits in a canonical client-output-buffer-limit value.
pub fn read_obuf(canonical: &str) -> [ObufLimit; 3] {
    let w: Vec<&str> = canonical.split(' ').collect();
    let mut out = OBUF_DEFAULTS;
    for (i, chunk) in w.chunks(4).enumerate().take(3) {
        if let [_, h, s, secs] = chunk {
            out[i] = (
                h.parse().unwrap_or(0),
                s.parse().unwrap_or(0),
                secs.parse().unwrap_or(0),
            );
        }
    }
    out
}

fn parse_obuf(args: &[String], current: &str) -> Result<String, String> {
    if !args.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut limits = read_obuf(current);
    let mut new = Vec::new();
    for chunk in args.chunks(4) {
        let class = match chunk[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = memtoull(&chunk[1]);
        let soft = memtoull(&chunk[2]);
        let secs = strtoll_full(&chunk[3], 10).map(|v| v as i32 as i64);
        match (hard, soft, secs) {
            (Some(h), Some(s), Some(secs)) if secs >= 0 => new.push((class, (h, s, secs))),
            _ => {
                return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                )
            }
        }
    }
    for (class, l) in new {
        limits[class] = l;
    }
    Ok(format_obuf(&limits))
}

// Redis's notification class bits are the engine's event classes.
use engine::event::class;
const NOTIFY_KEYSPACE: i32 = class::KEYSPACE as i32;
const NOTIFY_KEYEVENT: i32 = class::KEYEVENT as i32;
const NOTIFY_KEY_MISS: i32 = class::KEY_MISS as i32;
/// Class letters and their flags, in the order Redis prints them.
const NOTIFY_CLASSES: &[(char, u16)] = &[
    ('g', class::GENERIC),
    ('$', class::STRING),
    ('l', class::LIST),
    ('s', class::SET),
    ('h', class::HASH),
    ('z', class::ZSET),
    ('x', class::EXPIRED),
    ('e', class::EVICTED),
    ('t', class::STREAM),
    ('d', class::MODULE),
    ('n', class::NEW),
];
/// 'A': every class but 'n' (new) and 'm' (miss).
const NOTIFY_ALL: i32 = class::ALL as i32;

/// Redis's `keyspaceEventsStringToFlags`.
pub fn keyspace_events_flags(s: &str) -> Option<i32> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => NOTIFY_ALL,
            'K' => NOTIFY_KEYSPACE,
            'E' => NOTIFY_KEYEVENT,
            'm' => NOTIFY_KEY_MISS,
            _ => i32::from(NOTIFY_CLASSES.iter().find(|(l, _)| *l == c)?.1),
        };
    }
    Some(flags)
}

/// The flags as stored: Redis's text, plus the `n` that text drops next to `A` (so the
/// stored value keeps every flag; CONFIG GET shows Redis's text).
pub fn keyspace_events_stored(flags: i32) -> String {
    let mut s = keyspace_events_string(flags);
    let new = i32::from(class::NEW);
    if flags & NOTIFY_ALL == NOTIFY_ALL && flags & new != 0 {
        s.push('n');
    }
    s
}

/// Redis's `keyspaceEventsFlagsToString` (CONFIG GET's text: `n` is dropped after `A`).
pub fn keyspace_events_string(flags: i32) -> String {
    let mut s = String::new();
    if flags & NOTIFY_ALL == NOTIFY_ALL {
        s.push('A');
    } else {
        for (c, f) in NOTIFY_CLASSES {
            if flags & i32::from(*f) != 0 {
                s.push(*c);
            }
        }
    }
    for (c, f) in [
        ('K', NOTIFY_KEYSPACE),
        ('E', NOTIFY_KEYEVENT),
        ('m', NOTIFY_KEY_MISS),
    ] {
        if flags & f != 0 {
            s.push(c);
        }
    }
    s
}

/// The process's current directory, as CONFIG GET dir prints it.
pub fn current_dir() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// C's strerror text for an I/O error (without Rust's " (os error N)").
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Redis's validity checks for particular options.
pub mod check {
    pub fn active_defrag(v: &str) -> Result<(), String> {
        if v == "yes" {
            return Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into());
        }
        Ok(())
    }

    fn is_base_name(v: &str) -> bool {
        !v.contains('/') && !v.contains('\\')
    }

    pub fn db_filename(v: &str) -> Result<(), String> {
        if !is_base_name(v) {
            return Err("dbfilename can't be a path, just a filename".into());
        }
        Ok(())
    }

    /// A non-empty base name (`what` is the option, `kind` "filename" or "dirname").
    fn non_empty_base(v: &str, what: &str, kind: &str) -> Result<(), String> {
        if v.is_empty() {
            return Err(format!("{what} can't be empty"));
        }
        if !is_base_name(v) {
            return Err(format!("{what} can't be a path, just a {kind}"));
        }
        Ok(())
    }

    pub fn aof_filename(v: &str) -> Result<(), String> {
        non_empty_base(v, "appendfilename", "filename")
    }

    pub fn aof_dirname(v: &str) -> Result<(), String> {
        non_empty_base(v, "appenddirname", "dirname")
    }

    pub fn hostname(v: &str) -> Result<(), String> {
        if v.len() >= 256 {
            return Err("Hostnames must be less than 256 characters".into());
        }
        if !v
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
        {
            return Err(
                "Hostnames may only contain alphanumeric characters, hyphens or dots".into(),
            );
        }
        Ok(())
    }

    /// Redis's `validateProcTitleTemplate`: known `{variables}` only, and the expansion
    /// (with an empty title) must not be blank.
    pub fn proc_title(v: &str) -> Result<(), String> {
        const BAD: &str = "template format is invalid or contains unknown variables";
        let mut out = String::new();
        let mut rest = v;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            if after.is_empty() {
                return Err(BAD.into());
            }
            if let Some(r) = after.strip_prefix('{') {
                out.push('{');
                rest = r;
                continue;
            }
            let close = after.find('}').ok_or(BAD)?;
            match &after[..close] {
                "title" | "server-mode" | "unixsocket" => {}
                "listen-addr" | "config-file" | "port" | "tls-port" => out.push('x'),
                _ => return Err(BAD.into()),
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        if out.trim_matches(' ').is_empty() {
            return Err(BAD.into());
        }
        Ok(())
    }

    pub fn shutdown_flags(v: &str) -> Result<(), String> {
        let words: Vec<&str> = v.split(' ').collect();
        if words.contains(&"save") && words.contains(&"nosave") {
            return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(memtoull("1gb"), Some(1 << 30));
        assert_eq!(memtoull("1K"), Some(1000));
        assert_eq!(memtoull("1Kb"), Some(1024));
        assert_eq!(memtoull("512"), Some(512));
        assert_eq!(memtoull("kb"), Some(0));
        assert_eq!(memtoull("-1"), None);
        assert_eq!(memtoull("1.5gb"), None);
        assert_eq!(memtoull("99999999999999999999999"), Some(u64::MAX));
    }

    #[test]
    fn keyspace_events_round_trip() {
        assert_eq!(
            keyspace_events_string(keyspace_events_flags("KEA").unwrap()),
            "AKE"
        );
        assert_eq!(
            keyspace_events_string(keyspace_events_flags("Kx").unwrap()),
            "xK"
        );
        assert_eq!(keyspace_events_flags("Q"), None);
    }

    #[test]
    fn enum_names() {
        use super::super::table::SHUTDOWN_ON_SIG;
        assert_eq!(enum_name(SHUTDOWN_ON_SIG, 6, true), "nosave now");
        assert_eq!(enum_name(SHUTDOWN_ON_SIG, 0, true), "default");
    }

    #[test]
    fn octal_and_strtoll() {
        assert_eq!(strtoll_full("777", 8), Some(511));
        assert_eq!(strtoll_full("", 8), Some(0));
        assert_eq!(strtoll_full("8", 8), None);
        assert_eq!(strtoll_full(" -12", 10), Some(-12));
    }
}
