//! The cost estimate: about how many elements a command will touch, from its arguments
//! and the sizes of the values it names, read (without statistics or access-time update)
//! through the shards the dispatcher already holds for it. Only commands whose work grows
//! with the data have a rule; every other command costs nothing here.

use crate::cmd::args::is;
use crate::cmd::table::CommandDef;
use crate::server::Server;
use engine::Locked;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

/// How a command's cost is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Cheap whatever the data.
    Free,
    /// The sizes of every key its key specs name (SINTER, ZUNIONSTORE, DEL, ...).
    SpecKeys,
    /// The size of the key at this argument (SMEMBERS, HGETALL, SORT, DUMP, ...).
    KeyAt(usize),
    /// An index range `key start stop` at this argument (LRANGE, ZRANGE, ZREVRANGE).
    IndexRange(usize),
    /// A score or lex range on the key at this argument: its size, or the LIMIT.
    ScoreRange(usize),
    /// `COUNT n` of SCAN (no key) or of HSCAN/SSCAN/ZSCAN/XRANGE (key at argument 1;
    /// XRANGE without COUNT reads the whole range: the stream's length).
    CountOption,
    /// The signed count argument of SRANDMEMBER, ZRANDMEMBER, HRANDFIELD, SPOP.
    CountArg,
    /// Every key of the client's database (KEYS, FLUSHDB SYNC).
    Database,
    /// Every key of every database (FLUSHALL SYNC).
    Everything,
    /// Waits on the network (MIGRATE): always run on the pool.
    Network,
}

fn rule_of(name: &str) -> Rule {
    match name {
        "sinter" | "sinterstore" | "sunion" | "sunionstore" | "sdiff" | "sdiffstore"
        | "sintercard" | "zinter" | "zinterstore" | "zunion" | "zunionstore" | "zdiff"
        | "zdiffstore" | "zintercard" | "del" => Rule::SpecKeys,
        "smembers" | "hgetall" | "hkeys" | "hvals" | "sort" | "sort_ro" | "dump" | "copy"
        | "lpos" => Rule::KeyAt(1),
        "lrange" | "zrange" | "zrevrange" => Rule::IndexRange(1),
        "zrangestore" => Rule::IndexRange(2),
        "zrangebyscore" | "zrevrangebyscore" | "zrangebylex" | "zrevrangebylex" => {
            Rule::ScoreRange(1)
        }
        "scan" | "hscan" | "sscan" | "zscan" | "xrange" | "xrevrange" => Rule::CountOption,
        "srandmember" | "zrandmember" | "hrandfield" | "spop" => Rule::CountArg,
        "keys" => Rule::Database,
        "flushdb" => Rule::Database,
        "flushall" => Rule::Everything,
        "migrate" => Rule::Network,
        _ => Rule::Free,
    }
}

/// Each command's rule, by [`CommandDef::id`].
fn rules(srv: &Server) -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        srv.commands
            .all
            .iter()
            .map(|c| rule_of(&c.fullname))
            .collect()
    })
}

/// Could this command cost anything (checked before any estimate)?
#[inline]
pub fn may_cost(srv: &Server, cmd: &CommandDef) -> bool {
    rules(srv).get(cmd.id).is_some_and(|r| *r != Rule::Free)
}

/// Does this command wait on the network (MIGRATE)? Then it runs on the pool whatever
/// `offload-threshold` says.
#[inline]
pub fn waits_on_network(srv: &Server, cmd: &CommandDef) -> bool {
    rules(srv).get(cmd.id) == Some(&Rule::Network)
}

/// About how many elements `cmd argv` will touch, its keys held in `keys`.
pub fn estimate(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], keys: &mut Locked) -> u64 {
    let db = keys.db();
    let size = |keys: &mut Locked, key: &[u8]| -> u64 {
        keys.peek_if_held(key)
            .map_or(0, |e| crate::lazyfree::free_effort(e.value()) as u64)
    };
    let rule = rules(srv).get(cmd.id).copied().unwrap_or(Rule::Free);
    match rule {
        Rule::Free => 0,
        Rule::SpecKeys => {
            let mut total = 0;
            crate::dispatch::plan::each_spec_key(cmd, argv, |k| total += size(keys, k));
            let hot = &srv.config.hot;
            if cmd.name == "del" && hot.lazyfree_lazy_user_del.load(Relaxed) != 0 {
                // DEL frees like UNLINK then: nothing heavy left on the command path.
                return 0;
            }
            total
        }
        Rule::KeyAt(i) => argv.get(i).map_or(0, |k| size(keys, k)),
        Rule::IndexRange(i) => {
            let (Some(k), Some(start), Some(stop)) =
                (argv.get(i), int(argv, i + 1), int(argv, i + 2))
            else {
                return 0;
            };
            let by_score = argv[i + 3..]
                .iter()
                .any(|a| is(a, "byscore") || is(a, "bylex"));
            let len = size(keys, k) as i64;
            if by_score {
                return limit(argv).map_or(len, |n| n.min(len)) as u64;
            }
            range_len(len, start, stop)
        }
        Rule::ScoreRange(i) => {
            let len = argv.get(i).map_or(0, |k| size(keys, k)) as i64;
            limit(argv).map_or(len, |n| n.min(len)) as u64
        }
        Rule::CountOption => {
            let count = argv
                .windows(2)
                .rev()
                .find(|w| is(w[0], "count"))
                .and_then(|w| std::str::from_utf8(w[1]).ok()?.parse::<i64>().ok())
                .map(|n| n.max(0) as u64);
            if cmd.name == "scan" {
                return count.unwrap_or(10);
            }
            // The *SCANs return about COUNT (10 unless given); XRANGE without COUNT, all.
            let default = if cmd.name.starts_with('x') {
                u64::MAX
            } else {
                10
            };
            count
                .unwrap_or(default)
                .min(argv.get(1).map_or(0, |k| size(keys, k)))
        }
        Rule::CountArg => match int(argv, 2) {
            Some(n) if n < 0 => n.unsigned_abs(),
            Some(n) => (n as u64).min(size(keys, argv[1])),
            None => 0,
        },
        Rule::Database => {
            if cmd.name == "flushdb" && flush_async(srv, argv) {
                return 0;
            }
            keys.len_in(db) as u64
        }
        Rule::Everything => {
            if flush_async(srv, argv) {
                return 0;
            }
            (0..srv.keyspace.len()).map(|d| keys.len_in(d) as u64).sum()
        }
        Rule::Network => u64::MAX,
    }
}

/// FLUSHDB/FLUSHALL frees on the lazyfree thread (ASYNC, or the default with
/// `lazyfree-lazy-user-flush`): cheap on the command path.
fn flush_async(srv: &Server, argv: &[&[u8]]) -> bool {
    match argv.get(1) {
        Some(a) => is(a, "async"),
        None => srv.config.get_bool("lazyfree-lazy-user-flush"),
    }
}

fn int(argv: &[&[u8]], i: usize) -> Option<i64> {
    std::str::from_utf8(argv.get(i)?).ok()?.parse().ok()
}

/// `LIMIT offset count` with a count that is not negative: offset + count.
fn limit(argv: &[&[u8]]) -> Option<i64> {
    let at = argv.iter().rposition(|a| is(a, "limit"))?;
    let offset = int(argv, at + 1)?.max(0);
    let count = int(argv, at + 2)?;
    (count >= 0).then(|| offset.saturating_add(count))
}

/// Elements of `start..=stop` (negative from the end) in a sequence of `len`.
fn range_len(len: i64, start: i64, stop: i64) -> u64 {
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        0
    } else {
        (stop - start + 1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(range_len(10, 0, -1), 10);
        assert_eq!(range_len(10, -3, -1), 3);
        assert_eq!(range_len(10, 5, 100), 5);
        assert_eq!(range_len(10, 20, 30), 0);
        assert_eq!(range_len(10, -100, 2), 3);
        assert_eq!(range_len(0, 0, -1), 0);
        assert_eq!(range_len(10, 4, 2), 0);
    }

    #[test]
    fn limits() {
        let argv: Vec<&[u8]> = vec![b"zrangebyscore", b"z", b"0", b"1", b"LIMIT", b"5", b"10"];
        assert_eq!(limit(&argv), Some(15));
        let argv: Vec<&[u8]> = vec![b"zrangebyscore", b"z", b"0", b"1", b"limit", b"0", b"-1"];
        assert_eq!(limit(&argv), None);
    }

    #[test]
    fn rules_name_commands() {
        assert_eq!(rule_of("zinterstore"), Rule::SpecKeys);
        assert_eq!(rule_of("get"), Rule::Free);
        assert_eq!(rule_of("zrangestore"), Rule::IndexRange(2));
    }
}
