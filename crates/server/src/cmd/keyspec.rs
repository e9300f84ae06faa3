//! Key specifications (Redis 7's `key_specs`) and key extraction from a command's
//! arguments, as COMMAND GETKEYS and COMMAND INFO use them.
//!
//! Follows Redis 7.0.15's getKeysUsingKeySpecs / getKeysFromCommandWithSpecs (db.c),
//! including the native "getkeys" procedures of the movable-keys commands.

use serde_json::Value as Json;

/// Key spec flags, in the order COMMAND INFO lists them.
pub const KEY_FLAG_NAMES: &[(&str, &str)] = &[
    ("RO", "RO"),
    ("RW", "RW"),
    ("OW", "OW"),
    ("RM", "RM"),
    ("ACCESS", "access"),
    ("UPDATE", "update"),
    ("INSERT", "insert"),
    ("DELETE", "delete"),
    ("NOT_KEY", "not_key"),
    ("INCOMPLETE", "incomplete"),
    ("VARIABLE_FLAGS", "variable_flags"),
];

pub const KEY_RO: u64 = 1 << 0;
pub const KEY_RW: u64 = 1 << 1;
pub const KEY_OW: u64 = 1 << 2;
pub const KEY_ACCESS: u64 = 1 << 4;
pub const KEY_UPDATE: u64 = 1 << 5;
pub const KEY_INSERT: u64 = 1 << 6;
pub const KEY_DELETE: u64 = 1 << 7;
pub const KEY_NOT_KEY: u64 = 1 << 8;
pub const KEY_INCOMPLETE: u64 = 1 << 9;
pub const KEY_VARIABLE_FLAGS: u64 = 1 << 10;

/// Where the search for keys starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BeginSearch {
    Index(i64),
    Keyword { keyword: String, startfrom: i64 },
    Unknown,
}

/// How keys are found from the start position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindKeys {
    Range {
        lastkey: i64,
        step: i64,
        limit: i64,
    },
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        step: i64,
    },
    Unknown,
}

#[derive(Clone, Debug)]
pub struct KeySpec {
    pub notes: Option<String>,
    pub flags: u64,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

/// Redis's native key-extraction procedures (`get_keys_function` in the command JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetKeysProc {
    /// (store key index, key count index, first key index, step) as genericGetKeys takes.
    Generic(usize, usize, usize, usize),
    Sort,
    SortRo,
    Migrate,
    Georadius,
    Xread,
    Set,
    Bitfield,
}

impl GetKeysProc {
    pub fn from_name(name: &str) -> Option<GetKeysProc> {
        use GetKeysProc::*;
        Some(match name {
            "sintercardGetKeys" | "zunionInterDiffGetKeys" | "lmpopGetKeys" | "zmpopGetKeys" => {
                Generic(0, 1, 2, 1)
            }
            "zunionInterDiffStoreGetKeys" => Generic(1, 2, 3, 1),
            "evalGetKeys" | "functionGetKeys" | "blmpopGetKeys" | "bzmpopGetKeys" => {
                Generic(0, 2, 3, 1)
            }
            "sortGetKeys" => Sort,
            "sortROGetKeys" => SortRo,
            "migrateGetKeys" => Migrate,
            "georadiusGetKeys" => Georadius,
            "xreadGetKeys" => Xread,
            "setGetKeys" => Set,
            "bitfieldGetKeys" => Bitfield,
            _ => return None,
        })
    }
}

fn flag_bits(names: Option<&Json>) -> u64 {
    let mut bits = 0;
    for n in names.and_then(Json::as_array).into_iter().flatten() {
        if let Some(i) = KEY_FLAG_NAMES
            .iter()
            .position(|(json, _)| Some(*json) == n.as_str())
        {
            bits |= 1 << i;
        }
    }
    bits
}

fn int(v: &Json, k: &str) -> i64 {
    v.get(k).and_then(Json::as_i64).unwrap_or(0)
}

impl KeySpec {
    pub fn parse(spec: &Json) -> KeySpec {
        let bs = spec.get("begin_search");
        let begin = if let Some(i) = bs.and_then(|b| b.get("index")) {
            BeginSearch::Index(int(i, "pos"))
        } else if let Some(k) = bs.and_then(|b| b.get("keyword")) {
            BeginSearch::Keyword {
                keyword: k
                    .get("keyword")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
                startfrom: int(k, "startfrom"),
            }
        } else {
            BeginSearch::Unknown
        };
        let fk = spec.get("find_keys");
        let find = if let Some(r) = fk.and_then(|f| f.get("range")) {
            FindKeys::Range {
                lastkey: int(r, "lastkey"),
                step: int(r, "step"),
                limit: int(r, "limit"),
            }
        } else if let Some(k) = fk.and_then(|f| f.get("keynum")) {
            FindKeys::Keynum {
                keynumidx: int(k, "keynumidx"),
                firstkey: int(k, "firstkey"),
                step: int(k, "step"),
            }
        } else {
            FindKeys::Unknown
        };
        KeySpec {
            notes: spec
                .get("notes")
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from),
            flags: flag_bits(spec.get("flags")),
            begin,
            find,
        }
    }
}

/// Names of the set bits of key-spec `flags`, in Redis's order.
pub fn key_flag_names(flags: u64) -> Vec<&'static str> {
    KEY_FLAG_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| flags & (1 << i) != 0)
        .map(|(_, (_, name))| *name)
        .collect()
}

/// A key found in a command: argument index and key-spec flags.
pub type KeyRef = (usize, u64);

/// getKeysUsingKeySpecs: `None` on an invalid or incomplete spec.
fn keys_from_specs(specs: &[KeySpec], argv: &[&[u8]]) -> Option<Vec<KeyRef>> {
    let argc = argv.len() as i64;
    let mut keys = Vec::new();
    for spec in specs {
        if spec.flags & KEY_NOT_KEY != 0 {
            continue;
        }
        let mut first = match &spec.begin {
            BeginSearch::Index(pos) => *pos,
            BeginSearch::Keyword { keyword, startfrom } => {
                let start = if *startfrom > 0 {
                    *startfrom
                } else {
                    argc + startfrom
                };
                let end = if *startfrom > 0 { argc - 1 } else { 1 };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            BeginSearch::Unknown => return None,
        };
        let (last, step) = match &spec.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if *lastkey >= 0 {
                    first + lastkey
                } else if *limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (last, *step)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                if *keynumidx >= argc {
                    return None;
                }
                let at = first + keynumidx;
                let n = argv
                    .get(at as usize)
                    .and_then(|a| engine::value::parse_strict_i64(a))
                    .filter(|n| *n >= 0)?;
                first += firstkey;
                // A count past the arguments (even near i64::MAX) is caught below.
                (first.saturating_add(n - 1), *step)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, spec.flags));
            i += step.max(1);
        }
        if spec.flags & KEY_INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

fn native_keys(proc_: GetKeysProc, argv: &[&[u8]]) -> Vec<KeyRef> {
    let argc = argv.len();
    let is = |i: usize, w: &str| argv[i].eq_ignore_ascii_case(w.as_bytes());
    match proc_ {
        GetKeysProc::Generic(store, count_at, first, step) => {
            let num = argv
                .get(count_at)
                .map(|a| super::args::c_atoi(a))
                .unwrap_or(0);
            if num < 1 || num > (argc as i64 - first as i64) / step as i64 {
                return Vec::new();
            }
            let mut keys: Vec<KeyRef> = (0..num as usize).map(|i| (first + i * step, 0)).collect();
            if store != 0 {
                keys.push((store, 0));
            }
            keys
        }
        GetKeysProc::SortRo => vec![(1, KEY_RO | KEY_ACCESS)],
        GetKeysProc::Sort => {
            let mut keys = vec![(1, KEY_RO | KEY_ACCESS)];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                } else if is(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            if let Some(s) = store {
                keys.push((s, KEY_OW | KEY_UPDATE));
            }
            keys
        }
        GetKeysProc::Migrate => {
            let (mut first, mut num) = (3, 1);
            if argc > 6 {
                let mut i = 6;
                while i < argc {
                    if is(i, "keys") {
                        if !argv[3].is_empty() {
                            num = 0;
                        } else {
                            first = i + 1;
                            num = argc - first;
                        }
                        break;
                    }
                    if is(i, "auth") {
                        i += 1;
                    } else if is(i, "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
            }
            (0..num)
                .map(|i| (first + i, KEY_RW | KEY_ACCESS | KEY_DELETE))
                .collect()
        }
        GetKeysProc::Georadius => {
            let mut stored = None;
            let mut i = 5;
            while i < argc {
                if (is(i, "store") || is(i, "storedist")) && i + 1 < argc {
                    stored = Some(i + 1);
                    i += 1;
                }
                i += 1;
            }
            let mut keys = vec![(1, 0)];
            if let Some(s) = stored {
                keys.push((s, 0));
            }
            keys
        }
        GetKeysProc::Xread => {
            let mut streams = None;
            let mut i = 1;
            while i < argc {
                if is(i, "block") || is(i, "count") {
                    i += 1;
                } else if is(i, "group") {
                    i += 2;
                } else if is(i, "noack") {
                } else if is(i, "streams") {
                    streams = Some(i);
                    break;
                } else {
                    break;
                }
                i += 1;
            }
            let Some(pos) = streams else {
                return Vec::new();
            };
            let num = argc - pos - 1;
            if num == 0 || !num.is_multiple_of(2) {
                return Vec::new();
            }
            (pos + 1..argc - num / 2).map(|i| (i, 0)).collect()
        }
        GetKeysProc::Set => {
            let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            let flags = if get {
                KEY_RW | KEY_ACCESS | KEY_UPDATE
            } else {
                KEY_OW | KEY_UPDATE
            };
            vec![(1, flags)]
        }
        GetKeysProc::Bitfield => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let rem = argc - i - 1;
                if is(i, "get") && rem >= 2 {
                    i += 2;
                } else if (is(i, "set") || is(i, "incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if is(i, "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly {
                KEY_RO | KEY_ACCESS
            } else {
                KEY_RW | KEY_ACCESS | KEY_UPDATE
            };
            vec![(1, flags)]
        }
    }
}

/// getKeysFromCommandWithSpecs: the keys of `argv` (argv[0] is the command name).
pub fn get_keys(specs: &[KeySpec], proc_: Option<GetKeysProc>, argv: &[&[u8]]) -> Vec<KeyRef> {
    let has_keyspec = specs.iter().any(|s| s.flags & KEY_NOT_KEY == 0);
    let has_varflags = specs.iter().any(|s| s.flags & KEY_VARIABLE_FLAGS != 0);
    if has_keyspec && !has_varflags {
        if let Some(keys) = keys_from_specs(specs, argv) {
            return keys;
        }
    }
    match proc_ {
        Some(p) => native_keys(p, argv),
        None => Vec::new(),
    }
}

/// doesCommandHaveKeys.
pub fn has_keys(specs: &[KeySpec], proc_: Option<GetKeysProc>) -> bool {
    proc_.is_some() || specs.iter().any(|s| s.flags & KEY_NOT_KEY == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Vec<KeySpec> {
        let v: Json = serde_json::from_str(json).unwrap();
        v.as_array().unwrap().iter().map(KeySpec::parse).collect()
    }

    #[test]
    fn range_and_keynum() {
        let mset = spec(
            r#"[{"flags":["OW","UPDATE"],"begin_search":{"index":{"pos":1}},"find_keys":{"range":{"lastkey":-1,"step":2,"limit":0}}}]"#,
        );
        let argv: Vec<&[u8]> = vec![b"mset", b"a", b"1", b"b", b"2"];
        let keys = get_keys(&mset, None, &argv);
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), vec![1, 3]);
        let eval = spec(
            r#"[{"flags":["RW"],"begin_search":{"index":{"pos":2}},"find_keys":{"keynum":{"keynumidx":0,"firstkey":1,"step":1}}}]"#,
        );
        let argv: Vec<&[u8]> = vec![b"eval", b"s", b"2", b"k1", b"k2", b"x"];
        let keys = get_keys(&eval, None, &argv);
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), vec![3, 4]);
        let argv: Vec<&[u8]> = vec![b"eval", b"s", b"9", b"k1"];
        assert!(get_keys(&eval, None, &argv).is_empty());
    }

    #[test]
    fn keyword_search() {
        let specs = spec(
            r#"[{"flags":["RO"],"begin_search":{"keyword":{"keyword":"STREAMS","startfrom":1}},"find_keys":{"range":{"lastkey":-1,"step":1,"limit":2}}}]"#,
        );
        let argv: Vec<&[u8]> = vec![b"xread", b"count", b"2", b"streams", b"a", b"b", b"0", b"0"];
        let keys = get_keys(&specs, None, &argv);
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), vec![4, 5]);
    }
}
