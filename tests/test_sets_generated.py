"""Generated differential tests for sets: seeded random sequences of set commands (a few
keys, members that are small integers, integer edges, text and binary, occasional changes of
set-max-intset-entries) run against redis-server 7.0.15 and skein-server; replies compared
byte for byte, or sorted where Redis's order is a hash table's, or by shape where Redis picks
at random; OBJECT ENCODING checked along the way.

SPOP's picks differ between the servers, so each server's popped members are added back
to it right after the pop (and SCARD compared in between): the two keyspaces stay equal.
On a mismatch the sequence is shrunk (greedy, replayed on both servers) and printed in
tests/scripts syntax.
"""
import pytest

from difftool import compare, scan_all
from resp_client import RawConn, parse
from test_generated import Cmd, Gen as StringGen, quote

SEEDS = range(24)
COMMANDS_PER_SEED = 400
MAX_SHRINK_REPLAYS = 300

KEYS = [b"s0", b"s1", b"s2", b"{t}s3"]
STRING_KEY = b"str"
INT_EDGES = [b"0", b"-1", b"32767", b"32768", b"-32769", b"2147483648",
             b"9223372036854775807", b"-9223372036854775808"]
NOT_INTS = [b"", b"01", b"+1", b" 1", b"-0", b"1.5", b"9223372036854775808", b"a", b"b",
            b"hello", b"x" * 30]


class Pop:
    """SPOP (with or without a count) whose members each server gets back afterwards."""

    attached = False

    def __init__(self, args):
        self.args = args

    def __repr__(self):
        return " ".join(quote(a) for a in self.args)


class ScanAll:
    """A whole SSCAN iteration on each server, compared as a sorted union."""

    attached = False

    def __init__(self, args):
        self.args = args

    def __repr__(self):
        return "@scanall " + " ".join(quote(a) for a in self.args)


class Gen(StringGen):
    """Set commands over the model (the seeded generator and `sequence` are the string
    generator's)."""

    def key(self):
        return self.r.choice(KEYS) if self.r.random() < 0.95 else STRING_KEY

    def member(self):
        r = self.r
        k = r.randrange(10)
        if k < 6:
            return str(r.randint(-12, 12)).encode()
        if k < 7:
            return r.choice(INT_EDGES)
        if k < 9:
            return r.choice(NOT_INTS)
        return bytes(r.randrange(256) for _ in range(r.randint(1, 6)))

    def members(self, lo=1, hi=6):
        return [self.member() for _ in range(self.r.randint(lo, hi))]

    def count(self):
        return self.r.choice([b"0", b"1", b"2", b"3", b"5", b"10", b"100", b"-1", b"-3",
                              b"-20", b"abc"])

    def command(self):
        r = self.r
        k = self.key
        choices = [
            (14, lambda: [Cmd([b"SADD", k()] + self.members())]),
            (6, lambda: [Cmd([b"SREM", k()] + self.members())]),
            (4, lambda: [Cmd([b"SISMEMBER", k(), self.member()])]),
            (3, lambda: [Cmd([b"SMISMEMBER", k()] + self.members())]),
            (4, lambda: [Cmd([b"SCARD", k()])]),
            (4, lambda: [Cmd([b"SMEMBERS", k()], "sort")]),
            (6, lambda: [Cmd([b"OBJECT", b"ENCODING", k()])]),
            (3, lambda: [Pop([b"SPOP", k()])]),
            (3, lambda: [Pop([b"SPOP", k(), self.count()])]),
            (2, lambda: [Cmd([b"SRANDMEMBER", k()], "type")]),
            (3, lambda: [Cmd([b"SRANDMEMBER", k(), self.count()], "shape")]),
            (4, lambda: [Cmd([b"SMOVE", k(), k(), self.member()])]),
            (3, lambda: [Cmd([b"SINTER"] + [k() for _ in range(r.randint(1, 3))], "sort")]),
            (3, lambda: [Cmd([b"SUNION"] + [k() for _ in range(r.randint(1, 3))], "sort")]),
            (3, lambda: [Cmd([b"SDIFF"] + [k() for _ in range(r.randint(1, 4))], "sort")]),
            (3, lambda: [Cmd([b"SINTERSTORE", k()] + [k() for _ in range(r.randint(1, 3))])]),
            (3, lambda: [Cmd([b"SUNIONSTORE", k()] + [k() for _ in range(r.randint(1, 3))])]),
            (3, lambda: [Cmd([b"SDIFFSTORE", k()] + [k() for _ in range(r.randint(1, 4))])]),
            (2, lambda: [Cmd([b"SINTERCARD", b"2", k(), k()] +
                             ([b"LIMIT", r.choice([b"0", b"1", b"3", b"-1"])]
                              if r.random() < 0.5 else []))]),
            (2, lambda: [ScanAll([b"SSCAN", k(), b"0", b"COUNT", r.choice([b"1", b"3", b"10"])] +
                                 ([b"MATCH", r.choice([b"*1*", b"-*", b"[ab]*"])]
                                  if r.random() < 0.3 else []))]),
            (1, lambda: [Cmd([b"SET", STRING_KEY, b"v"])]),
            (1, lambda: [Cmd([b"DEL", k()])]),
            (1, lambda: [Cmd([b"CONFIG", b"SET", b"set-max-intset-entries",
                              r.choice([b"0", b"1", b"3", b"5", b"8", b"512"])])]),
        ]
        weights, makers = zip(*choices)
        return r.choices(makers, weights)[0]()


def same_shape(a, b):
    """Random replies: the same type and, for arrays, the same length."""
    pa, pb = parse(a), parse(b)
    if isinstance(pa, list) and isinstance(pb, list):
        return a[:1] == b[:1] and len(pa) == len(pb)
    return a[:1] == b[:1] and (a[:1] not in (b"-", b":") or a == b)


def run_ops(ops, ref_port, sk_port, proto):
    """Run `ops` on both servers after FLUSHALL (and the default intset limit); None or
    (index, description) of the first mismatch."""
    conns = [RawConn(ref_port), RawConn(sk_port)]
    try:
        for c in conns:
            c.call("FLUSHALL")
            c.call("CONFIG", "SET", "set-max-intset-entries", "512")
            if proto == 3:
                c.call("HELLO", "3")
        for i, op in enumerate(ops):
            if isinstance(op, ScanAll):
                a, b = (scan_all(c, op.args) for c in conns)
                ok = a == b
            elif isinstance(op, Pop):
                a, b = (c.call(*op.args) for c in conns)
                ok = same_shape(a, b)
                key = op.args[1]
                ca, cb = (c.call("SCARD", key) for c in conns)
                if ok and ca != cb:
                    ok, a, b = False, ca, cb
                for c, reply in zip(conns, (a, b)):
                    got = parse(reply)
                    got = [got] if isinstance(got, bytes) else got
                    if isinstance(got, list) and got:
                        c.call("SADD", key, *got)
            elif op.rule == "shape":
                a, b = (c.call(*op.args) for c in conns)
                ok = same_shape(a, b)
            else:
                a, b = (c.call(*op.args) for c in conns)
                ok = compare(op.rule, op.param, a, b)
            if not ok:
                return i, "%r\n  redis: %r\n  skein: %r" % (op, a, b)
        return None
    finally:
        for c in conns:
            c.call("CONFIG", "SET", "set-max-intset-entries", "512")
            c.close()


def shrink(ops, ref_port, sk_port, proto):
    """Greedy delta debugging: drop chunks of commands while a mismatch remains."""
    replays = 0
    chunk = max(1, len(ops) // 2)
    while chunk >= 1 and replays < MAX_SHRINK_REPLAYS:
        i, removed = 0, False
        while i < len(ops) and replays < MAX_SHRINK_REPLAYS:
            candidate = ops[:i] + ops[i + chunk:]
            replays += 1
            if candidate and run_ops(candidate, ref_port, sk_port, proto) is not None:
                ops, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return ops


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_set_sequence(seed, redis_server, skein_server):
    proto = 3 if seed % 3 == 2 else 2
    ops = Gen(seed).sequence(COMMANDS_PER_SEED)
    found = run_ops(ops, redis_server.port, skein_server.port, proto)
    if found is None:
        return
    index, first = found
    minimal = shrink(ops[:index + 1], redis_server.port, skein_server.port, proto)
    script = "\n".join(repr(op) for op in minimal)
    pytest.fail("seed %d (RESP%d): mismatch at command %d:\n%s\n\nminimal failing sequence "
                "(%d commands):\n%s" % (seed, proto, index, first, len(minimal), script))
