"""Command-level differential fuzzer: seeded argument vectors for every command Skein
serves, generated from Redis's command JSON (crates/server/commands/*.json), sent to
redis-server 7.0.15 and skein-server alike and the replies compared byte for byte.

Most vectors follow the argument spec (keys from a small shared pool so commands meet
each other's values, edge integers and doubles, tokens in random case, optional,
multiple, oneof and block arguments); some are malformed (wrong arity, garbage tokens,
wrong types, huge or negative counts). Replies that legitimately differ (randomness,
time, machine state, hash-table iteration order) are compared by a looser rule, see
COMPARE_RULES. Commands that would disturb the run are never generated, see EXCLUDED.

Long runs: python3 tests/cmd_fuzz.py --seed 1 --count 20000 [--seeds 10]
(SKEIN_BIN picks the skein-server binary, as for the tests). A share of the steps
(--modes, 0.1 by default; --kinds to pick them) are of the kinds over several connections
that tests/cmd_fuzz_modes.py generates and runs (subscribe mode, notifications, tracking,
MONITOR, CLIENT REPLY, inline requests, Lua bodies, WATCH).
"""
import argparse
import glob
import json
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resp_client import RawConn, encode, parse  # noqa: E402
from cmd_fuzz_modes import MODES, ModeRunner, ModeSteps  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_DIR = os.path.join(ROOT, "crates", "server", "commands")

# Never generated: they end the connection or the server, change the connection's mode
# (pub/sub, monitor, reply suppression, protocol), block without bound, touch the network,
# or change server-wide settings the rest of the run depends on.
EXCLUDED = {
    "shutdown", "debug", "monitor", "subscribe", "psubscribe", "ssubscribe",
    "unsubscribe", "punsubscribe", "sunsubscribe", "replicaof", "slaveof", "failover",
    "sync", "psync", "replconf", "migrate", "wait", "quit",
    "client|kill", "client|pause", "client|unpause", "client|reply", "client|tracking",
    "client|caching", "client|unblock", "config|set", "config|rewrite",
    "config|resetstat", "save", "bgsave", "bgrewriteaof", "acl|setuser",
    "acl|deluser", "acl|load", "acl|save", "script|kill", "script|debug", "function|kill",
    "pfselftest",
    "pfdebug", "spop", "sentinel",
    "lolwut", "latency|doctor", "memory|doctor", "memory|malloc-stats",
    "slowlog|reset", "latency|reset",
}

# Reply comparison rules (default: byte for byte).
#   type  - only the reply's type byte (random, time or machine dependent replies)
#   sort  - the top-level array as a multiset (hash-table iteration order)
#   approx - integers within a few units (TTLs against a clock)
COMPARE_RULES = {
    "randomkey": "type", "srandmember": "type", "zrandmember": "type",
    "hrandfield": "type", "time": "type", "info": "type", "lastsave": "type",
    "client|list": "type", "client|info": "type", "client|id": "type",
    "memory|usage": "type", "memory|stats": "type", "memory|purge": "type",
    "object|freq": "type", "object|idletime": "type", "dump": "type",
    "scan": "type", "sscan": "type", "hscan": "type", "zscan": "type",
    "config|get": "type", "command": "type", "command|info": "type",
    "command|docs": "type", "command|list": "type", "command|count": "type",
    "slowlog|get": "type", "slowlog|len": "type", "latency|latest": "type",
    "latency|history": "type", "latency|graph": "type", "latency|histogram": "type",
    "xinfo|stream": "type", "xinfo|groups": "type", "xinfo|consumers": "type",
    "xpending": "type", "function|dump": "type", "function|stats": "type",
    "client|getredir": "type", "role": "type", "acl|log": "type", "acl|list": "type",
    "acl|getuser": "type", "acl|users": "type", "acl|whoami": "type", "acl|cat": "type",
    "acl|genpass": "type", "object|help": "type", "hello": "type",
    # Redis's answer depends on how the value was made (COPY's is not shared).
    "object|refcount": "type",
    "smembers": "sort", "sinter": "sort", "sunion": "sort", "sdiff": "sort",
    "hkeys": "sort", "hvals": "sort", "hgetall": "sort", "keys": "sort",
    "sort": "sort", "sort_ro": "sort", "function|list": "sort",
    "dbsize": "approx",  # counts logically expired keys each server has yet to reclaim
    "ttl": "approx", "pttl": "approx_ms", "expiretime": "approx",
    "pexpiretime": "approx_ms",
}

KEYS = ["k1", "k2", "k3", "s1", "s2", "h1", "z1", "z2", "l1", "l2", "x1", "x2"]
# Keys a command of a group mostly takes, so that most calls meet a value of their type.
FAMILY_KEYS = {
    "sorted_set": ["z1", "z2"], "geo": ["z1", "z2"], "set": ["s1", "s2"], "hash": ["h1"],
    "list": ["l1", "l2"], "stream": ["x1", "x2"], "string": ["k1", "k2", "k3"],
    "bitmap": ["k1", "k2", "k3"], "hyperloglog": ["k1", "k2", "k3"],
}
STRINGS = ["a", "b", "c", "", "1", "-1", "3.5", "foo bar", "x" * 70, "\x00\xff",
           "field", "member", "*", "$", ">", "0", "k1", "h1"]
INTEGERS = ["0", "1", "-1", "2", "3", "5", "10", "100", "-100", "9223372036854775807",
            "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
            "4294967296", "abc", "1.5", "", " 1", "+1", "01", "0x10"]
DOUBLES = ["0", "1", "-1", "1.5", "-2.25", "inf", "-inf", "+inf", "nan", "1e400", "",
           "abc", "(1", "(-inf", "1e-320", "3", "100", "0.0001", "-0", "1e308"]
TIMES = ["0", "-1", "100000", "1000000", "9223372036854775807", "-9223372036854775808",
         "abc", "1.5", "4102444800", "4102444800000"]
TIMEOUTS = ["0.01", "0.02", "-1", "abc", "inf", "1e400", "0.001"]
PATTERNS = ["*", "k*", "?1", "[a-z]*", "", "h[", "\\*", "*1*"]
SCRIPTS = ["return 1", "return redis.call('GET', KEYS[1])", "return {1, 2, 'x', {3}}",
           "return ARGV[1]", "return redis.call('INCR', KEYS[1])",
           "return redis.status_reply('OK')", "return redis.error_reply('my err')",
           "return 3.99", "return nil"]
FUNCTION_CODE = ["#!lua name=lib1\nredis.register_function('f1', function(k, a) "
                 "return 1 end)",
                 "#!lua name=lib2\nredis.register_function{function_name='f2', "
                 "callback=function(k, a) return k[1] end, flags={'no-writes'}}",
                 "#!lua name=lib1\nreturn 1", "not lua"]
# Encoding thresholds the fuzzer may change, with Redis 7.0's defaults.
ENCODING_CONFIG = {
    "hash-max-listpack-entries": "512", "hash-max-listpack-value": "64",
    "set-max-intset-entries": "512", "zset-max-listpack-entries": "128",
    "zset-max-listpack-value": "64", "list-max-listpack-size": "-2",
    "list-compress-depth": "0", "stream-node-max-entries": "100",
    "stream-node-max-bytes": "4096",
}
# Everything CONFIG SET may change in a run, with Redis 7.0's defaults.
RESET_CONFIG = dict(ENCODING_CONFIG, **{
    "hz": "10", "notify-keyspace-events": "", "maxmemory-policy": "noeviction",
    "lua-time-limit": "5000", "slowlog-log-slower-than": "10000",
    "active-expire-effort": "1", "maxmemory-samples": "5", "lfu-log-factor": "10",
    "lfu-decay-time": "1", "zset-max-ziplist-entries": "128",
    "list-max-ziplist-size": "-2",
})
GARBAGE = ["FOO", "", "-", "999999999999999999999999", "\r\n", "NaN", "withscores",
           "LIMIT", "COUNT", "-9223372036854775808", "*", "BY", "STORE"]


def load_specs(spec_dir=SPEC_DIR):
    """Command name (lowercase, 'container|sub' for subcommands) -> JSON spec."""
    specs = {}
    for path in glob.glob(os.path.join(spec_dir, "*.json")):
        with open(path) as f:
            data = json.load(f)
        for name, spec in data.items():
            full = name.lower()
            if "container" in spec:
                full = spec["container"].lower() + "|" + full
            specs[full] = spec
    return specs


class Generator(ModeSteps):
    """Seeded argument vectors for commands described by Redis's command JSON; with
    `modes` > 0, that share of the steps are of the kinds `kinds` of MODES."""
    keys = KEYS
    rules = COMPARE_RULES

    def __init__(self, seed, specs, commands, malformed=0.15, modes=0.0, kinds=None):
        self.r = random.Random(seed)
        self.malformed_rate = malformed
        self.modes = modes
        self.kinds = sorted(kinds or MODES)
        self.specs = specs
        self.commands = sorted(commands)
        self.stream_seq = 0

    def rand_case(self, tok):
        r = self.r
        k = r.random()
        if k < 0.6:
            return tok
        if k < 0.8:
            return tok.lower()
        return "".join(c.upper() if r.random() < 0.5 else c.lower() for c in tok)

    def value(self, arg):
        r = self.r
        t, name = arg["type"], arg.get("name", "").lower()
        token = arg.get("token", "").upper()
        if t == "key":
            family = FAMILY_KEYS.get(self.group)
            if family and r.random() < 0.7:
                return r.choice(family)
            k = r.random()
            if k < 0.95:
                return r.choice(KEYS)
            return "nokey" if k < 0.98 else r.choice(["", "k\x00\xff", "x" * 80])
        if "lex" in self.cur and name in ("min", "max", "start", "stop"):
            return r.choice(["-", "+", "[a", "(a", "[m1", "(c", "a", "", "[", "(\x00"])
        if name in ("group", "groupname"):
            return r.choice(["g1", "g2", "g1", "nogroup"])
        if name in ("consumer", "consumername"):
            return r.choice(["c1", "c2"])
        if t == "pattern":
            return r.choice(PATTERNS)
        if name == "timeout" or token == "BLOCK":
            return r.choice(TIMEOUTS) if name == "timeout" else r.choice(
                ["10", "20", "-1", "abc"])
        if name == "script":
            return r.choice(SCRIPTS)
        if name == "function-code":
            return r.choice(FUNCTION_CODE)
        if name in ("function", "library-name"):
            return r.choice(["f1", "f2", "lib1", "lib2", "nofunc"])
        if name in ("sha1",):
            return r.choice(["e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "abc", ""])
        if t == "unix-time" or "seconds" in name or "milliseconds" in name or name == "ttl":
            return r.choice(TIMES)
        if t == "integer":
            if r.random() < 0.3:
                return str(r.randint(-20, 20))
            return r.choice(INTEGERS)
        if t == "double":
            if r.random() < 0.3:
                return str(round(r.uniform(-200, 200), r.randint(0, 3)))
            return r.choice(DOUBLES)
        if name in ("id", "start", "end") and "X" in self.cur.upper()[:1]:
            return r.choice(["0", "0-1", "1-1", "2", "3-0", "-", "+", "$", ">", "abc",
                             "18446744073709551615-18446744073709551615", "5-*", "(1-1"])
        if name in ("db", "destination-db", "index"):
            return r.choice(["0", "1", "2", "16", "-1", "abc"])
        if name == "encoding":
            return r.choice(["i8", "u8", "i64", "u63", "i65", "u64", "x", "i1"])
        if name == "offset":
            return r.choice(["0", "1", "7", "100", "#1", "-1", "4294967296", "abc"])
        return r.choice(STRINGS) if r.random() < 0.85 else str(r.randint(-5, 50))

    def one(self, arg, out, depth=0):
        """Append one occurrence of `arg` to out (token included)."""
        r = self.r
        if "token" in arg and arg["type"] != "pure-token":
            out.append(self.rand_case(arg["token"]))
        t = arg["type"]
        if t == "pure-token":
            out.append(self.rand_case(arg["token"]))
        elif t == "oneof":
            if "token" in arg:
                pass
            self.one(r.choice(arg["arguments"]), out, depth + 1)
        elif t == "block":
            for sub in arg["arguments"]:
                self.emit(sub, out, depth + 1)
        else:
            out.append(self.value(arg))

    def emit(self, arg, out, depth=0):
        r = self.r
        if arg.get("optional") and r.random() < 0.5:
            return
        n = 1
        if arg.get("multiple"):
            n = r.choice([1, 1, 1, 2, 2, 3, 5])
        for i in range(n):
            if i > 0 and arg.get("multiple_token") and "token" in arg:
                pass
            if i > 0 and not arg.get("multiple_token") and "token" in arg \
                    and arg["type"] != "pure-token":
                out.append(self.value(arg))
                continue
            self.one(arg, out, depth)

    def well_formed(self, name):
        spec = self.specs[name]
        words = name.split("|")
        out = [self.rand_case(w.upper()) for w in words]
        self.cur = words[0]
        self.group = spec.get("group", "")
        if name in ("command|getkeys", "command|getkeysandflags") and self.r.random() < 0.8:
            inner = self.r.choice(self.commands)
            if not inner.startswith("command|"):
                return out + self.well_formed(inner)
        for arg in spec.get("arguments", []):
            self.emit(arg, out)
        self.fix_counts(name, out, len(words))
        return out

    def fix_counts(self, name, out, skip):
        """Make numkeys-style counts agree with the keys that follow most of the time."""
        r = self.r
        base = name.split("|")[0]
        if base in ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro") \
                and len(out) > skip + 1 and r.random() < 0.9:
            nargs = len(out) - skip - 2
            out[skip + 1] = str(r.randint(0, max(0, nargs)))
        lower = [a.lower() for a in out]
        if base in ("xread", "xreadgroup") and "streams" in lower and r.random() < 0.9:
            at = lower.index("streams") + 1
            n = r.randint(1, 3)
            ids = ["0", "0-1", "$", ">", "1-1", "+"]
            out[at:] = [r.choice(FAMILY_KEYS["stream"]) for _ in range(n)] + \
                [r.choice(ids) for _ in range(n)]
        if base in ("zmpop", "bzmpop", "lmpop", "blmpop", "sintercard", "zintercard",
                    "zunion", "zinter", "zdiff", "zunionstore", "zinterstore",
                    "zdiffstore") and r.random() < 0.9:
            at = skip + (1 if base in ("bzmpop", "blmpop") else 0) + \
                (1 if base.endswith("store") else 0)
            if at < len(out):
                n = 0
                while at + 1 + n < len(out) and out[at + 1 + n] in KEYS + ["nokey"]:
                    n += 1
                out[at] = str(n)
        if base == "xadd":
            for i, a in enumerate(out):
                if a == "*":
                    self.stream_seq += 1
                    out[i] = "%d-%d" % (1000 + self.stream_seq, r.randint(0, 2))

    def malformed(self, name):
        r = self.r
        out = self.well_formed(name)
        fixed = len(name.split("|"))
        k = r.random()
        if "BLOCKING" in self.specs[name].get("command_flags", []):
            k = 0  # only drop an argument: anything else may block without bound
        if k < 0.2 and len(out) > fixed:
            del out[r.randrange(fixed, len(out))]
        elif k < 0.35:
            out.insert(r.randint(fixed, len(out)), r.choice(GARBAGE))
        elif k < 0.55 and len(out) > fixed:
            i = r.randrange(fixed, len(out))
            out[i] = r.choice(GARBAGE + INTEGERS + DOUBLES)
        elif k < 0.65:
            del out[fixed:]
            for _ in range(r.randint(0, 4)):
                out.append(r.choice(GARBAGE + KEYS + INTEGERS))
        elif k < 0.75:
            out.append(r.choice(["COUNT", "LIMIT", "MATCH"]))
            out.append(r.choice(["-1", "-9223372036854775808", "9223372036854775807",
                                 "0", "4294967296"]))
        elif k < 0.88 and len(out) > fixed + 1:
            # An option given twice (the later one usually wins, or it is an error).
            i = r.randrange(fixed + 1, len(out))
            j = r.randint(i + 1, min(len(out), i + 3))
            out[j:j] = out[i:j]
        elif len(out) > fixed + 2:
            tail = out[fixed + 1:]
            r.shuffle(tail)
            out[fixed + 1:] = tail
        return out

    def setup(self):
        """Commands that give the key pool values of every type."""
        r = self.r
        cmds = [["SET", "k1", str(r.randint(-5, 5))], ["SET", "k2", "hello"],
                ["SADD", "s1", "a", "b", "1", "2"], ["HSET", "h1", "a", "1", "b", "x"],
                ["ZADD", "z1", "1", "a", "2", "b", "2.5", "c"],
                ["RPUSH", "l1", "a", "b", "c", "1"], ["XADD", "x1", "1-1", "f", "v"],
                ["SADD", "s2", "b", "c", "3"], ["ZADD", "z2", "0", "a", "0", "b", "5", "z"],
                ["RPUSH", "l2", "x", "1"], ["XADD", "x1", "2-1", "g", "w"],
                ["XGROUP", "CREATE", "x1", "g1", "0"],
                ["XGROUP", "CREATE", "x2", "g1", "$", "MKSTREAM"]]
        return cmds

    def bulk(self):
        """A command that grows a key past the compact encodings' limits."""
        r = self.r
        key = r.choice(KEYS)
        n = r.choice([20, 130, 600])
        kind = r.choice(["rpush", "sadd", "sadd", "zadd", "hset", "xadd"])
        if kind == "rpush":
            return kind, ["RPUSH", key] + [r.choice(STRINGS + [str(i)]) for i in range(n)]
        if kind == "sadd":
            ints = r.random() < 0.5
            return kind, ["SADD", key] + [str(r.randint(-1000, 1000)) if ints
                                          else "m%d" % r.randint(0, 2000) for _ in range(n)]
        if kind == "zadd":
            out = ["ZADD", key]
            for i in range(n):
                out += [str(r.choice([r.randint(-50, 50), i, 1.5])), "m%d" % i]
            return kind, out
        if kind == "hset":
            out = ["HSET", key]
            for i in range(n):
                out += ["f%d" % i, r.choice(STRINGS)]
            return kind, out
        self.stream_seq += 1
        return kind, ["XADD", key, "%d-0" % (1000 + self.stream_seq)] + \
            ["f%d" % i for i in range(2 * min(n, 40))]

    def blocked_pair(self):
        """A blocking command on one connection and, while it waits, a command on another
        that may serve it (or not: then it times out)."""
        r = self.r
        lk, zk, xk = (r.choice(FAMILY_KEYS[f]) for f in ("list", "sorted_set", "stream"))
        t = r.choice(["0.3", "0.2"])
        blocking = r.choice([
            ["BLPOP", lk, r.choice(KEYS), t], ["BRPOP", lk, t],
            ["BLMOVE", lk, r.choice(KEYS), r.choice(["LEFT", "RIGHT"]),
             r.choice(["LEFT", "RIGHT"]), t],
            ["BRPOPLPUSH", lk, lk, t], ["BLMPOP", t, "2", lk, "nokey", "LEFT", "COUNT", "2"],
            ["BZPOPMIN", zk, t], ["BZPOPMAX", zk, r.choice(KEYS), t],
            ["BZMPOP", t, "1", zk, "MAX", "COUNT", "3"],
            ["XREAD", "COUNT", "2", "BLOCK", "300", "STREAMS", xk, "$"],
            ["XREADGROUP", "GROUP", "g1", "c1", "BLOCK", "300", "STREAMS", xk, ">"],
        ])
        k = r.random()
        self.stream_seq += 1
        if k < 0.6:
            other = r.choice([
                ["RPUSH", lk, "a", "b"], ["LPUSH", lk, "c"], ["LPUSH", "nokey", "d"],
                ["ZADD", zk, "1", "m", "2", "n"], ["ZINCRBY", zk, "1", "q"],
                ["XADD", xk, "%d-1" % (1000 + self.stream_seq), "f", "v"],
                ["LMOVE", r.choice(KEYS), lk, "LEFT", "RIGHT"], ["DEL", lk, zk, xk],
                ["SET", lk, "1"], ["RENAME", r.choice(KEYS), r.choice([lk, zk, xk])],
                ["EVAL", "redis.call('RPUSH', KEYS[1], 'e'); return redis.call('DEL', KEYS[1])",
                 "1", lk],
                ["MULTI"], ["SORT", r.choice(KEYS), "STORE", lk],
            ])
            return "pair", [blocking, other, other[0].lower()]
        name = r.choice(self.commands)
        return "pair", [blocking, self.well_formed(name), name]

    def pipeline(self):
        """Several commands sent at once (replies must come back in order, whatever
        shards they touch)."""
        out = []
        while len(out) < self.r.randint(2, 20):
            name = self.r.choice(self.commands)
            if name.split("|")[0] in ("multi", "exec", "discard", "reset", "hello") or \
                    "BLOCKING" in self.specs[name].get("command_flags", []):
                continue
            out.append([name, self.well_formed(name)])
        return "pipeline", out

    def config(self):
        """CONFIG SET of encoding thresholds and other harmless settings (reset at each
        seed's start), sometimes several at once, unknown or immutable ones."""
        r = self.r
        out = ["CONFIG", "SET"]
        for _ in range(r.choice([1, 1, 1, 2, 3])):
            name = r.choice(list(RESET_CONFIG) + ["foo", "", "databases", "daemonize",
                                                  "io-threads"])
            value = r.choice(["0", "1", "2", "3", "16", "128", "-1", "-2", "abc", "",
                              "yes", "no", "allkeys-lru", "volatile-lfu", "KEA", "Ex",
                              "1gb", "4294967296", "-9223372036854775808",
                              RESET_CONFIG.get(name, "1")])
            out += [self.rand_case(name), value]
        return "config|set", out

    def next(self):
        if self.modes and self.r.random() < self.modes:
            return self.mode_step(self.kinds)
        k = self.r.random()
        if k < 0.01:
            return self.config()
        if k < 0.015:
            return self.blocked_pair()
        if k < 0.025:
            return self.pipeline()
        if k < 0.03:
            return self.bulk()
        if k < 0.07:
            # The command from a script: Redis's conversions both ways, and script rules.
            name = self.r.choice(self.commands)
            if name.split("|")[0] not in ("multi", "exec", "discard", "watch", "eval",
                                          "evalsha", "eval_ro", "evalsha_ro", "fcall",
                                          "fcall_ro"):
                inner = self.well_formed(name) if self.r.random() < 0.8 \
                    else self.malformed(name)
                how = self.r.choice(["call", "pcall"])
                return name, ["EVAL", "return redis.%s(unpack(ARGV))" % how, "0"] + inner
        name = self.r.choice(self.commands)
        if self.r.random() < self.malformed_rate:
            return name, self.malformed(name)
        return name, self.well_formed(name)


def known_commands(conn, specs):
    """The commands (and subcommands) Skein serves that the fuzzer may generate."""
    names = [x.decode().lower() for x in parse(conn.call("COMMAND", "LIST"))]
    out = []
    for info in parse(conn.call("COMMAND", "INFO", *names)):
        if not info:
            continue
        name = info[0].decode().lower()
        subs = [s[0].decode().lower() for s in info[9]] if len(info) > 9 else []
        for c in subs or [name]:
            if c in specs and c not in EXCLUDED and c.split("|")[0] not in EXCLUDED:
                out.append(c)
    return out


def redis_quirk(name, args, a, b):
    """A difference docs/compatibility.md documents as deliberate."""
    if name not in ("sort", "sort_ro"):
        return False
    # SORT: Redis reads weights with strtod without clearing errno, so a stale ERANGE
    # refuses good weights.
    if a == b"-ERR One or more scores can't be converted into double\r\n":
        return True
    # SORT of a set BY a constant: Skein's set order, not Redis's hash table's.
    lower = [x.lower() for x in args]
    by = [args[i + 1] for i, x in enumerate(lower[:-1]) if x == "by"]
    return bool(by) and "*" not in by[-1] and a[:1] == b[:1] == b"*"


def compare(rule, a, b):
    if a == b:
        return True
    if a[:1] == b"-" or b[:1] == b"-":
        return False
    if rule == "type":
        return a[:1] == b[:1]
    if rule == "sort":
        pa, pb = parse(a), parse(b)
        if isinstance(pa, list) and isinstance(pb, list):
            return a[:1] == b[:1] and sorted(map(repr, pa)) == sorted(map(repr, pb))
        return False
    if rule == "approx":
        pa, pb = parse(a), parse(b)
        return isinstance(pa, int) and isinstance(pb, int) and abs(pa - pb) <= 2
    if rule == "approx_ms":
        pa, pb = parse(a), parse(b)
        return isinstance(pa, int) and isinstance(pb, int) and abs(pa - pb) <= 1000
    return False


def fmt_cmd(args):
    return " ".join(json.dumps(a) if (not a or any(c in a for c in ' "\\\r\n\x00\xff'))
                    else a for a in args)


class Runner(ModeRunner):
    """Runs generated commands on both servers and collects divergences."""
    rules = COMPARE_RULES

    def __init__(self, ref_port, skein_port, proto=2, ping_every=50, timeout=10):
        self.ports = (ref_port, skein_port)
        self.proto = proto
        self.ping_every = ping_every
        self.timeout = timeout
        self.failures = []
        self.sent = 0
        self.connect()

    def connect(self):
        self.ref = RawConn(self.ports[0], timeout=self.timeout)
        self.sk = RawConn(self.ports[1], timeout=self.timeout)
        self.multi = None  # rule strictness of a transaction being queued
        for c in (self.ref, self.sk):
            c.call("SELECT", "0")
            if self.proto == 3:
                c.call("HELLO", "3")

    def close(self):
        self.ref.close()
        self.sk.close()
        for c in getattr(self, "side", ()):
            c.close()
        self.side = ()

    def dispatch(self, name, args):
        """One generated step (as the generator and a --log line name it): a blocking
        pair, a pipeline, or a plain command."""
        if name == "pair":
            self.send_pair(*args)
        elif name == "pipeline":
            self.send_pipeline(args)
        elif name in MODES:
            self.run_mode(name, args)
        else:
            self.send(name, args)

    def send_pipeline(self, cmds):
        enc = [[a.encode("latin-1") for a in args] for _, args in cmds]
        try:
            got = [c.pipeline(enc) for c in (self.ref, self.sk)]
        except (socket.timeout, ConnectionError, OSError) as e:
            self.failures.append("pipeline of %d: %r" % (len(cmds), e))
            self.close()
            self.connect()
            return
        for (name, args), a, b in zip(cmds, *got):
            self.sent += 1
            rule = COMPARE_RULES.get(name) or COMPARE_RULES.get(name.split("|")[0])
            if self.multi is not None:  # queued: EXEC's reply as loose as the loosest
                self.multi = "type" if rule else self.multi
                rule = None
            if not compare(rule, a, b) and not redis_quirk(name, args, a, b):
                self.failures.append("#%d RESP%d (pipelined) %s\n  redis: %r\n  skein: %r"
                                     % (self.sent, self.proto, fmt_cmd(args), a[:300],
                                        b[:300]))

    def send_pair(self, blocking, other, name):
        """`blocking` on a second connection of each server, then `other` on a third once
        it waits; both replies compared."""
        if not getattr(self, "side", ()):
            self.side = [RawConn(p, timeout=self.timeout) for p in self.ports * 2]
            for c in self.side:
                if self.proto == 3:
                    c.call("HELLO", "3")
        waiters, others = self.side[:2], self.side[2:]
        enc = [[a.encode("latin-1") for a in cmd] for cmd in (blocking, other)]
        self.sent += 1
        try:
            for c in waiters:
                c.send_raw(encode(enc[0]))
            time.sleep(0.03)
            b_replies = [c.call(*enc[1]) for c in others]
            a_replies = [c.read_reply() for c in waiters]
            for c in others:  # leave no transaction open on the side connection
                c.call("DISCARD")
        except (socket.timeout, ConnectionError, OSError) as e:
            self.failures.append("pair %s / %s: %r" % (fmt_cmd(blocking), fmt_cmd(other), e))
            for c in self.side:
                c.close()
            self.side = ()
            return
        for what, (x, y) in (("blocked", a_replies), ("other", b_replies)):
            rule = COMPARE_RULES.get(name) or COMPARE_RULES.get(name.split("|")[0])
            if x != y and not compare(rule, x, y):
                self.failures.append("#%d RESP%d pair %s / %s (%s)\n  redis: %r\n  skein: %r"
                                     % (self.sent, self.proto, fmt_cmd(blocking),
                                        fmt_cmd(other), what, x[:300], y[:300]))

    def send(self, name, args, raw=None, rule=""):
        """One command (`raw`: these bytes stand for it, as an inline request; `rule`:
        the comparison, when not the command's own)."""
        self.sent += 1
        raw = raw or encode([a.encode("latin-1") for a in args])
        out = []
        for c in (self.ref, self.sk):
            try:
                c.send_raw(raw)
                out.append(c.read_reply())
            except (socket.timeout, ConnectionError, OSError) as e:
                out.append(("dead", repr(e)))
        a, b = out
        if isinstance(a, tuple) or isinstance(b, tuple):
            self.failures.append("RESP%d %s\n  redis: %r\n  skein: %r (connection lost)"
                                 % (self.proto, fmt_cmd(args), a, b))
            self.close()
            self.connect()
            return
        if rule == "":
            rule = COMPARE_RULES.get(name) or COMPARE_RULES.get(name.split("|")[0])
        base = name.split("|")[0]
        if self.multi is not None:
            # Inside MULTI: replies are QUEUED (strict); EXEC's array is compared as
            # loosely as the loosest command queued.
            if base == "exec":
                rule = self.multi or None
                self.multi = None
            elif base == "discard":
                self.multi = None
            else:
                if a == b"+QUEUED\r\n" and rule:
                    self.multi = "type"
                rule = None
        elif base == "multi" and a == b == b"+OK\r\n":
            self.multi = ""
        if base == "reset" and a == b"+RESET\r\n":
            self.multi = None  # (RESET leaves MULTI, as it is never queued)
        if not self.judge(name, args, a, b, rule):
            self.failures.append("#%d RESP%d %s\n  redis: %r\n  skein: %r"
                                 % (self.sent, self.proto, fmt_cmd(args), a[:300], b[:300]))
        if a.startswith(b"-ERR Protocol error") or b.startswith(b"-ERR Protocol error"):
            self.close()  # (both close the connection after a protocol error)
            self.connect()
        if self.sent % self.ping_every == 0:
            self.ping()

    def judge(self, name, args, a, b, rule=""):
        """Whether replies a (Redis) and b (Skein) to `args` agree."""
        if rule == "":
            rule = COMPARE_RULES.get(name) or COMPARE_RULES.get(name.split("|")[0])
        return compare(rule, a, b) or redis_quirk(name, args, a, b) or \
            self.set_order(name, args, a, b)

    def set_order(self, name, args, a, b):
        """SORT BY of a hash-table set: ties (or no sorting) keep each server's own set
        order (compatibility.md, SORT)."""
        if name not in ("sort", "sort_ro") or self.multi is not None or a[:1] != b"*" \
                or b[:1] != b"*" or "by" not in [x.lower() for x in args]:
            return False
        return self.ref.call("OBJECT", "ENCODING", args[1]) == b"$9\r\nhashtable\r\n"

    def check_state(self, databases=16):
        """Compare every key of every database by its content, after a run."""
        reads = {b"+string\r\n": [["GET"]], b"+list\r\n": [["LRANGE", "0", "-1"]],
                 b"+set\r\n": [["SMEMBERS"]], b"+hash\r\n": [["HGETALL"]],
                 b"+zset\r\n": [["ZRANGE", "0", "-1", "WITHSCORES"]],
                 b"+stream\r\n": [["XRANGE", "-", "+"], ["XINFO", "GROUPS"]]}
        for c in (self.ref, self.sk):
            c.call("DISCARD")
        for db in range(databases):
            for c in (self.ref, self.sk):
                c.call("SELECT", str(db))
            keys = [sorted(parse(c.call("KEYS", "*"))) for c in (self.ref, self.sk)]
            if keys[0] != keys[1]:
                self.failures.append("db %d keys differ after the run\n  redis: %r\n  "
                                     "skein: %r" % (db, keys[0], keys[1]))
            for key in keys[0]:
                if key not in keys[1]:
                    continue
                t = [c.call("TYPE", key) for c in (self.ref, self.sk)]
                probes = [["TYPE"]] + reads.get(t[0], []) if t[0] == t[1] else [["TYPE"]]
                for probe in probes:
                    cmd = probe[:1] + [key] + probe[1:]
                    a, b = (c.call(*cmd) for c in (self.ref, self.sk))
                    rule = "sort" if probe[0] in ("SMEMBERS", "HGETALL") else \
                        "type" if probe[0] == "XINFO" else None
                    if not compare(rule, a, b):
                        self.failures.append("db %d after the run: %s\n  redis: %r\n  "
                                             "skein: %r" % (db, fmt_cmd([x if isinstance(
                                                 x, str) else x.decode("latin-1")
                                                 for x in cmd]), a[:300], b[:300]))

    def ping(self):
        for who, c in (("redis", self.ref), ("skein", self.sk)):
            try:
                c.call("ECHO", "alive")
            except (socket.timeout, ConnectionError, OSError) as e:
                self.failures.append("%s did not answer after %d commands: %r"
                                     % (who, self.sent, e))


def run_seed(seed, count, ref_port, skein_port, specs, proto=None, log=None,
             malformed=0.15, modes=0.0, kinds=None):
    """Generate `count` commands from `seed` and run them; return the divergences."""
    r = random.Random(seed)
    proto = proto or (3 if r.random() < 0.3 else 2)
    setup = RawConn(ref_port), RawConn(skein_port)
    for c in setup:
        c.call("FLUSHALL")
        c.call("FUNCTION", "FLUSH")
        c.call("SCRIPT", "FLUSH")
        for name, value in RESET_CONFIG.items():
            c.call("CONFIG", "SET", name, value)
    commands = known_commands(setup[1], specs)
    for c in setup:
        c.close()
    gen = Generator(seed, specs, commands, malformed, modes, kinds)
    runner = Runner(ref_port, skein_port, proto)
    try:
        for cmd in gen.setup():
            if log:
                log.write(json.dumps([cmd[0].lower()] + cmd) + "\n")
            runner.send(cmd[0].lower(), cmd)
        for _ in range(count):
            name, args = gen.next()
            if log:
                log.write(json.dumps([name] + args) + "\n")
            runner.dispatch(name, args)
        runner.ping()
        runner.check_state()
    finally:
        runner.close()
    return ["seed %d: %s" % (seed, f) for f in runner.failures]


def replay(path, ref_port, skein_port, proto):
    """Run the commands a --log file holds (one JSON [name, args...] a line; blank lines
    and lines starting with # are skipped)."""
    for port in (ref_port, skein_port):
        c = RawConn(port)
        c.call("FLUSHALL")
        c.call("FUNCTION", "FLUSH")
        c.close()
    runner = Runner(ref_port, skein_port, proto)
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            name, *args = json.loads(line)
            runner.dispatch(name, args)
    runner.close()
    return runner.failures


def internal_errors(log_path):
    with open(log_path, errors="replace") as f:
        return [line.rstrip() for line in f if "internal error" in line]


def main():
    from conftest import ServerProc

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1, help="run seeds seed..seed+N-1")
    ap.add_argument("--count", type=int, default=5000, help="commands per seed")
    ap.add_argument("--proto", type=int, choices=[2, 3], default=None)
    ap.add_argument("--log", help="write the generated commands here")
    ap.add_argument("--max-report", type=int, default=40)
    ap.add_argument("--keep-log", help="copy skein-server's log here")
    ap.add_argument("--workers", type=int, default=2, help="skein-server's workers")
    ap.add_argument("--malformed", type=float, default=0.15,
                    help="share of malformed argument vectors")
    ap.add_argument("--replay", help="run the commands of a --log file instead")
    ap.add_argument("--modes", type=float, default=0.1,
                    help="share of steps of the kinds of cmd_fuzz_modes.MODES")
    ap.add_argument("--kinds", help="comma-separated kinds of MODES (default: all)")
    opts = ap.parse_args()
    specs = load_specs()
    ref = ServerProc("redis")
    sk = ServerProc("skein", workers=opts.workers)
    failures = []
    log = open(opts.log, "w") if opts.log else None
    try:
        if opts.replay:
            failures += replay(opts.replay, ref.port, sk.port, opts.proto or 2)
        for seed in range(opts.seed, opts.seed + opts.seeds) if not opts.replay else ():
            fs = run_seed(seed, opts.count, ref.port, sk.port, specs, opts.proto, log,
                          opts.malformed, opts.modes,
                          opts.kinds.split(",") if opts.kinds else None)
            print("seed %d: %d divergences" % (seed, len(fs)), flush=True)
            failures += fs
            if not sk.alive() or not ref.alive():
                failures.append("a server exited (redis %s, skein %s)"
                                % (ref.alive(), sk.alive()))
                break
        sk.log.flush()
        errs = internal_errors(os.path.join(sk.dir, "server.log"))
        if opts.keep_log:
            with open(os.path.join(sk.dir, "server.log"), "rb") as src, \
                    open(opts.keep_log, "wb") as dst:
                dst.write(src.read())
    finally:
        ref.stop()
        sk.stop()
        if log:
            log.close()
    for f in failures[:opts.max_report]:
        print(f)
    for e in errs:
        print("skein log:", e)
    print("%d divergences, %d internal errors" % (len(failures), len(errs)))
    return 1 if failures or errs else 0


if __name__ == "__main__":
    sys.exit(main())
