"""Generated differential tests for lists: seeded random sequences of list commands (a few
keys, elements that are small integers, integer edges, short and long text, binary; pushes
weighted so lists grow past several quicklist nodes; occasional changes of
list-max-listpack-size / list-compress-depth / rdbcompression) run against redis-server
7.0.15 and skein-server, replies compared byte for byte. DUMP is among the commands, so the
quicklist nodes (their fill, splits, merges and compression) are compared byte for byte
along the way, and OBJECT ENCODING too.

On a mismatch the sequence is shrunk (greedy, replayed on both servers) and printed in
tests/scripts syntax."""
import random

import pytest

from test_generated import Cmd, run_ops, shrink, weighted

SEEDS = range(int(__import__("os").environ.get("LIST_SEEDS", "20")))
COMMANDS_PER_SEED = 400

KEYS = [b"l0", b"l1", b"l2", b"{t}l3"]
STRING_KEY = b"str"
INT_EDGES = [b"0", b"-1", b"127", b"128", b"4095", b"-4096", b"32767", b"-32769",
             b"8388608", b"2147483648", b"9223372036854775807", b"-9223372036854775808"]
NOT_INTS = [b"", b"01", b"+1", b" 1", b"-0", b"1.5", b"9223372036854775808", b"a", b"b"]
DEFAULTS = [Cmd([b"CONFIG", b"SET", b"list-max-listpack-size", b"-2"]),
            Cmd([b"CONFIG", b"SET", b"list-compress-depth", b"0"]),
            Cmd([b"CONFIG", b"SET", b"rdbcompression", b"yes"])]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seen = [b"a", b"1"]

    def key(self):
        return self.r.choice(KEYS) if self.r.random() < 0.96 else STRING_KEY

    def element(self):
        r = self.r
        k = r.randrange(12)
        if k < 4:
            v = str(r.randint(-10, 10)).encode()
        elif k < 5:
            v = r.choice(INT_EDGES)
        elif k < 6:
            v = r.choice(NOT_INTS)
        elif k < 7:
            # Short binary, or incompressible runs that keep small nodes raw under
            # list-compress-depth.
            v = bytes(r.randrange(256) for _ in range(r.choice([1, 3, 6, 20, 40])))
        elif k < 10:
            v = b"e%d-" % r.randrange(100) + b"pqr" * r.choice([1, 3, 10, 30])
        else:
            v = b"big%d" % r.randrange(10) + b"z" * r.choice([100, 500, 2000, 5000, 9000])
        if r.random() < 0.3:
            self.seen.append(v)
        return v

    def known(self):
        """An element likely in some list (pivots, LREM/LPOS targets)."""
        return self.r.choice(self.seen[-30:]) if self.r.random() < 0.8 else self.element()

    def elements(self, lo=1, hi=8):
        return [self.element() for _ in range(self.r.randint(lo, hi))]

    def index(self):
        r = self.r
        return str(r.choice([0, 1, 2, -1, -2, r.randint(-60, 60), r.randint(-300, 300),
                             100000, -100000])).encode()

    def count(self):
        r = self.r
        return r.choice([b"0", b"1", b"2", b"3", b"7", b"50", b"1000", b"-1", b"abc"])

    def side(self):
        return self.r.choice([b"LEFT", b"RIGHT", b"left", b"right"])

    def config(self):
        r = self.r
        opt = r.choice([b"list-max-listpack-size", b"list-max-ziplist-size",
                        b"list-compress-depth", b"rdbcompression"])
        if opt == b"list-compress-depth":
            v = r.choice([b"0", b"1", b"2", b"3"])
        elif opt == b"rdbcompression":
            v = r.choice([b"yes", b"no"])
        else:
            v = r.choice([b"-1", b"-2", b"-3", b"-5", b"1", b"2", b"3", b"4", b"16", b"128", b"0"])
        return [Cmd([b"CONFIG", b"SET", opt, v])]

    def lpos(self):
        r = self.r
        args = [b"LPOS", self.key(), self.known()]
        if r.random() < 0.5:
            args += [b"RANK", r.choice([b"1", b"2", b"-1", b"-2", b"3", b"0"])]
        if r.random() < 0.5:
            args += [b"COUNT", r.choice([b"0", b"1", b"2", b"5", b"-1"])]
        if r.random() < 0.3:
            args += [b"MAXLEN", r.choice([b"0", b"1", b"5", b"20", b"-1"])]
        return [Cmd(args)]

    def lmpop(self):
        r = self.r
        keys = [self.key() for _ in range(r.randint(1, 3))]
        args = [b"LMPOP", str(len(keys)).encode()] + keys + [self.side()]
        if r.random() < 0.6:
            args += [b"COUNT", r.choice([b"1", b"2", b"5", b"100", b"0"])]
        return [Cmd(args)]

    def command(self):
        r = self.r
        k = self.key
        choices = [
            (14, lambda: [Cmd([r.choice([b"LPUSH", b"RPUSH"]), k()] + self.elements())]),
            (5, lambda: [Cmd([r.choice([b"RPUSH", b"LPUSH"]), k()] + self.elements(20, 60))]),
            (3, lambda: [Cmd([r.choice([b"LPUSHX", b"RPUSHX"]), k()] + self.elements(1, 3))]),
            (5, lambda: [Cmd([r.choice([b"LPOP", b"RPOP"]), k()])]),
            (4, lambda: [Cmd([r.choice([b"LPOP", b"RPOP"]), k(), self.count()])]),
            (3, lambda: [Cmd([b"LLEN", k()])]),
            (5, lambda: [Cmd([b"LRANGE", k(), self.index(), self.index()])]),
            (4, lambda: [Cmd([b"LINDEX", k(), self.index()])]),
            (4, lambda: [Cmd([b"LSET", k(), self.index(), self.element()])]),
            (6, lambda: [Cmd([b"LINSERT", k(), r.choice([b"BEFORE", b"AFTER"]), self.known(),
                              self.element()])]),
            (4, lambda: [Cmd([b"LREM", k(), r.choice([b"0", b"1", b"-1", b"2", b"-3"]),
                              self.known()])]),
            (2, lambda: [Cmd([b"LTRIM", k(), self.index(), self.index()])]),
            (3, lambda: self.lpos()),
            (3, lambda: [Cmd([b"LMOVE", k(), k(), self.side(), self.side()])]),
            (2, lambda: [Cmd([b"RPOPLPUSH", k(), k()])]),
            (2, lambda: self.lmpop()),
            (5, lambda: [Cmd([b"DUMP", k()])]),
            (2, lambda: [Cmd([b"OBJECT", b"ENCODING", k()])]),
            (1, lambda: [Cmd([b"SET", STRING_KEY, b"v"])]),
            (1, lambda: [Cmd([b"DEL", k()])]),
            (1, lambda: [Cmd([b"COPY", k(), k(), b"REPLACE"])]),
            (1, lambda: [Cmd([b"TYPE", k()])]),
            (1, lambda: [Cmd([b"EXISTS", k()])]),
            (2, lambda: self.config()),
        ]
        return weighted(r, choices)()

    def sequence(self, n):
        ops = list(DEFAULTS)
        while len(ops) < n:
            ops += self.command()
        return ops + [Cmd([b"DUMP", key]) for key in KEYS] + DEFAULTS


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_list_sequence(seed, redis_server, skein_server):
    proto = 3 if seed % 3 == 2 else 2
    ops = Gen(seed).sequence(COMMANDS_PER_SEED)
    try:
        found = run_ops(ops, redis_server.port, skein_server.port, proto)
        if found is None:
            return
        index, first = found
        minimal = shrink(DEFAULTS + ops[:index + 1], redis_server.port, skein_server.port, proto)
        last = run_ops(minimal, redis_server.port, skein_server.port, proto)
        detail = last[1] if last else first
        script = "\n".join(repr(op) for op in minimal)
        pytest.fail("seed %d (RESP%d): mismatch at command %d:\n%s\n\nminimal failing "
                    "sequence (%d commands, tests/scripts syntax):\n%s" % (
                        seed, proto, index, first, len(minimal), script) +
                    ("\n\nits mismatch:\n" + detail if last else ""))
    finally:
        run_ops(DEFAULTS, redis_server.port, skein_server.port, proto)
