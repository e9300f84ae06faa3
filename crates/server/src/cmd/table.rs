//! The command table, built at start from Redis 7.0.15's command JSON (embedded by
//! `build.rs`) joined with the handlers Skein implements.
//!
//! A command is in the table only if Skein has a handler for it: an unknown command gets
//! Redis's "unknown command" error, never a placeholder reply.

use super::Handler;
use crate::stats::CmdCounters;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;

static COMMANDS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/commands.json"));

/// Command flags the dispatcher checks (the full list is kept as text for COMMAND INFO).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    pub write: bool,
    pub readonly: bool,
    pub denyoom: bool,
    pub admin: bool,
    pub noscript: bool,
    pub loading: bool,
    pub stale: bool,
    pub no_auth: bool,
    pub fast: bool,
    pub no_multi: bool,
    pub pubsub: bool,
    pub blocking: bool,
    pub protected: bool,
}

/// Legacy (first, last, step) key positions, as COMMAND INFO and GETKEYS use them.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyRange {
    pub first: i64,
    pub last: i64,
    pub step: i64,
}

/// One command or subcommand.
pub struct CommandDef {
    /// Lowercase full name: `get`, `client|kill`.
    pub fullname: String,
    /// Lowercase own name: `get`, `kill`.
    pub name: String,
    pub arity: i64,
    pub flags: Flags,
    /// The JSON definition, for COMMAND INFO/DOCS.
    pub spec: Json,
    pub legacy_keys: KeyRange,
    pub movable_keys: bool,
    pub handler: Option<Handler>,
    pub subcommands: HashMap<String, Arc<CommandDef>>,
    /// Per-worker counters (INFO commandstats), one padded slot per worker plus one.
    pub counters: Box<[CmdCounters]>,
    /// Index in [`CommandTable::all`].
    pub id: usize,
}

impl CommandDef {
    pub fn is_container(&self) -> bool {
        !self.subcommands.is_empty()
    }

    /// Does `argc` satisfy the arity?
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        (a > 0 && argc as i64 == a) || (a < 0 && argc as i64 >= -a)
    }

    /// Flag names as Redis lists them (lowercase), for COMMAND INFO.
    pub fn flag_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .spec
            .get("command_flags")
            .and_then(Json::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Json::as_str)
                    .map(|s| s.to_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        if self.movable_keys {
            v.push("movablekeys".to_string());
        }
        v
    }

    pub fn group(&self) -> &str {
        self.spec
            .get("group")
            .and_then(Json::as_str)
            .unwrap_or("generic")
    }
}

pub struct CommandTable {
    by_name: HashMap<String, Arc<CommandDef>>,
    /// Every command and subcommand, by id.
    pub all: Vec<Arc<CommandDef>>,
}

fn flags_of(spec: &Json) -> Flags {
    let mut f = Flags::default();
    for s in spec
        .get("command_flags")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
    {
        match s {
            "WRITE" => f.write = true,
            "READONLY" => f.readonly = true,
            "DENYOOM" => f.denyoom = true,
            "ADMIN" => f.admin = true,
            "NOSCRIPT" => f.noscript = true,
            "LOADING" => f.loading = true,
            "STALE" => f.stale = true,
            "NO_AUTH" => f.no_auth = true,
            "FAST" => f.fast = true,
            "NO_MULTI" => f.no_multi = true,
            "PUBSUB" => f.pubsub = true,
            "BLOCKING" => f.blocking = true,
            "PROTECTED" => f.protected = true,
            _ => {}
        }
    }
    f
}

/// Redis's populateCommandLegacyRangeSpec: the (first, last, step) triple derived from the
/// key specs, and whether keys are "movable" (not describable that way).
fn legacy_range(spec: &Json) -> (KeyRange, bool) {
    let specs = spec
        .get("key_specs")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let mut range = KeyRange::default();
    let mut movable = spec.get("get_keys_function").is_some();
    let mut prev_last: Option<i64> = None;
    for ks in &specs {
        let bs_index = ks
            .get("begin_search")
            .and_then(|b| b.get("index"))
            .and_then(|i| i.get("pos"))
            .and_then(Json::as_i64);
        let fk_range = ks.get("find_keys").and_then(|f| f.get("range"));
        let (Some(pos), Some(r)) = (bs_index, fk_range) else {
            movable = true;
            continue;
        };
        let lastkey = r.get("lastkey").and_then(Json::as_i64).unwrap_or(0);
        let step = r.get("step").and_then(Json::as_i64).unwrap_or(1);
        let limit = r.get("limit").and_then(Json::as_i64).unwrap_or(0);
        if limit != 0 {
            movable = true;
            continue;
        }
        let last = if lastkey < 0 { lastkey } else { pos + lastkey };
        if range.first == 0 {
            range = KeyRange {
                first: pos,
                last,
                step,
            };
        } else if range.step == step && prev_last.is_some_and(|pl| pl >= 0 && pl + step == pos) {
            range.last = last;
        } else {
            movable = true;
        }
        prev_last = Some(last);
    }
    (range, movable)
}

impl CommandTable {
    /// Build from the embedded JSON and the handlers of [`super::handlers`].
    /// `workers` sizes the per-worker counters.
    pub fn load(workers: usize) -> CommandTable {
        Self::with_handlers(super::handlers(), workers + 1)
    }

    pub fn with_handlers(handlers: HashMap<&'static str, Handler>, workers: usize) -> CommandTable {
        let doc: Json = serde_json::from_str(COMMANDS_JSON).expect("embedded command JSON");
        let mut all = Vec::new();
        let mut by_name = HashMap::new();
        let obj = doc.as_object().expect("object");
        let mut names: Vec<&String> = obj.keys().collect();
        names.sort();
        for name in names {
            let spec = &obj[name];
            let mut subs = HashMap::new();
            if let Some(subspecs) = spec.get("subcommands").and_then(Json::as_object) {
                let mut subnames: Vec<&String> = subspecs.keys().collect();
                subnames.sort();
                for sub in subnames {
                    let full = format!("{name}|{sub}");
                    let Some(&h) = handlers.get(full.as_str()) else {
                        continue;
                    };
                    let def = Arc::new(make_def(
                        full,
                        sub.clone(),
                        &subspecs[sub],
                        Some(h),
                        HashMap::new(),
                        all.len(),
                        workers,
                    ));
                    all.push(def.clone());
                    subs.insert(sub.clone(), def);
                }
            }
            let handler = handlers.get(name.as_str()).copied();
            if handler.is_none() && subs.is_empty() {
                continue;
            }
            let mut spec = spec.clone();
            if let Some(o) = spec.as_object_mut() {
                o.remove("subcommands");
            }
            let def = Arc::new(make_def(
                name.clone(),
                name.clone(),
                &spec,
                handler,
                subs,
                all.len(),
                workers,
            ));
            all.push(def.clone());
            by_name.insert(name.clone(), def);
        }
        CommandTable { by_name, all }
    }

    /// Look up a top-level command by name (any case).
    pub fn get(&self, name: &[u8]) -> Option<&Arc<CommandDef>> {
        let mut buf = [0u8; 32];
        if name.len() <= buf.len() {
            for (d, s) in buf.iter_mut().zip(name) {
                *d = s.to_ascii_lowercase();
            }
            let lower = std::str::from_utf8(&buf[..name.len()]).ok()?;
            self.by_name.get(lower)
        } else {
            None
        }
    }

    /// Redis's lookupCommand: the subcommand when the command is a container and an
    /// argument follows, else the command itself. `None` when unknown.
    pub fn lookup(&self, argv: &[&[u8]]) -> Option<&Arc<CommandDef>> {
        let base = self.get(argv.first()?)?;
        if argv.len() == 1 || !base.is_container() {
            return Some(base);
        }
        let sub = String::from_utf8_lossy(argv[1]).to_lowercase();
        base.subcommands.get(&sub)
    }

    /// Top-level commands, sorted by name.
    pub fn top_level(&self) -> Vec<&Arc<CommandDef>> {
        let mut v: Vec<_> = self.by_name.values().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

fn make_def(
    fullname: String,
    name: String,
    spec: &Json,
    handler: Option<Handler>,
    subcommands: HashMap<String, Arc<CommandDef>>,
    id: usize,
    slots: usize,
) -> CommandDef {
    let (legacy_keys, movable_keys) = legacy_range(spec);
    CommandDef {
        fullname,
        name,
        arity: spec.get("arity").and_then(Json::as_i64).unwrap_or(0),
        flags: flags_of(spec),
        spec: spec.clone(),
        legacy_keys,
        movable_keys,
        handler,
        subcommands,
        counters: (0..slots).map(|_| CmdCounters::default()).collect(),
        id,
    }
}
