"""Differential ACL fuzzer: random ACL SETUSER rules (valid and not), then ACL GETUSER,
ACL LIST, ACL DRYRUN of random commands and the same commands run as that user,
compared between redis-server 7.0.15 and Skein. The order of single-command rules in a
description and the client details of ACL LOG are compared by rule (see test_acl.py).

    python3 tests/acl_fuzz.py --skein-port P --redis-port Q [--seed S] [--steps N]
"""
import argparse
import random

from resp_client import RawConn, parse
from test_acl import missing_commands, norm, without

CATEGORIES = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
              "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
              "blocking", "dangerous", "connection", "transaction", "scripting", "all",
              "nosuch"]
COMMANDS = ["get", "set", "del", "hset", "hget", "lpush", "lrange", "sadd", "zadd",
            "zrange", "publish", "subscribe", "psubscribe", "config", "config|get",
            "config|set", "client", "client|id", "client|kill", "select", "debug",
            "object", "object|encoding", "xadd", "xread", "eval", "flushall", "keys",
            "ping", "multi", "exec", "acl", "acl|whoami", "acl|setuser", "info", "copy",
            "mset", "sort", "bitop", "pfmerge", "georadius", "nosuch", "memory|usage"]
PATTERNS = ["*", "a*", "a:*", "b?", "[ab]*", "key", "x*y", "*:1", ""]


def rand_rule(r):
    k = r.random()
    if k < 0.25:
        return r.choice("+-") + "@" + r.choice(CATEGORIES)
    if k < 0.5:
        c = r.choice(COMMANDS)
        if r.random() < 0.1 and "|" not in c:
            c += "|" + r.choice(["0", "1", "get", "x", ""])
        return r.choice("+-") + c
    if k < 0.62:
        return r.choice(["~", "%R~", "%W~", "%RW~", "%WR~", "%r~"]) + r.choice(PATTERNS)
    if k < 0.7:
        return "&" + r.choice(PATTERNS)
    if k < 0.8:
        return r.choice(["allkeys", "resetkeys", "allchannels", "resetchannels",
                         "allcommands", "nocommands", "on", "off", "nopass", "resetpass",
                         "reset", "clearselectors", "sanitize-payload"])
    if k < 0.88:
        return r.choice([">", "<", "#", "!"]) + r.choice(["pw", "a" * 64, "x"])
    inner = " ".join(rand_rule(r) for _ in range(r.randint(0, 3)))
    return "(" + inner + ")"


def rand_call(r):
    return r.choice([
        ["GET", r.choice(["a:1", "b1", "key", "zz"])],
        ["SET", r.choice(["a:1", "b1", "key"]), "v"],
        ["COPY", r.choice(["a:1", "key"]), r.choice(["b1", "a:2"])],
        ["MSET", "a:1", "x", r.choice(["b1", "key"]), "y"],
        ["HSET", "key", "f", "v"], ["LRANGE", "a:1", "0", "-1"],
        ["PUBLISH", r.choice(["a", "key", "xy"]), "m"],
        ["SUBSCRIBE", r.choice(["a", "ab"]), r.choice(["key", "a:1"])],
        ["PSUBSCRIBE", r.choice(["a*", "*", "key"])],
        ["CONFIG", "GET", "port"], ["CONFIG", "SET", "maxmemory", "0"],
        ["CLIENT", "ID"], ["SELECT", r.choice(["0", "1"])], ["OBJECT", "ENCODING", "a:1"],
        ["PING"], ["KEYS", "*"], ["FLUSHALL"], ["DEBUG", "SLEEP", "0"],
        ["SORT", "a:1", "BY", "w*"], ["EVAL", "return 1", "0"],
        ["XADD", "a:1", "*", "f", "v"], ["BITOP", "AND", "a:1", "b1"],
    ])


def run(redis_port, skein_port, seed, steps):
    import types
    servers = [types.SimpleNamespace(port=redis_port), types.SimpleNamespace(port=skein_port)]
    missing = missing_commands(*servers)
    r = random.Random(seed)
    admin = [RawConn(redis_port), RawConn(skein_port)]
    users = [RawConn(redis_port), RawConn(skein_port)]
    for c in admin:
        c.call("ACL", "SETUSER", "fz", "reset")
    for step in range(steps):
        rules = [rand_rule(r) for _ in range(r.randint(1, 4))]
        for cmd in (["ACL", "SETUSER", "fz"] + rules, ["ACL", "GETUSER", "fz"],
                    ["ACL", "LIST"]):
            got = [norm(parse(c.call(*cmd))) for c in admin]
            got[0] = without(got[0], missing)
            assert got[0] == got[1], "seed %d step %d %r\nredis: %r\nskein: %r" % (
                seed, step, cmd, got[0], got[1])
        call = rand_call(r)
        got = [parse(c.call("ACL", "DRYRUN", "fz", *call)) for c in admin]
        assert got[0] == got[1], "seed %d step %d dryrun %r\nredis: %r\nskein: %r" % (
            seed, step, call, got[0], got[1])
        # Run it as the user (on for the run, with a password both know).
        for c in admin:
            c.call("ACL", "SETUSER", "fzrun", "reset")
            c.call("ACL", "SETUSER", "fzrun", *[x for x in rules if x not in ("reset",)])
            c.call("ACL", "SETUSER", "fzrun", "on", ">p")
        if call[0] in ("SUBSCRIBE", "PSUBSCRIBE", "FLUSHALL", "DEBUG", "KEYS"):
            continue
        got = []
        for c in users:
            a = parse(c.call("AUTH", "fzrun", "p"))
            b = parse(c.call(*call))
            if isinstance(b, list) or isinstance(b, int):
                b = type(b).__name__
            got.append((a, b if not isinstance(b, bytes) or b.startswith(b"-") else "bulk"))
        assert got[0] == got[1], "seed %d step %d run %r rules %r\nredis: %r\nskein: %r" % (
            seed, step, call, rules, got[0], got[1])
        for c in users:
            c.call("AUTH", "default", "x")
    for c in admin:
        c.call("ACL", "DELUSER", "fz", "fzrun")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis-port", type=int, required=True)
    ap.add_argument("--skein-port", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    run(a.redis_port, a.skein_port, a.seed, a.steps)
    print("ok")
