"""Generated differential tests for streams: seeded random sequences of stream commands
(entries with explicit and `<ms>-*` IDs, some out of order; deletions, exact and
approximate trims, XSETID; consumer groups read, acknowledged, claimed and autoclaimed by
several consumers; small node sizes now and then) run against redis-server 7.0.15 and
skein-server, replies compared byte for byte (XINFO STREAM's radix-tree figures and
XINFO GROUPS' lag and entries-read included). Commands whose replies carry times
(XPENDING's extended form, XINFO CONSUMERS, XINFO STREAM FULL) are left to
tests/test_streams_groups.py. On a mismatch the sequence is shrunk and printed."""
import random

import pytest

from test_generated import Cmd
from test_zsets_generated import check_seed

SEEDS = range(24)
COMMANDS_PER_SEED = 500

KEYS = [b"s0", b"s1", b"{t}s2"]
GROUPS = [b"g0", b"g1", b"g2"]
CONSUMERS = [b"alice", b"bob", b"carol", b"dan"]
FIELDS = [b"f", b"g", b"value", b"1", b""]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.ms = self.r.choice([0, 1, 100, 1700000000000])

    def key(self):
        return b"str" if self.r.random() < 0.02 else self.r.choice(KEYS)

    def new_id(self):
        r = self.r
        k = r.randrange(10)
        if k < 6:
            self.ms += r.choice([0, 1, 1, 2, 50])
            return b"%d-%d" % (self.ms, r.randrange(3))
        if k < 9:
            self.ms += r.choice([0, 1])
            return b"%d-*" % self.ms
        return b"%d-%d" % (max(0, self.ms - r.randrange(5)), r.randrange(3))

    def some_id(self):
        r = self.r
        k = r.randrange(8)
        if k == 0:
            return r.choice([b"-", b"+", b"0", b"0-0", b"x"])
        return b"%d-%d" % (max(0, self.ms - r.randrange(60)), r.randrange(3))

    def bound(self):
        i = self.some_id()
        return (b"(" + i) if self.r.random() < 0.2 and i not in (b"-", b"+") else i

    def fields(self):
        r = self.r
        n = r.choice([1, 1, 2, 3])
        names = r.choice([[b"f"], [b"f", b"g"], r.sample(FIELDS, n)])
        out = []
        for f in names:
            out += [f, r.choice([b"1", b"v", b"-42", b"x" * r.randrange(0, 70), b"%d" % r.randrange(10 ** 9)])]
        return out

    def trim(self):
        r = self.r
        if r.random() < 0.6:
            return []
        how = r.choice([b"MAXLEN", b"MINID"])
        out = [how] + ([r.choice([b"~", b"="])] if r.random() < 0.5 else [])
        out.append(str(r.randrange(0, 30)).encode() if how == b"MAXLEN" else self.some_id())
        if b"~" in out and r.random() < 0.3:
            out += [b"LIMIT", str(r.randrange(0, 20)).encode()]
        return out

    def count(self):
        return [b"COUNT", str(self.r.choice([1, 2, 5, 100])).encode()] if self.r.random() < 0.5 else []

    def command(self):
        r = self.r
        k = self.key()
        g, c = r.choice(GROUPS), r.choice(CONSUMERS)
        n = r.randrange(30)
        if n < 9:
            return Cmd([b"XADD", k] + ([b"NOMKSTREAM"] if r.random() < 0.05 else [])
                       + self.trim() + [self.new_id()] + self.fields())
        if n == 9:
            return Cmd([b"XDEL", k] + [self.some_id() for _ in range(r.randint(1, 3))])
        if n == 10:
            t = self.trim() or [b"MAXLEN", b"10"]
            return Cmd([b"XTRIM", k] + t)
        if n == 11:
            return Cmd([r.choice([b"XRANGE", b"XREVRANGE"]), k, self.bound(), self.bound()] + self.count())
        if n == 12:
            return Cmd([b"XLEN", k])
        if n == 13:
            ids = [r.choice([b"$", b"0", self.some_id()]) for _ in range(2)]
            return Cmd([b"XREAD"] + self.count() + [b"STREAMS", k, self.key()] + ids)
        if n in (14, 29):
            return Cmd([b"XGROUP", b"CREATE", k, g, r.choice([b"$", b"0", self.some_id()])]
                       + ([b"MKSTREAM"] if r.random() < 0.5 else [])
                       + ([b"ENTRIESREAD", str(r.randrange(-1, 5)).encode()] if r.random() < 0.2 else []))
        if n == 15:
            return Cmd([b"XGROUP", b"SETID", k, g, r.choice([b"$", b"0", self.some_id()])]
                       + ([b"ENTRIESREAD", str(r.randrange(-1, 5)).encode()] if r.random() < 0.3 else []))
        if n == 16:
            return Cmd([b"XGROUP", r.choice([b"CREATECONSUMER", b"DELCONSUMER"]), k, g, c])
        if n == 17:
            x = r.random()
            if x < 0.3:
                return Cmd([b"XGROUP", b"DESTROY", k, g])
            return Cmd([b"DEL", k] if x < 0.4 else [b"SET", b"str", b"x"])
        if n in (18, 19, 20):
            return Cmd([b"XREADGROUP", b"GROUP", g, c] + self.count()
                       + ([b"NOACK"] if r.random() < 0.15 else [])
                       + [b"STREAMS", k, r.choice([b">", b">", b"0", self.some_id()])])
        if n == 21:
            return Cmd([b"XACK", k, g] + [self.some_id() for _ in range(r.randint(1, 4))])
        if n == 22:
            return Cmd([b"XPENDING", k, g])
        if n == 23:
            opts = [o for o in ([b"JUSTID"], [b"FORCE"], [b"RETRYCOUNT", b"3"], [b"LASTID", self.some_id()])
                    if r.random() < 0.3]
            return Cmd([b"XCLAIM", k, g, c, b"0"] + [self.some_id() for _ in range(r.randint(1, 3))]
                       + [x for o in opts for x in o])
        if n == 24:
            return Cmd([b"XAUTOCLAIM", k, g, c, b"0", self.bound()] + self.count()
                       + ([b"JUSTID"] if r.random() < 0.4 else []))
        if n == 25:
            return Cmd([b"XINFO", b"GROUPS", k])
        if n == 26:
            return Cmd([b"XINFO", b"STREAM", k])
        if n == 27:
            return Cmd([b"XSETID", k, self.some_id()]
                       + ([b"ENTRIESADDED", str(r.randrange(0, 100)).encode()] if r.random() < 0.4 else [])
                       + ([b"MAXDELETEDID", self.some_id()] if r.random() < 0.3 else []))
        if n == 28:
            return Cmd([b"CONFIG", b"SET", b"stream-node-max-entries", str(r.choice([1, 2, 3, 5, 100])).encode()])
        return Cmd([b"XINFO", b"STREAM", k])

    def sequence(self, n):
        ops = [self.command() for _ in range(n)]
        for k in KEYS:
            ops += [Cmd([b"XINFO", b"STREAM", k]), Cmd([b"XINFO", b"GROUPS", k]),
                    Cmd([b"XRANGE", k, b"-", b"+"])]
            ops += [Cmd([b"XPENDING", k, g]) for g in GROUPS]
        ops.append(Cmd([b"CONFIG", b"SET", b"stream-node-max-entries", b"100"]))
        return ops


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_stream_sequence(seed, redis_server, skein_server):
    check_seed(Gen(seed), seed, COMMANDS_PER_SEED, redis_server, skein_server)
