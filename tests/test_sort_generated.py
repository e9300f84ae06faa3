"""Generated differential tests for SORT: seeded random lists, sets and sorted sets
(elements that are integers, floats, hexadecimal, infinities, text, empty, binary), random
weights (strings and hash fields, some that are not numbers or are out of range, some of
another type, some missing) and values, and SORT / SORT_RO calls with random combinations
of BY, GET (several), LIMIT, ASC/DESC, ALPHA and STORE, run against redis-server 7.0.15
and skein-server; replies compared byte for byte (stored results read back with LRANGE).

Where Redis's reply depends on its hash tables' order it is compared as a multiset (a
hashtable set with BY a constant) or by type (the same with LIMIT); so that ALPHA BY ties
never depend on that order, sets and sorted sets are sorted ALPHA only by themselves or by
`u_*`, whose values are all different. Redis leaves `errno` set after a weight out of range
(see tests/scripts/sort_errors.txt): every SORT is followed by a ZADD, which clears it.

On a mismatch the sequence is shrunk (greedy, replayed on both servers) and printed in
tests/scripts syntax."""
import random

import pytest

from test_generated import Cmd, check, weighted

SEEDS = range(int(__import__("os").environ.get("SORT_SEEDS", "24")))
COMMANDS_PER_SEED = 300

ELEMS = [b"a", b"b", b"c", b"B", b"aa", b"1", b"2", b"10", b"-3", b"07", b"1.5", b"1e2",
         b"0x10", b"inf", b"-inf", b" 7", b"", b"x y", b"9223372036854775807", b"-0"]
LIST_ONLY = [b"a\x00b", b"a\x00c", b"nan", b"abc", b"1e400", b"2\x00x", b"\xff", b"\xc3\xa9"]
WEIGHTS = [b"1", b"2", b"-1", b"0", b"3.5", b"1e3", b"-inf", b"inf", b"0x1p4", b" 5", b"",
           b"2.0", b"02", b"12345678901234567890", b"-0", b"abc", b"1e400", b"1e-400", b"nan"]
TEXTS = [b"one", b"two", b"three", b"a", b"b", b"", b"A", b"a\x00z", b"10", b"9"]
NUMBERS = [b"1", b"2", b"10", b"-3", b"07", b"1.5", b"1e2", b"0x10", b"inf", b"-inf", b" 7",
           b"9223372036854775807", b"-0", b"0", b"2.0", b"1e-3", b"12345678901234567890"]
# (weight, key): lists, sets and sorted sets of anything or of numbers only, and keys that
# hold no collection.
SOURCES = [(4, b"l"), (3, b"ln"), (3, b"s"), (2, b"sn"), (3, b"z"), (1, b"str"), (1, b"nokey")]
LIMITS = [b"-2", b"-1", b"0", b"1", b"1", b"2", b"2", b"3", b"3", b"5", b"100",
          b"9223372036854775807", b"-9223372036854775808"]
GETS = [b"#", b"v_*", b"w_*", b"h_*->g", b"h_*->f", b"nostar", b"missing_*", b"u_*"]
ERRNO_RESET = Cmd([b"ZADD", b"errno-reset", b"0", b"x"], attached=True)
SETUP = [Cmd([b"MSET"] + [x for i, e in enumerate(ELEMS + LIST_ONLY + NUMBERS)
                          for x in (b"u_" + e, b"u%03d" % ((i * 7) % 29) + e)]),
         Cmd([b"SET", b"str", b"v"])]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def elems(self, pool, lo=1, hi=6):
        return [self.r.choice(pool) for _ in range(self.r.randint(lo, hi))]

    def elem(self):
        return self.r.choice(ELEMS + LIST_ONLY + NUMBERS)

    def sort(self):
        r = self.r
        src = weighted(r, SOURCES)
        readonly = r.random() < 0.2
        unordered = src in (b"s", b"sn", b"z")
        opts = []
        alpha = r.random() < 0.4
        by = None
        if r.random() < 0.6:
            if unordered and alpha:
                by = r.choice([b"u_*", b"nosort"])
            else:
                by = r.choice([b"w_*", b"h_*->f", b"v_*", b"nosort", b"u_*", b"*",
                               b"missing_*", b"h_*->g"])
            opts.append([b"BY", by])
        limit = r.random() < 0.4
        if limit:
            opts.append([b"LIMIT", r.choice(LIMITS), r.choice(LIMITS)])
        for _ in range(weighted(r, [(5, 0), (3, 1), (2, 2), (1, 3)])):
            opts.append([b"GET", r.choice(GETS)])
        if r.random() < 0.4:
            opts.append([r.choice([b"ASC", b"DESC"])])
        if alpha:
            opts.append([b"ALPHA"])
        store = not readonly and r.random() < 0.3
        if store:
            opts.append([b"STORE", r.choice([b"dst", b"dst", b"l", b"str"])])
        r.shuffle(opts)
        args = [b"SORT_RO" if readonly else b"SORT", src] + [a for o in opts for a in o]
        # A hashtable set read in its own order (BY a constant, no STORE).
        rule = None
        if src in (b"s", b"sn") and by == b"nosort" and not store:
            rule = "type" if limit else "sort"
        ops = [Cmd(args, rule), ERRNO_RESET]
        if store:
            dst = next(o[1] for o in opts if o[0] == b"STORE")
            ops.append(Cmd([b"LRANGE", dst, b"0", b"-1"], attached=True))
        return ops

    def command(self):
        r = self.r
        e = self.elem
        choices = [
            (6, lambda: [Cmd([b"RPUSH", b"l"] + self.elems(ELEMS + LIST_ONLY))]),
            (2, lambda: [Cmd([b"LPUSH", b"l"] + self.elems(ELEMS + LIST_ONLY))]),
            (1, lambda: [Cmd([b"LPOP", b"l", b"2"])]),
            (3, lambda: [Cmd([b"RPUSH", b"ln"] + self.elems(NUMBERS))]),
            (5, lambda: [Cmd([b"SADD", b"s"] + self.elems(ELEMS))]),
            (3, lambda: [Cmd([b"SADD", b"sn"] + self.elems(NUMBERS))]),
            (1, lambda: [Cmd([b"SREM", b"s"] + self.elems(ELEMS))]),
            (5, lambda: [Cmd([b"ZADD", b"z"] + [x for m in self.elems(ELEMS)
                                                for x in (b"%d" % r.randint(-3, 3), m)])]),
            (1, lambda: [Cmd([b"ZREM", b"z"] + self.elems(ELEMS))]),
            (6, lambda: [Cmd([b"SET", b"w_" + e(), r.choice(WEIGHTS)])]),
            (4, lambda: [Cmd([b"SET", b"w_" + r.choice(NUMBERS), r.choice(NUMBERS)])]),
            (1, lambda: [Cmd([b"RPUSH", b"w_" + e(), b"x"])]),
            (4, lambda: [Cmd([b"HSET", b"h_" + e(), b"f", r.choice(WEIGHTS),
                              b"g", r.choice(TEXTS)])]),
            (4, lambda: [Cmd([b"SET", b"v_" + e(), r.choice(TEXTS)])]),
            (1, lambda: [Cmd([b"DEL", r.choice([b"l", b"ln", b"s", b"sn", b"z", b"w_" + e(),
                                                b"v_" + e()])])]),
            (1, lambda: [Cmd([b"OBJECT", b"ENCODING", r.choice([b"z", b"s", b"dst"])])]),
            (14, self.sort),
        ]
        return weighted(r, choices)()

    def sequence(self, n):
        ops = list(SETUP)
        while len(ops) < n:
            ops += self.command()
        return ops


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_sort_sequence(seed, redis_server, skein_server):
    proto = 3 if seed % 3 == 2 else 2
    check(Gen(seed).sequence(COMMANDS_PER_SEED), seed, proto, redis_server, skein_server)
