"""Generated differential tests for HyperLogLog: seeded random sequences of PFADD (one
element to a few hundred, so HLLs go from sparse to dense), PFCOUNT of one key (which
rewrites the cached cardinality) and of several, PFMERGE, PFDEBUG, GET of the raw bytes,
occasional damage to an HLL's bytes (SETRANGE, APPEND), wrong types and changes of
hll-sparse-max-bytes, run against redis-server 7.0.15 and skein-server; every reply,
GET's bytes included, compared byte for byte. On a mismatch the sequence is shrunk and
printed in tests/scripts syntax (test_generated's machinery)."""
import pytest

from resp_client import RawConn
from test_generated import Cmd, check, run_ops as run_plain, weighted

SEEDS = range(16)
COMMANDS_PER_SEED = 250

KEYS = [b"h0", b"h1", b"h2", b"{t}h3"]
STRING_KEY = b"str"
SPARSE_LIMITS = [b"0", b"20", b"40", b"100", b"300", b"1000", b"3000", b"3000", b"3000"]


def run_ops(ops, ref_port, sk_port, proto):
    """test_generated.run_ops with hll-sparse-max-bytes back at its default around it."""
    conns = [RawConn(ref_port), RawConn(sk_port)]
    try:
        for c in conns:
            c.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
        return run_plain(ops, ref_port, sk_port, proto)
    finally:
        for c in conns:
            c.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
            c.close()


class Gen:
    def __init__(self, seed):
        import random
        self.r = random.Random(seed)

    def key(self):
        return self.r.choice(KEYS) if self.r.random() < 0.96 else STRING_KEY

    def keys(self, lo=1, hi=4):
        return [self.key() for _ in range(self.r.randint(lo, hi))]

    def element(self):
        r = self.r
        k = r.randrange(10)
        if k < 6:
            return b"e%d" % r.randrange(5000)
        if k < 8:
            return str(r.randrange(-100, 100)).encode()
        return bytes(r.randrange(256) for _ in range(r.randint(0, 12)))

    def elements(self):
        r = self.r
        n = weighted(r, [(6, 1), (6, r.randint(2, 8)), (2, r.randint(20, 120)),
                         (1, r.randint(200, 700)), (1, 0)])
        return [self.element() for _ in range(n)]

    def damage(self):
        r = self.r
        k = self.key()
        if r.random() < 0.8:
            offset = r.choice([4, 15, 16, 17, 18, 19, 20, r.randrange(16, 60)])
            return Cmd([b"SETRANGE", k, b"%d" % offset, bytes([r.randrange(256)])])
        return Cmd([b"APPEND", k, bytes(r.randrange(256) for _ in range(r.randint(1, 2)))])

    def command(self):
        r = self.r
        k = self.key
        return weighted(r, [
            (20, lambda: [Cmd([b"PFADD", k()] + self.elements())]),
            (8, lambda: [Cmd([b"PFCOUNT", k()])]),
            (4, lambda: [Cmd([b"PFCOUNT"] + self.keys(2, 4))]),
            (5, lambda: [Cmd([b"PFMERGE", k()] + self.keys(0, 3))]),
            (10, lambda: [Cmd([b"GET", k()])]),
            (2, lambda: [Cmd([b"STRLEN", k()]), Cmd([b"OBJECT", b"ENCODING", k()])]),
            (3, lambda: [Cmd([b"PFDEBUG", b"ENCODING", k()])]),
            (2, lambda: [Cmd([b"PFDEBUG", b"DECODE", k()])]),
            (1, lambda: [Cmd([b"PFDEBUG", b"TODENSE", k()])]),
            (1, lambda: [Cmd([b"PFDEBUG", b"GETREG", k()])]),
            (1, lambda: [self.damage()]),
            (1, lambda: [Cmd([b"SET", STRING_KEY, r.choice([b"v", b"HYLL", b"12"])])]),
            (4, lambda: [Cmd([b"DEL", k()])]),
            (1, lambda: [Cmd([b"CONFIG", b"SET", b"hll-sparse-max-bytes",
                              r.choice(SPARSE_LIMITS)])]),
        ])()

    def sequence(self, n):
        ops = []
        while len(ops) < n:
            ops += self.command()
        return ops


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_hll_sequence(seed, redis_server, skein_server):
    proto = 3 if seed % 3 == 2 else 2
    check(Gen(seed).sequence(COMMANDS_PER_SEED), seed, proto, redis_server, skein_server,
          run_ops)
