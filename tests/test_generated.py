"""Generated differential tests: random command sequences over a small model (a few keys in
a few databases; string values that are integers, text, binary or empty; TTLs) run against
redis-server 7.0.15 and skein-server, replies compared byte for byte with difftool's rules
for time-dependent replies (`@approx 1 TTL`).

Seeds are fixed, so every run sends the same commands. On a mismatch the failing sequence
is shrunk (greedy delta debugging, replayed on both servers) and printed in the syntax of
tests/scripts/*.txt, ready to paste into a script.

Timing: TTLs are either long (minutes or more, or absolute times in 2100) or already due;
a short TTL (1 ms, or a time already past) is always followed by a 5 ms sleep and an
EXISTS of that key on both sides, which deletes the expired key on both, so whether a key
has expired (and what DBSIZE counts) never depends on how fast either server is or when
its active expiry cycle runs.
"""
import random
import time

import pytest

from difftool import compare
from resp_client import RawConn

SEEDS = range(16)
COMMANDS_PER_SEED = 300
MAX_SHRINK_REPLAYS = 400

KEYS = [b"k0", b"k1", b"k2", b"{t}k3"]
INT_EDGES = [b"0", b"1", b"-1", b"9223372036854775807", b"-9223372036854775808",
             b"9223372036854775806", b"-9223372036854775807"]
FAR_EXAT = b"4102444800"          # 2100-01-01, in seconds
FAR_PXAT = b"4102444800000"


class Sleep:
    attached = True     # belongs to the command before it (kept together when shrinking)

    def __init__(self, ms):
        self.ms = ms

    def __repr__(self):
        return "@sleep %d" % self.ms


class Cmd:
    """One command and the rule its replies are compared by (None = byte for byte)."""

    def __init__(self, args, rule=None, param=None, attached=False):
        self.args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self.rule, self.param = rule, param
        self.attached = attached

    def __repr__(self):
        head = ""
        if self.rule:
            head = "@%s %s " % (self.rule, self.param) if self.param is not None else "@%s " % self.rule
        return head + " ".join(quote(a) for a in self.args)


def quote(arg):
    """redis-cli / difftool.split_line quoting."""
    if arg and all(0x21 <= b <= 0x7e and b not in b"\"'\\" for b in arg):
        return arg.decode()
    out = []
    for b in arg:
        if b in b"\"\\":
            out.append("\\" + chr(b))
        elif 0x20 <= b <= 0x7e:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return '"%s"' % "".join(out)


class Gen:
    """Random commands over the model."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def key(self):
        return self.r.choice(KEYS)

    def keys(self, lo=1, hi=4):
        return [self.key() for _ in range(self.r.randint(lo, hi))]

    def value(self):
        r = self.r
        kind = r.randrange(10)
        if kind < 3:
            return str(r.randint(-1000, 1000)).encode()
        if kind == 3:
            return r.choice(INT_EDGES)
        if kind == 4:
            return r.choice([b"", b"007", b"1.5", b" 1", b"+1", b"-0", b"1e3", b"0x10"])
        if kind == 5:
            return bytes(r.randrange(256) for _ in range(r.randint(1, 12)))
        if kind == 6:
            return b"x" * r.choice([20, 44, 45, 100])   # around the embstr limit
        return "".join(r.choice("abcxyz") for _ in range(r.randint(1, 8))).encode()

    def offset(self):
        return self.r.choice([0, 1, 2, 3, 5, 10, -1, -2, -3, -100, 100])

    def incr_by(self):
        r = self.r
        return r.choice([str(r.randint(-100, 100)).encode(), b"9223372036854775807",
                         b"-9223372036854775808", b"abc", b"1.5", b""])

    def long_ttl(self, unit):
        """A TTL far enough away never to expire during the test."""
        return str(self.r.randint(300, 100000) * (1000 if unit == "ms" else 1)).encode()

    def ttl_options(self, short):
        """Options for SET/GETEX that set a TTL; `short` ones expire before the next command."""
        r = self.r
        if short:
            return r.choice([[b"PX", b"1"], [b"PXAT", b"1"], [b"EXAT", b"1"]])
        return r.choice([[b"EX", self.long_ttl("s")], [b"PX", self.long_ttl("ms")],
                         [b"EXAT", FAR_EXAT], [b"PXAT", FAR_PXAT]])

    @staticmethod
    def reclaim(key):
        """After a short TTL: let it pass, then touch the key so both servers delete it."""
        return [Sleep(5), Cmd([b"EXISTS", key], attached=True)]

    def set_cmd(self):
        r = self.r
        args = [b"SET", self.key(), self.value()]
        short = r.random() < 0.08
        opts = []
        if r.random() < 0.5:
            opts.append(self.ttl_options(short))
        elif r.random() < 0.2:
            opts.append([b"KEEPTTL"])
        if r.random() < 0.3:
            opts.append([r.choice([b"NX", b"XX"])])
        if r.random() < 0.3:
            opts.append([b"GET"])
        if r.random() < 0.05:   # invalid: bad or conflicting options
            opts.append(r.choice([[b"EX", b"0"], [b"EX", b"-5"], [b"PX", b"abc"], [b"NX"],
                                  [b"KEEPTTL"], [b"EX"], [b"BOGUS"],
                                  [b"EX", b"9223372036854775807"]]))
        r.shuffle(opts)
        for o in opts:
            args += [o[0].lower() if r.random() < 0.2 else o[0]] + o[1:]
        return [Cmd(args)] + (self.reclaim(args[1]) if short else [])

    def getex_cmd(self):
        r = self.r
        args = [b"GETEX", self.key()]
        short = False
        c = r.randrange(6)
        if c in (0, 1):
            short = r.random() < 0.15
            args += self.ttl_options(short)
        elif c == 2:
            args.append(b"PERSIST")
        elif c == 3 and r.random() < 0.3:
            args += r.choice([[b"EX", b"0"], [b"PERSIST", b"EX", b"10"], [b"BAD"]])
        return [Cmd(args)] + (self.reclaim(args[1]) if short else [])

    def expire_cmd(self):
        r = self.r
        name = r.choice([b"EXPIRE", b"PEXPIRE"])
        short = r.random() < 0.1
        if short:
            t = r.choice([b"0", b"-1"]) if r.random() < 0.5 else b"1"
            if name == b"EXPIRE" and t == b"1":
                t = b"0"
        else:
            t = self.long_ttl("ms" if name == b"PEXPIRE" else "s")
        args = [name, self.key(), t]
        if r.random() < 0.3:
            args.append(r.choice([b"NX", b"XX", b"GT", b"LT"]))
        if r.random() < 0.03:
            args.append(r.choice([b"NX", b"GT", b"BAD"]))
        return [Cmd(args)] + (self.reclaim(args[1]) if short else [])

    def command(self):
        r = self.r
        k = self.key
        choices = [
            (10, lambda: self.set_cmd()),
            (8, lambda: [Cmd([b"GET", k()])]),
            (2, lambda: [Cmd([b"SETNX", k(), self.value()])]),
            (3, lambda: [Cmd([b"MSET"] + [x for _ in range(r.randint(1, 3))
                                          for x in (k(), self.value())])]),
            (3, lambda: [Cmd([b"MGET"] + self.keys())]),
            (4, lambda: [Cmd([b"INCR", k()])]),
            (3, lambda: [Cmd([b"INCRBY", k(), self.incr_by()])]),
            (3, lambda: [Cmd([b"DECR", k()])]),
            (3, lambda: [Cmd([b"APPEND", k(), self.value()])]),
            (2, lambda: [Cmd([b"STRLEN", k()])]),
            (3, lambda: [Cmd([b"GETRANGE", k(), self.offset(), self.offset()])]),
            (3, lambda: [Cmd([b"SETRANGE", k(), r.choice([0, 1, 3, 7, 30, -1, 536870912]),
                              self.value()])]),
            (2, lambda: [Cmd([b"GETDEL", k()])]),
            (3, lambda: self.getex_cmd()),
            (3, lambda: [Cmd([b"DEL"] + self.keys())]),
            (3, lambda: [Cmd([b"EXISTS"] + self.keys())]),
            (2, lambda: [Cmd([b"TYPE", k()])]),
            (4, lambda: self.expire_cmd()),
            (2, lambda: [Cmd([b"PERSIST", k()])]),
            (4, lambda: [Cmd([b"TTL", k()], "approx", 1)]),
            (3, lambda: [Cmd([b"RENAME", k(), k()])]),
            (2, lambda: [Cmd([b"RENAMENX", k(), k()])]),
            (2, lambda: [Cmd([b"DBSIZE"])]),
            (2, lambda: [Cmd([b"SELECT", r.choice([b"0", b"1", b"2", b"0", b"16", b"x"])])]),
            (1, lambda: [Cmd([b"SWAPDB", r.choice([b"0", b"1", b"2"]),
                              r.choice([b"0", b"1", b"2", b"99"])])]),
            (1, lambda: [Cmd([b"FLUSHDB"])] if r.random() < 0.3 else [Cmd([b"DBSIZE"])]),
        ]
        return weighted(r, choices)()

    def sequence(self, n):
        ops = []
        while len(ops) < n:
            ops += self.command()
        return ops


def weighted(r, choices):
    """The second item of one of `choices` ((weight, item) pairs), picked by weight."""
    total = sum(w for w, _ in choices)
    pick = r.uniform(0, total)
    for w, item in choices:
        pick -= w
        if pick <= 0:
            return item
    return choices[-1][1]


def run_ops(ops, ref_port, sk_port, proto):
    """Run `ops` on fresh connections to both servers after FLUSHALL. Returns None, or
    (index, description) of the first mismatch."""
    conns = [RawConn(ref_port), RawConn(sk_port)]
    try:
        for c in conns:
            c.call("FLUSHALL")
            if proto == 3:
                c.call("HELLO", "3")
        for i, op in enumerate(ops):
            if isinstance(op, Sleep):
                time.sleep(op.ms / 1000.0)
                continue
            a = conns[0].call(*op.args)
            b = conns[1].call(*op.args)
            if not compare(op.rule, op.param, a, b):
                return i, "%r\n  redis: %r\n  skein: %r" % (op, a, b)
        return None
    finally:
        for c in conns:
            c.close()


def group_attached(ops):
    """Group each command with the ops attached to it (its sleep and reclaiming EXISTS),
    so that shrinking removes them together."""
    groups = []
    for op in ops:
        if op.attached and groups:
            groups[-1].append(op)
        else:
            groups.append([op])
    return groups


def shrink(ops, ref_port, sk_port, proto, run=None):
    """Greedy delta debugging over command groups: drop chunks while some mismatch remains.
    `run` replays a sequence (default: run_ops)."""
    run = run or run_ops
    groups = group_attached(ops)
    replays = 0

    def fails(gs):
        nonlocal replays
        replays += 1
        return run([op for g in gs for op in g], ref_port, sk_port, proto) is not None

    chunk = max(1, len(groups) // 2)
    while chunk >= 1 and replays < MAX_SHRINK_REPLAYS:
        i, removed = 0, False
        while i < len(groups) and replays < MAX_SHRINK_REPLAYS:
            candidate = groups[:i] + groups[i + chunk:]
            if candidate and fails(candidate):
                groups, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return [op for g in groups for op in g]


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_sequence(seed, redis_server, skein_server):
    proto = 3 if seed % 3 == 2 else 2
    check(Gen(seed).sequence(COMMANDS_PER_SEED), seed, proto, redis_server, skein_server)


def check(ops, seed, proto, redis_server, skein_server, run=None):
    """Run `ops` on both servers (with `run`, default run_ops); on a mismatch, shrink the
    sequence and fail with it in tests/scripts syntax."""
    run = run or run_ops
    found = run(ops, redis_server.port, skein_server.port, proto)
    if found is None:
        return
    index, first = found
    minimal = shrink(ops[:index + 1], redis_server.port, skein_server.port, proto, run)
    last = run(minimal, redis_server.port, skein_server.port, proto)
    detail = last[1] if last else first
    script = "\n".join(repr(op) for op in minimal)
    pytest.fail("seed %d (RESP%d): mismatch at command %d:\n%s\n\nminimal failing sequence "
                "(%d commands, tests/scripts syntax):\n%s" % (
                    seed, proto, index, first, len(minimal), script) +
                ("\n\nits mismatch:\n" + detail if last else ""))
