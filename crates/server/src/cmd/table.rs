//! The command table, built at start from Redis 7.0.15's command JSON (embedded by
//! `build.rs`) joined with the handlers Skein implements.
//!
//! A command is in the table only if Skein has a handler for it: an unknown command gets
//! Redis's "unknown command" error, never a placeholder reply.

use super::keyspec::{self, BeginSearch, FindKeys, GetKeysProc, KeyRef, KeySpec};
use super::name_index::NameIndex;
use super::Handler;
use crate::stats::CmdCounters;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;

static COMMANDS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/commands.json"));

/// Command flags the dispatcher checks (the full set is in [`CommandDef::flag_bits`]).
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
    pub skip_slowlog: bool,
    pub skip_monitor: bool,
    /// May propagate a write (PUBLISH...): a write for read-only scripts.
    pub may_replicate: bool,
}

/// Command flags: (JSON name, name COMMAND INFO shows, or "" when Redis hides it), in the
/// order COMMAND INFO lists them. `MOVABLEKEYS` is derived from the key specs.
pub const FLAG_NAMES: &[(&str, &str)] = &[
    ("WRITE", "write"),
    ("READONLY", "readonly"),
    ("DENYOOM", "denyoom"),
    ("MODULE", "module"),
    ("ADMIN", "admin"),
    ("PUBSUB", "pubsub"),
    ("NOSCRIPT", "noscript"),
    ("BLOCKING", "blocking"),
    ("LOADING", "loading"),
    ("STALE", "stale"),
    ("SKIP_MONITOR", "skip_monitor"),
    ("SKIP_SLOWLOG", "skip_slowlog"),
    ("ASKING", "asking"),
    ("FAST", "fast"),
    ("NO_AUTH", "no_auth"),
    ("NO_MANDATORY_KEYS", "no_mandatory_keys"),
    ("NO_ASYNC_LOADING", "no_async_loading"),
    ("NO_MULTI", "no_multi"),
    ("MOVABLEKEYS", "movablekeys"),
    ("ALLOW_BUSY", "allow_busy"),
    ("MAY_REPLICATE", ""),
    ("SENTINEL", ""),
    ("ONLY_SENTINEL", ""),
    ("PROTECTED", ""),
    ("TOUCHES_ARBITRARY_KEYS", ""),
];

/// ACL categories in Redis's order (ACLCommandCategories in acl.c).
pub const ACL_CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

fn flag_bit(name: &str) -> u64 {
    FLAG_NAMES
        .iter()
        .position(|(n, _)| *n == name)
        .map_or(0, |i| 1 << i)
}

/// The bit of ACL category `name` (lowercase, without `@`), 0 if unknown.
pub fn acl_category_bit(name: &str) -> u64 {
    ACL_CATEGORIES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map_or(0, |i| 1 << i)
}

/// How the dispatcher locks for a command. Most commands lock the keys their key specs
/// name; [`LOCK_RULES`] lists the ones that touch more than that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockRule {
    /// No keyspace access.
    None,
    /// The keys the key specs name, in the client's database.
    Keys,
    /// Walks the client's database a shard at a time (KEYS, SCAN, RANDOMKEY, DBSIZE).
    WalkDb,
    /// Walks every database a shard at a time (INFO's keyspace section).
    WalkAll,
    /// Holds every shard of the client's database (FLUSHDB).
    WholeDb,
    /// Holds every shard of every database (FLUSHALL, SWAPDB, SAVE, SHUTDOWN).
    AllDbs,
    /// Keys in the client's database and in a database named by an argument (MOVE,
    /// COPY ... DB n).
    CrossDb,
    /// DEBUG OBJECT's and DIGEST-VALUE's keys; every shard for DEBUG RELOAD; nothing up
    /// front for DEBUG POPULATE (it locks its keys a batch at a time; the whole database
    /// inside EXEC) and DIGEST (a walk of every database; every shard inside EXEC).
    DebugObject,
    /// Every argument after the name is a key (PFMERGE: its key specs name no key at all
    /// when it has no source, as in Redis, yet it writes its destination).
    AllArgs,
    /// EXEC: the union of its queued commands' needs and the watched keys.
    Transaction,
    /// GEORADIUS/GEORADIUSBYMEMBER: the key specs' keys and the argument after every
    /// STORE or STOREDIST word (Redis stores into the last one; the key specs name the
    /// first).
    GeoStore,
    /// SORT / SORT_RO: the client's whole database when BY or GET patterns look keys up
    /// (keys only the data names), otherwise the sorted key and the STORE destination as
    /// SORT's own parser finds them (`cmd::sort::keys_needed`).
    Sort,
    /// SHUTDOWN: every shard of every database for its final save; nothing with NOSAVE
    /// (which must go through while a busy script holds shards).
    Shutdown,
    /// EVAL/EVALSHA: the declared keys, or the whole database for a script that reached
    /// keys it did not declare (`script::cache::Script::whole_db`).
    Script,
}

/// Commands whose lock rule is not simply their key specs.
const LOCK_RULES: &[(&str, LockRule)] = &[
    ("keys", LockRule::WalkDb),
    ("scan", LockRule::WalkDb),
    ("randomkey", LockRule::WalkDb),
    ("dbsize", LockRule::WalkDb),
    ("info", LockRule::WalkAll),
    ("flushdb", LockRule::WholeDb),
    ("flushall", LockRule::AllDbs),
    ("swapdb", LockRule::AllDbs),
    ("move", LockRule::CrossDb),
    ("copy", LockRule::CrossDb),
    ("debug", LockRule::DebugObject),
    ("pfmerge", LockRule::AllArgs),
    ("save", LockRule::AllDbs),
    ("shutdown", LockRule::Shutdown),
    ("exec", LockRule::Transaction),
    ("georadius", LockRule::GeoStore),
    ("georadiusbymember", LockRule::GeoStore),
    ("sort", LockRule::Sort),
    ("sort_ro", LockRule::Sort),
    ("eval", LockRule::Script),
    ("evalsha", LockRule::Script),
    ("eval_ro", LockRule::Script),
    ("evalsha_ro", LockRule::Script),
    ("fcall", LockRule::Script),
    ("fcall_ro", LockRule::Script),
];

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
    /// Every command flag, bits indexed as [`FLAG_NAMES`] (movablekeys included).
    pub flag_bits: u64,
    /// ACL categories, explicit and implicit, bits indexed as [`ACL_CATEGORIES`].
    pub acl_categories: u64,
    /// The JSON definition, for COMMAND DOCS (a subcommand carries its container's group).
    pub spec: Json,
    pub key_specs: Vec<KeySpec>,
    pub getkeys: Option<GetKeysProc>,
    /// Command tips, lowercase.
    pub tips: Vec<String>,
    pub legacy_keys: KeyRange,
    pub movable_keys: bool,
    /// How the dispatcher locks for it.
    pub lock: LockRule,
    /// Keys at (first, last, step) positions (last negative: from the end), when one plain
    /// range key spec says it all: the dispatcher reads them without allocating.
    pub simple_keys: Option<(i64, i64, i64)>,
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

    /// Flag names as COMMAND INFO lists them, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        FLAG_NAMES
            .iter()
            .enumerate()
            .filter(|(i, (_, shown))| self.flag_bits & (1 << i) != 0 && !shown.is_empty())
            .map(|(_, (_, shown))| *shown)
            .collect()
    }

    /// ACL category names (without `@`), in Redis's order.
    pub fn acl_category_names(&self) -> Vec<&'static str> {
        ACL_CATEGORIES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.acl_categories & (1 << i) != 0)
            .map(|(_, c)| *c)
            .collect()
    }

    pub fn group(&self) -> &str {
        self.spec
            .get("group")
            .and_then(Json::as_str)
            .unwrap_or("generic")
    }

    /// The subcommands, sorted by name.
    pub fn sorted_subcommands(&self) -> Vec<&Arc<CommandDef>> {
        let mut v: Vec<_> = self.subcommands.values().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The keys of a call of this command (argv[0] is its name): (index, key-spec flags).
    pub fn keys(&self, argv: &[&[u8]]) -> Vec<KeyRef> {
        keyspec::get_keys(&self.key_specs, self.getkeys, argv)
    }

    pub fn has_keys(&self) -> bool {
        keyspec::has_keys(&self.key_specs, self.getkeys)
    }
}

pub struct CommandTable {
    /// By name, in any case; looked up for every command (no UTF-8 check, no lowercase
    /// copy).
    by_name: NameIndex<Arc<CommandDef>>,
    /// Every command and subcommand, by id.
    pub all: Vec<Arc<CommandDef>>,
}

fn json_names(spec: &Json, field: &str) -> Vec<String> {
    spec.get(field)
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .map(String::from)
        .collect()
}

fn flags_of(bits: u64) -> Flags {
    let has = |n: &str| bits & flag_bit(n) != 0;
    Flags {
        write: has("WRITE"),
        readonly: has("READONLY"),
        denyoom: has("DENYOOM"),
        admin: has("ADMIN"),
        noscript: has("NOSCRIPT"),
        loading: has("LOADING"),
        stale: has("STALE"),
        no_auth: has("NO_AUTH"),
        fast: has("FAST"),
        no_multi: has("NO_MULTI"),
        pubsub: has("PUBSUB"),
        blocking: has("BLOCKING"),
        protected: has("PROTECTED"),
        skip_slowlog: has("SKIP_SLOWLOG"),
        skip_monitor: has("SKIP_MONITOR"),
        may_replicate: has("MAY_REPLICATE"),
    }
}

/// Redis's setImplicitACLCategories.
fn implicit_acl(flags: &Flags, mut acl: u64) -> u64 {
    let bit = acl_category_bit;
    if flags.write {
        acl |= bit("write");
    }
    if flags.readonly && acl & bit("scripting") == 0 {
        acl |= bit("read");
    }
    if flags.admin {
        acl |= bit("admin") | bit("dangerous");
    }
    if flags.pubsub {
        acl |= bit("pubsub");
    }
    if flags.fast {
        acl |= bit("fast");
    }
    if flags.blocking {
        acl |= bit("blocking");
    }
    if acl & bit("fast") == 0 {
        acl |= bit("slow");
    }
    acl
}

/// Redis's populateCommandLegacyRangeSpec: the (first, last, step) triple glued from the
/// plain range specs, and whether keys are "movable" (not all describable that way).
fn legacy_range(specs: &[KeySpec]) -> (KeyRange, bool) {
    if specs.is_empty() {
        return (KeyRange::default(), false);
    }
    let mut movable = false;
    if let [only] = specs {
        if let (BeginSearch::Index(pos), FindKeys::Range { lastkey, step, .. }) =
            (&only.begin, &only.find)
        {
            let last = if *lastkey >= 0 {
                pos + lastkey
            } else {
                *lastkey
            };
            let range = KeyRange {
                first: *pos,
                last,
                step: *step,
            };
            return (range, only.flags & keyspec::KEY_INCOMPLETE != 0);
        }
    }
    let mut first = i64::MAX;
    let mut last: i64 = 0;
    let mut prev_last: i64 = 0;
    for ks in specs {
        let (BeginSearch::Index(pos), FindKeys::Range { lastkey, step, .. }) =
            (&ks.begin, &ks.find)
        else {
            movable = true;
            continue;
        };
        if *step != 1 || (prev_last != 0 && prev_last != pos - 1) {
            movable = true;
            continue;
        }
        if ks.flags & keyspec::KEY_INCOMPLETE != 0 {
            movable = true;
        }
        first = first.min(*pos);
        let abs = if *lastkey >= 0 {
            lastkey + pos
        } else {
            *lastkey
        };
        // Redis compares as unsigned: a negative (count from the end) wins.
        last = (last as u32).max(abs as u32) as i32 as i64;
        prev_last = last;
    }
    if first == i64::MAX {
        return (KeyRange::default(), true);
    }
    (
        KeyRange {
            first,
            last,
            step: 1,
        },
        movable,
    )
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
        let mut by_name = Vec::new();
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
                    let mut subspec = subspecs[sub].clone();
                    if let (Some(o), Some(g)) = (subspec.as_object_mut(), spec.get("group")) {
                        o.entry("group").or_insert_with(|| g.clone());
                    }
                    let def = Arc::new(make_def(
                        full,
                        sub.clone(),
                        &subspec,
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
            by_name.push((name.clone().into_bytes().into_boxed_slice(), def));
        }
        CommandTable {
            by_name: NameIndex::new(by_name),
            all,
        }
    }

    /// Look up a top-level command by name (any case).
    pub fn get(&self, name: &[u8]) -> Option<&Arc<CommandDef>> {
        self.by_name.get(name)
    }

    /// Redis's lookupCommand: the subcommand when the command is a container and an
    /// argument follows, else the command itself. `None` when unknown.
    pub fn lookup(&self, argv: &[&[u8]]) -> Option<&Arc<CommandDef>> {
        let base = self.get(argv.first()?)?;
        if argv.len() == 1 || !base.is_container() {
            return Some(base);
        }
        let sub = String::from_utf8_lossy(argv[1]).to_ascii_lowercase();
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
    let key_specs: Vec<KeySpec> = spec
        .get("key_specs")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .map(KeySpec::parse)
        .collect();
    let (legacy_keys, movable_keys) = legacy_range(&key_specs);
    let getkeys = spec
        .get("get_keys_function")
        .and_then(Json::as_str)
        .and_then(GetKeysProc::from_name);
    let simple_keys = match key_specs.as_slice() {
        [KeySpec {
            begin: BeginSearch::Index(pos),
            find:
                FindKeys::Range {
                    lastkey,
                    step,
                    limit,
                },
            flags,
            ..
        // One exact range names every key (a getkeys function, as SET's or BITFIELD's,
        // then only refines the flags, which locking does not use).
        }] if (*lastkey >= 0 || *limit <= 1)
            && *step > 0
            && flags & (keyspec::KEY_NOT_KEY | keyspec::KEY_INCOMPLETE) == 0 =>
        {
            let last = if *lastkey >= 0 {
                pos + lastkey
            } else {
                *lastkey
            };
            Some((*pos, last, *step))
        }
        _ => None,
    };
    let lock = LOCK_RULES
        .iter()
        .find(|(n, _)| *n == fullname)
        .map(|(_, r)| *r)
        .unwrap_or(if keyspec::has_keys(&key_specs, getkeys) {
            LockRule::Keys
        } else {
            LockRule::None
        });
    let mut flag_bits = json_names(spec, "command_flags")
        .iter()
        .fold(0, |b, n| b | flag_bit(n));
    if movable_keys {
        flag_bits |= flag_bit("MOVABLEKEYS");
    }
    let flags = flags_of(flag_bits);
    let explicit_acl = json_names(spec, "acl_categories")
        .iter()
        .fold(0, |b, n| b | acl_category_bit(n));
    CommandDef {
        fullname,
        name,
        arity: spec.get("arity").and_then(Json::as_i64).unwrap_or(0),
        flags,
        flag_bits,
        acl_categories: implicit_acl(&flags, explicit_acl),
        spec: spec.clone(),
        getkeys,
        tips: json_names(spec, "command_tips")
            .iter()
            .map(|t| t.to_lowercase())
            .collect(),
        key_specs,
        legacy_keys,
        movable_keys,
        lock,
        simple_keys,
        handler,
        subcommands,
        counters: (0..slots).map(|_| CmdCounters::default()).collect(),
        id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler whose name is not in Redis's command JSON would silently vanish from the
    /// table: every registered handler must be found.
    #[test]
    fn every_handler_is_in_the_table() {
        let table = CommandTable::load(1);
        for name in crate::cmd::handlers().keys() {
            let found = table.all.iter().any(|c| c.fullname == *name);
            assert!(found, "handler '{name}' has no command definition");
        }
    }

    #[test]
    fn lock_rules_and_simple_keys() {
        let table = CommandTable::load(1);
        let get = |n: &str| table.get(n.as_bytes()).expect(n);
        assert_eq!(get("get").simple_keys, Some((1, 1, 1)));
        assert_eq!(get("set").simple_keys, Some((1, 1, 1)));
        assert_eq!(get("zunionstore").simple_keys, None);
        assert_eq!(get("lmpop").simple_keys, None);
        assert_eq!(get("mset").simple_keys, Some((1, -1, 2)));
        assert_eq!(get("get").lock, LockRule::Keys);
        assert_eq!(get("ping").lock, LockRule::None);
        assert_eq!(get("flushall").lock, LockRule::AllDbs);
        assert_eq!(get("keys").lock, LockRule::WalkDb);
    }
}
