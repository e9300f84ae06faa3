"""Generated differential tests for sorted sets: seeded random sequences of sorted-set
commands (a few keys, members that are names, integers and long strings, scores that are
integers, fractions, infinities and large values, occasional changes of the listpack
limits) run against redis-server 7.0.15 and skein-server; replies compared byte for byte
(DUMP included: listpack bytes and ZSET_2 order are Redis's), by shape where Redis picks
at random; OBJECT ENCODING checked along the way. On a mismatch the sequence is shrunk
(greedy, replayed on both servers) and printed in tests/scripts syntax."""
import random

import pytest

from difftool import run_script
from resp_client import RawConn
from test_generated import Cmd, run_ops, shrink

SEEDS = range(32)
COMMANDS_PER_SEED = 600

KEYS = [b"z0", b"z1", b"z2", b"{t}z3"]
STRING_KEY = b"str"
# Lex ranges are only defined over members of one score (Redis's answer otherwise depends
# on its skiplist's random levels): lex commands use this key, which only gets score 0.
LEX_KEY = b"lx"
NAMES = [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"aa", b"ab", b"ba", b"zz",
         b"", b"0", b"1", b"-1", b"10", b"007", b"1.5", b"9223372036854775807"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def key(self):
        r = self.r
        return STRING_KEY if r.random() < 0.03 else r.choice(KEYS)

    def member(self):
        r = self.r
        k = r.randrange(20)
        if k < 12:
            return r.choice(NAMES)
        if k < 17:
            return b"m%d" % r.randrange(60)
        if k < 19:
            return str(r.randint(-50, 50)).encode()
        return b"L" * r.choice([63, 64, 65, 70])

    def score(self):
        r = self.r
        k = r.randrange(12)
        if k < 5:
            return str(r.randint(-10, 10)).encode()
        if k < 7:
            return str(r.randint(-20, 20) / 4).encode()
        if k == 7:
            return r.choice([b"inf", b"-inf", b"+inf", b"-0", b"0.1", b"1e20", b"-1e-3"])
        if k == 8:
            return r.choice([b"4611686018427387904", b"4611686018427387903", b"1e18", b"5e18"])
        if k == 9:
            return r.choice([b"nan", b"abc", b"", b"1e400"])
        return str(r.randint(0, 3)).encode()

    def bound(self):
        r = self.r
        s = self.score() if r.random() < 0.8 else r.choice([b"-inf", b"+inf"])
        return (b"(" + s) if r.random() < 0.3 else s

    def lex(self):
        r = self.r
        k = r.randrange(6)
        if k == 0:
            return r.choice([b"-", b"+"])
        if k == 5:
            return r.choice([b"a", b"", b"x"])
        return r.choice([b"[", b"("]) + self.member()[:3]

    def index(self):
        return str(self.r.choice([0, 1, 2, 3, 5, 10, -1, -2, -3, -100, 100, 128, 129])).encode()

    def withscores(self):
        return [b"WITHSCORES"] if self.r.random() < 0.5 else []

    def limit(self):
        r = self.r
        if r.random() < 0.6:
            return []
        return [b"LIMIT", str(r.choice([0, 1, 2, -1, 5])).encode(),
                str(r.choice([0, 1, 3, -1, 10])).encode()]

    def zadd(self):
        r = self.r
        flags = [f for f in (b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR") if r.random() < 0.12]
        n = 1 if b"INCR" in flags else r.choice([1, 1, 2, 3, 5, 20, 70, 130])
        args = []
        for _ in range(n):
            args += [self.score() if r.random() < 0.97 else b"1", self.member()]
        if n > 20:
            args = []
            base = r.randrange(1000)
            for i in range(n):
                args += [str(r.randint(-5, 5)).encode(), b"g%d" % (base + i)]
        return [b"ZADD", self.key()] + flags + args

    def keys(self):
        n = self.r.randint(1, 3)
        return [str(n).encode()] + [self.key() for _ in range(n)]

    def command(self):
        r = self.r
        k = self.key()
        c = r.randrange(40)
        if c < 8:
            return Cmd(self.zadd())
        if c == 8:
            return Cmd([b"ZINCRBY", k, self.score(), self.member()])
        if c == 9:
            return Cmd([b"ZREM", k] + [self.member() for _ in range(r.randint(1, 4))])
        if c == 10:
            return Cmd([b"ZCARD", k])
        if c == 11:
            return Cmd([b"ZSCORE", k, self.member()])
        if c == 12:
            return Cmd([b"ZMSCORE", k] + [self.member() for _ in range(r.randint(1, 3))])
        if c == 13:
            return Cmd([r.choice([b"ZRANK", b"ZREVRANK"]), k, self.member()])
        if c == 14:
            return Cmd([b"ZCOUNT", k, self.bound(), self.bound()])
        if c == 15:
            if r.random() < 0.3:
                n = r.choice([1, 3, 60, 140])
                args = []
                for _ in range(n):
                    args += [b"0", self.member() if r.random() < 0.7 else b"w%d" % r.randrange(400)]
                return Cmd([b"ZADD", LEX_KEY] + args)
            return Cmd([b"ZLEXCOUNT", LEX_KEY, self.lex(), self.lex()])
        if c in (16, 17):
            return Cmd([r.choice([b"ZRANGE", b"ZREVRANGE"]), k, self.index(), self.index()]
                       + self.withscores())
        if c == 18:
            return Cmd([b"ZRANGE", k, self.bound(), self.bound(), b"BYSCORE"]
                       + ([b"REV"] if r.random() < 0.5 else []) + self.limit() + self.withscores())
        if c == 19:
            return Cmd([r.choice([b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE"]), k, self.bound(),
                        self.bound()] + self.withscores() + self.limit())
        if c == 20:
            return Cmd([r.choice([b"ZRANGEBYLEX", b"ZREVRANGEBYLEX"]), LEX_KEY, self.lex(), self.lex()]
                       + self.limit())
        if c == 21:
            src = self.key()
            how = r.choice([[self.index(), self.index()],
                            [self.bound(), self.bound(), b"BYSCORE"] + self.limit()])
            if r.random() < 0.2:
                src, how = LEX_KEY, [self.lex(), self.lex(), b"BYLEX"]
            return Cmd([b"ZRANGESTORE", k, src] + how + ([b"REV"] if r.random() < 0.3 else []))
        if c == 22:
            return Cmd([b"ZREMRANGEBYRANK", k, self.index(), self.index()])
        if c == 23:
            return Cmd([b"ZREMRANGEBYSCORE", k, self.bound(), self.bound()])
        if c == 24:
            return Cmd([b"ZREMRANGEBYLEX", LEX_KEY, self.lex(), self.lex()])
        if c == 25:
            cnt = [] if r.random() < 0.4 else [str(r.choice([0, 1, 2, 5, 200, -1])).encode()]
            return Cmd([r.choice([b"ZPOPMIN", b"ZPOPMAX"]), k] + cnt)
        if c == 26:
            cnt = [] if r.random() < 0.4 else [b"COUNT", str(r.choice([1, 2, 5, 300, 0])).encode()]
            return Cmd([b"ZMPOP"] + self.keys() + [r.choice([b"MIN", b"MAX"])] + cnt)
        if c == 27:
            n = r.choice([None, 0, 1, 3, -3, 500, -1])
            if n is None:
                return Cmd([b"ZRANDMEMBER", k], "type")
            args = [b"ZRANDMEMBER", k, str(n).encode()] + self.withscores()
            return Cmd(args, None if n in (0, 500) else "type")
        if c in (28, 29):
            op = r.choice([b"ZUNION", b"ZINTER", b"ZDIFF"])
            extra = []
            ks = self.keys()
            if op != b"ZDIFF" and r.random() < 0.4:
                extra += [b"WEIGHTS"] + [r.choice([b"1", b"2", b"-1", b"0.5", b"inf"])
                                         for _ in ks[1:]]
            if op != b"ZDIFF" and r.random() < 0.4:
                extra += [b"AGGREGATE", r.choice([b"SUM", b"MIN", b"MAX"])]
            if r.random() < 0.5:
                return Cmd([op + b"STORE", k] + ks + extra)
            return Cmd([op] + ks + extra + self.withscores())
        if c == 30:
            return Cmd([b"ZINTERCARD"] + self.keys()
                       + ([b"LIMIT", str(r.choice([0, 1, 3])).encode()] if r.random() < 0.5 else []))
        if c in (31, 32, 33):
            return Cmd([b"OBJECT", b"ENCODING", k])
        if c == 34:
            return Cmd([b"DUMP", k])
        if c == 35:
            name = r.choice([b"zset-max-listpack-entries", b"zset-max-ziplist-entries"])
            return Cmd([b"CONFIG", b"SET", name, r.choice([b"0", b"2", b"4", b"8", b"128"])])
        if c == 36:
            name = r.choice([b"zset-max-listpack-value", b"zset-max-ziplist-value"])
            return Cmd([b"CONFIG", b"SET", name, r.choice([b"1", b"3", b"64"])])
        if c == 37:
            return Cmd([b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"])
        if c == 38:
            return Cmd([b"SET", STRING_KEY, b"v"])
        return Cmd([b"DEL", k])

    def sequence(self, n):
        ops = [Cmd([b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"]),
               Cmd([b"CONFIG", b"SET", b"zset-max-listpack-value", b"64"])]
        ops += [self.command() for _ in range(n)]
        for k in KEYS + [LEX_KEY]:
            ops.append(Cmd([b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"]))
            ops.append(Cmd([b"OBJECT", b"ENCODING", k]))
        ops += [Cmd([b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"]),
                Cmd([b"CONFIG", b"SET", b"zset-max-listpack-value", b"64"])]
        return ops


def report(seed, proto, ops, found, ports):
    """The mismatch, and the shrunk sequence that still shows one, as script lines."""
    index, first = found
    minimal = shrink(ops[:index + 1], *ports, proto)
    again = run_ops(minimal, *ports, proto)
    parts = ["seed %d (RESP%d): mismatch at command %d:" % (seed, proto, index), first, "",
             "minimal failing sequence (%d commands, tests/scripts syntax):" % len(minimal)]
    parts += [repr(op) for op in minimal]
    if again:
        parts += ["", "its mismatch:", again[1]]
    return "\n".join(parts)


def check_seed(gen, seed, count, redis_server, skein_server):
    """Run `count` commands of generator `gen` (seeded with `seed`, which also picks the
    protocol) on both servers; fail with the shrunk mismatch, if any."""
    proto = 3 if seed % 3 == 2 else 2
    ops = gen.sequence(count)
    ports = (redis_server.port, skein_server.port)
    found = run_ops(ops, *ports, proto)
    if found is not None:
        pytest.fail(report(seed, proto, ops, found, ports))


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_zset_sequence(seed, redis_server, skein_server):
    check_seed(Gen(seed), seed, COMMANDS_PER_SEED, redis_server, skein_server)


# Sets (intset and hash table) as inputs of the union/intersection/difference commands.
# SADD and LPUSH come with the set and list families: until they are in this build, the
# test is skipped (it passes on a merge with coll-sets, checked).
SET_INPUTS = """
ZADD a 1 x 2 y 3 z
ZADD b 10 y 20 z 30 w
SADD s y w q
SADD is 1 2 3
ZADD n 5 1 6 2
ZUNION 3 a b s WITHSCORES
ZUNION 3 a nokey s WITHSCORES
ZUNION 2 n is WITHSCORES
ZUNION 2 s is WEIGHTS 2 3 WITHSCORES
ZINTER 3 a b s WITHSCORES
ZINTER 2 n is WITHSCORES AGGREGATE MAX
ZINTER 2 s s WITHSCORES
ZDIFF 2 b s WITHSCORES
ZDIFF 2 s a WITHSCORES
ZDIFF 2 is n WITHSCORES
ZINTERCARD 2 a s
ZINTERCARD 2 is n LIMIT 1
ZUNIONSTORE d1 2 s is
ZRANGE d1 0 -1 WITHSCORES
OBJECT ENCODING d1
ZINTERSTORE d2 2 b s WEIGHTS 1 5
ZRANGE d2 0 -1 WITHSCORES
ZDIFFSTORE d3 2 is n
ZRANGE d3 0 -1 WITHSCORES
ZRANGESTORE d5 s 0 -1
ZRANGE s 0 -1
ZCARD s
ZPOPMIN s
"""


@pytest.mark.parametrize("proto", [2, 3])
def test_sets_as_inputs(proto, redis_server, skein_server):
    probe = RawConn(skein_server.port)
    try:
        have_sets = not probe.call("SADD", "probe:set", "1").startswith(b"-ERR unknown")
        probe.call("DEL", "probe:set")
    finally:
        probe.close()
    if not have_sets:
        pytest.skip("SADD is not in this build (set family not merged)")
    failures = run_script(SET_INPUTS, redis_server.port, skein_server.port, proto, "set-inputs")
    assert not failures, "\n".join(failures)
