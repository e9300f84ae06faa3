"""Generated differential tests for hashes: seeded random sequences of hash commands over a
few keys, run against redis-server 7.0.15 and skein-server, replies compared byte for
byte, OBJECT ENCODING checked along the way. Some seeds lower the listpack thresholds
(CONFIG SET, restored after) so that conversions happen often.

A small model of each key (its fields, and whether it is surely still a listpack) tells
which replies have an order to compare: a listpack's order is Redis's insertion order, a
hash table's is not comparable (sorted then). On a mismatch the sequence is shrunk with
tests/test_generated.py's delta debugging and printed in tests/scripts syntax.

Last, the propagation stream of a hash workload (HINCRBYFLOAT rewritten as HSET) replays
into a fresh redis-server to the same hashes.
"""
import random

import pytest

import test_generated
from difftool import compare
from resp_client import RawConn, parse
from test_generated import Cmd
from test_propagation import commands

SEEDS = range(24)
COMMANDS_PER_SEED = 300

KEYS = [b"h0", b"h1", b"h2", b"{t}h3"]
INT_EDGES = [b"0", b"1", b"-1", b"9223372036854775807", b"-9223372036854775808",
             b"9223372036854775806", b"-9223372036854775807"]


class Model:
    """What the generator knows of one key."""

    def __init__(self):
        self.fields = {}
        self.table = False      # converted (one way)
        self.unsure = False     # a value of unknown length was written (HINCRBYFLOAT)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        small = seed % 3 == 1
        self.max_entries = 4 if small else 512
        self.max_value = 6 if small else 64
        self.keys = {k: Model() for k in KEYS}
        self.nfields = self.r.choice([6, 20, 40]) if small else self.r.choice([8, 40, 700])

    def field(self):
        r = self.r
        i = r.randrange(self.nfields)
        kind = r.randrange(40)
        if kind < 4:
            return str(i).encode()
        if kind == 4:
            return b"long-field-%d-" % i + b"x" * 60
        if kind == 5:
            return b""
        return b"f%d" % i

    def value(self):
        r = self.r
        kind = r.randrange(8)
        if kind == 0:
            return r.choice(INT_EDGES)
        if kind == 1:
            return str(r.randrange(-1000, 1000)).encode()
        if kind == 2:
            return b"v" * r.choice([0, 5, 6, 7, 63, 64, 0, 64, 65, 100])
        if kind == 3:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 10)))
        if kind == 4:
            return b"%d.%d" % (r.randrange(100), r.randrange(100))
        return b"val%d" % r.randrange(50)

    def write(self, key, pairs):
        m = self.keys[key]
        for f, v in pairs:
            if len(f) > self.max_value or len(v) > self.max_value:
                m.table = True
            m.fields[f] = v
        if len(m.fields) > self.max_entries:
            m.table = True

    def ordered(self, key):
        """Rule for a reply whose order is the hash's."""
        m = self.keys[key]
        return "sort" if m.table or m.unsure else None

    def command(self):
        r = self.r
        key = r.choice(KEYS)
        m = self.keys[key]
        order = self.ordered(key)
        pick = r.randrange(100)
        if pick < 25:
            pairs = [(self.field(), self.value()) for _ in range(r.choice([1, 1, 2, 5, 20]))]
            self.write(key, pairs)
            name = r.choice([b"HSET", b"HSET", b"HMSET"])
            return [Cmd([name, key] + [x for p in pairs for x in p])]
        if pick < 30:
            f, v = self.field(), self.value()
            if f not in m.fields:
                self.write(key, [(f, v)])
            return [Cmd([b"HSETNX", key, f, v])]
        if pick < 38:
            return [Cmd([b"HGET", key, self.field()])]
        if pick < 42:
            return [Cmd([b"HMGET", key] + [self.field() for _ in range(r.randrange(1, 5))])]
        if pick < 50:
            fields = [self.field() for _ in range(r.randrange(1, 4))]
            for f in fields:
                m.fields.pop(f, None)
            if not m.fields:
                self.keys[key] = Model()
            return [Cmd([b"HDEL", key] + fields)]
        if pick < 53:
            return [Cmd([b"HLEN", key])]
        if pick < 56:
            return [Cmd([b"HSTRLEN", key, self.field()])]
        if pick < 59:
            return [Cmd([b"HEXISTS", key, self.field()])]
        if pick < 65:
            f = self.field()
            incr = r.choice([b"1", b"-1", b"100", b"9223372036854775807", b"-5", b"x"])
            old = m.fields.get(f, b"0")
            try:
                new = int(old) + int(incr)
                if str(int(old)).encode() == old and -2**63 <= new < 2**63:
                    self.write(key, [(f, str(new).encode())])
            except ValueError:
                pass
            return [Cmd([b"HINCRBY", key, f, incr])]
        if pick < 69:
            f = self.field()
            incr = r.choice([b"1.5", b"-0.25", b"1e3", b"3", b"abc", b"1e300"])
            if incr != b"abc":
                m.unsure = True
                m.fields.setdefault(f, b"0")
                if len(f) > self.max_value or len(m.fields) > self.max_entries:
                    m.table = True
            return [Cmd([b"HINCRBYFLOAT", key, f, incr])]
        if pick < 73:
            return [Cmd([b"HKEYS", key], order)]
        if pick < 76:
            return [Cmd([b"HVALS", key], order)]
        if pick < 80:
            return [Cmd([b"HGETALL", key], order)]
        if pick < 84:
            # A listpack answers everything at cursor 0; a table is compared by content.
            return [Cmd([b"HSCAN", key, b"0", b"COUNT", b"100000"],
                        "scanpairs" if order else None)]
        if pick < 90:
            n = r.choice([0, 1, 3, -3, -1, 1000])
            wv = [b"WITHVALUES"] if r.random() < 0.5 else []
            rule = "type"
            if n == 0 or (n >= len(m.fields)):
                rule = order
            return [Cmd([b"HRANDFIELD", key, str(n).encode()] + wv, rule)]
        if pick < 92:
            return [Cmd([b"HRANDFIELD", key], "type" if m.fields else None)]
        if pick < 94:
            self.keys[key] = Model()
            return [Cmd([b"DEL", key])]
        if pick < 96 and not m.fields:
            # A string in the way: WRONGTYPE, then gone again.
            return [Cmd([b"SET", key, b"str"]), Cmd([b"HGET", key, b"f"]),
                    Cmd([b"HSET", key, b"f", b"v"]), Cmd([b"HINCRBY", key, b"f", b"1"]),
                    Cmd([b"DEL", key])]
        return [Cmd([b"OBJECT", b"ENCODING", key])]

    def sequence(self, n):
        ops = []
        if self.max_entries != 512:
            ops.append(Cmd([b"CONFIG", b"SET", b"hash-max-listpack-entries", self.max_entries]))
            ops.append(Cmd([b"CONFIG", b"SET", b"hash-max-listpack-value", self.max_value]))
        while len(ops) < n:
            ops += self.command()
            if self.r.random() < 0.3:
                ops.append(Cmd([b"OBJECT", b"ENCODING", self.r.choice(KEYS)]))
        return ops


def scan_pairs(reply):
    v = parse(reply)
    if not isinstance(v, list):
        return v
    items = v[1]
    return v[0], sorted(zip(items[0::2], items[1::2]))


def compare_hash(rule, param, a, b):
    """difftool's compare with one more rule: an HSCAN reply compared by its cursor and
    its sorted pairs."""
    if rule == "scanpairs":
        return scan_pairs(a) == scan_pairs(b)
    return compare(rule, param, a, b)


def reset_limits(*ports):
    for port in ports:
        c = RawConn(port)
        c.call("CONFIG", "SET", "hash-max-listpack-entries", "512")
        c.call("CONFIG", "SET", "hash-max-listpack-value", "64")
        c.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_hash_sequence(seed, redis_server, skein_server, monkeypatch):
    proto = 3 if seed % 4 == 3 else 2
    ops = Gen(seed).sequence(COMMANDS_PER_SEED)
    # test_generated's runner and shrinker, with the HSCAN rule added.
    monkeypatch.setattr(test_generated, "compare", compare_hash)
    try:
        found = test_generated.run_ops(ops, redis_server.port, skein_server.port, proto)
        if found is None:
            return
        index, first = found
        prefix = [op for op in ops[:2] if op.args[0] == b"CONFIG"]
        minimal = test_generated.shrink(ops[:index + 1], redis_server.port,
                                        skein_server.port, proto)
    finally:
        reset_limits(redis_server.port, skein_server.port)
    script = "\n".join(repr(op) for op in prefix + minimal)
    pytest.fail("seed %d (RESP%d): mismatch at command %d:\n%s\n\nminimal failing sequence "
                "(%d commands):\n%s" % (seed, proto, index, first, len(minimal), script))


def test_propagation_replays_to_same_hashes(fresh_skein, fresh_redis):
    skein = fresh_skein(workers=2)
    ref = fresh_redis()
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    r = random.Random(3)
    for i in range(600):
        key = "p%d" % r.randrange(5)
        f = "f%d" % r.randrange(30)
        op = r.randrange(6)
        if op == 0:
            c.call("HSET", key, f, r.randrange(100), "g%d" % i, "x" * r.choice([1, 70]))
        elif op == 1:
            c.call("HINCRBYFLOAT", key, f, r.choice(["0.1", "1e3", "-2.5", "3"]))
        elif op == 2:
            c.call("HINCRBY", key, "n", r.randrange(-5, 5))
        elif op == 3:
            c.call("HDEL", key, f, "nothing")
        elif op == 4:
            c.call("HSETNX", key, f, "nx")
        else:
            c.call("HMSET", key, f, "m")
    raw = c.call("DEBUG", "PROPAGATION", "TAKE")
    head, _, rest = raw.partition(b"\r\n")
    stream = rest[: int(head[1:])]
    cmds = commands(stream)
    names = {x[0].upper() for x in cmds}
    assert b"HINCRBYFLOAT" not in names and b"HSET" in names
    feed = RawConn(ref.port)
    feed.send_raw(stream)
    replies = [feed.read_reply() for _ in cmds]
    assert not [x for x in replies if x.startswith(b"-")]
    refc = RawConn(ref.port)
    for k in range(5):
        key = "p%d" % k
        a, b = parse(refc.call("HGETALL", key)), parse(c.call("HGETALL", key))
        assert sorted(zip(a[0::2], a[1::2])) == sorted(zip(b[0::2], b[1::2])), key
    c.call("DEBUG", "PROPAGATION", "STOP")
