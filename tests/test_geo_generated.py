"""Generated differential tests for geo commands: seeded random sequences (points spread
over the globe, clustered around a few centres, on the limits and the antimeridian, and
repeated so that distances tie; invalid coordinates now and then; searches of every form
with random centres, radii and boxes from 0 to the whole planet, units, orders, COUNT with
and without ANY, WITH* options and stores; sorted-set writes with scores that are not
geohashes; listpack and skiplist encodings) run against redis-server 7.0.15 and
skein-server, replies compared byte for byte. On a mismatch the sequence is shrunk and
printed in tests/scripts syntax."""
import pytest

from test_generated import Cmd
from test_zsets_generated import check_seed

SEEDS = range(24)
COMMANDS_PER_SEED = 400

KEYS = [b"g0", b"g1", b"{t}g2"]
STRING_KEY = b"str"
DESTS = [b"d0", b"d1", b"g1"]
CENTRES = [(13.4, 38.1), (-0.13, 51.5), (179.9, 0.0), (-179.9, -20.0), (0.0, 84.9),
           (10.0, -84.9), (-122.4, 37.8), (0.0, 0.0)]
UNITS = [b"m", b"km", b"mi", b"ft", b"KM", b"M"]
LAT_MAX = 85.05112878


class Gen:
    def __init__(self, seed):
        import random
        self.r = random.Random(seed)
        self.points = []
        self.added = {}

    def num(self, v):
        return (b"%.*f" % (self.r.choice([1, 6, 9, 12]), v)).rstrip(b"0").rstrip(b".") or b"0"

    def coords(self, valid=False):
        r = self.r
        k = r.randrange(20)
        if k < 6:
            x, y = r.uniform(-180, 180), r.uniform(-LAT_MAX, LAT_MAX)
        elif k < 14:
            cx, cy = r.choice(CENTRES)
            s = r.choice([0.01, 0.3, 3])
            x = max(-180.0, min(180.0, r.gauss(cx, s)))
            y = max(-LAT_MAX, min(LAT_MAX, r.gauss(cy, s)))
        elif k < 16 and self.points:
            return r.choice(self.points)
        elif k < 18:
            return [r.choice([b"-180", b"180", b"0", b"-179.999999", b"179.999999"]),
                    r.choice([b"-85.05112878", b"85.05112878", b"0", b"85", b"-85", b"66.1"])]
        elif k == 18 and not valid:
            return [r.choice([b"181", b"-180.1", b"abc", b"inf", b"1e400", b"10"]),
                    r.choice([b"85.06", b"-90", b"nan", b"", b"10"])]
        else:
            x, y = r.uniform(-1, 1), r.uniform(-1, 1)
        p = [self.num(x), self.num(y)]
        self.points.append(p)
        return p

    def member(self, key=None):
        r = self.r
        if self.added.get(key) and r.random() < 0.8:
            return r.choice(self.added[key])
        m = b"m%d" % r.randrange(80) if r.random() < 0.9 else r.choice([b"", b"7", b"L" * 70])
        return m

    def key(self):
        return STRING_KEY if self.r.random() < 0.02 else self.r.choice(KEYS)

    def geoadd(self):
        r = self.r
        flags = [f for f in (b"NX", b"XX", b"CH") if r.random() < 0.1]
        n = r.choice([1, 2, 5, 20, 40, 150])
        k = self.key()
        args = []
        for i in range(n):
            m = self.member() if n < 100 else b"b%d" % r.randrange(1000)
            self.added.setdefault(k, []).append(m)
            args += self.coords(n > 2) + [m]
        return Cmd([b"GEOADD", k] + flags + args)

    def distance(self):
        r = self.r
        v = r.choice([0, 0.5, 1, 10, 50, 200, 1000, 3000, 8000, 20000, 40000])
        unit = r.choice(UNITS)
        factor = {b"m": 1000, b"M": 1000, b"ft": 3281}.get(unit, 1)
        return self.num(v * factor * r.uniform(0.5, 1.5)), unit

    def centre(self, key, member_ok=True):
        r = self.r
        if member_ok and r.random() < 0.3:
            return [b"FROMMEMBER", self.member(key)]
        if r.random() < 0.6:
            cx, cy = r.choice(CENTRES)
            return [b"FROMLONLAT", self.num(cx + r.uniform(-1, 1)),
                    self.num(max(-LAT_MAX, min(LAT_MAX, cy + r.uniform(-1, 1))))]
        return [b"FROMLONLAT"] + self.coords()

    def shape(self):
        r = self.r
        if r.random() < 0.5:
            d, u = self.distance()
            return [b"BYRADIUS", d, u]
        w, u = self.distance()
        h, _ = self.distance()
        return [b"BYBOX", w, h, u]

    def options(self, store):
        r = self.r
        opts = []
        if not store:
            opts += [[o] for o in (b"WITHDIST", b"WITHCOORD", b"WITHHASH") if r.random() < 0.4]
        if r.random() < 0.6:
            opts.append([r.choice([b"ASC", b"DESC"])])
        if r.random() < 0.5:
            opts.append([b"COUNT", str(r.choice([1, 2, 3, 5, 10, 50, 1000])).encode()])
            if r.random() < 0.4:
                opts.append([b"ANY"])
        if r.random() < 0.02:
            opts.append([r.choice([b"ANY", b"COUNT", b"bogus", b"WITHDIST"])])
        r.shuffle(opts)
        return [a for o in opts for a in o]

    def search(self):
        r = self.r
        c = r.randrange(6)
        k = self.key()
        if c == 0:
            return Cmd([b"GEOSEARCH", k] + self.centre(k) + self.shape() + self.options(False))
        if c == 1:
            dist = [b"STOREDIST"] if r.random() < 0.5 else []
            return Cmd([b"GEOSEARCHSTORE", r.choice(DESTS), k] + self.centre(k) + self.shape()
                       + self.options(True) + dist)
        d, u = self.distance()
        store = []
        if r.random() < 0.3:
            store = [r.choice([b"STORE", b"STOREDIST"]), r.choice(DESTS)]
        if c in (2, 3):
            name = b"GEORADIUS" if store or c == 2 else b"GEORADIUS_RO"
            return Cmd([name, k] + self.centre(k, False)[1:] + [d, u] + self.options(bool(store)) + store)
        name = b"GEORADIUSBYMEMBER" if store or c == 4 else b"GEORADIUSBYMEMBER_RO"
        return Cmd([name, k, self.member(k), d, u] + self.options(bool(store)) + store)

    def command(self):
        r = self.r
        c = r.randrange(30)
        k = self.key()
        if c < 8:
            return self.geoadd()
        if c < 18:
            return self.search()
        if c == 18:
            return Cmd([b"GEOPOS", k] + [self.member(k) for _ in range(r.randint(1, 4))])
        if c == 19:
            return Cmd([b"GEOHASH", k] + [self.member(k) for _ in range(r.randint(1, 4))])
        if c == 20:
            unit = [r.choice(UNITS)] if r.random() < 0.6 else []
            return Cmd([b"GEODIST", k, self.member(k), self.member(k)] + unit)
        if c == 21:
            score = r.choice([b"-1", b"0", b"1.5", b"4503599627370495", b"4503599627370496",
                              b"9007199254740993", b"1e300", b"-inf", b"inf"])
            return Cmd([b"ZADD", k, score, self.member()])
        if c == 22:
            return Cmd([b"ZREM", k] + [self.member() for _ in range(r.randint(1, 5))])
        if c == 23:
            return Cmd([b"ZRANGE", r.choice(DESTS + KEYS), b"0", b"-1", b"WITHSCORES"])
        if c == 24:
            return Cmd([b"OBJECT", b"ENCODING", r.choice(DESTS + KEYS)])
        if c == 25:
            return Cmd([b"CONFIG", b"SET", b"zset-max-listpack-entries",
                        r.choice([b"0", b"4", b"16", b"128"])])
        if c == 26:
            return Cmd([b"SET", STRING_KEY, b"v"])
        if c == 27:
            return Cmd([b"DEL", r.choice(DESTS + KEYS)])
        return Cmd([b"ZCARD", k])

    def sequence(self, n):
        ops = [Cmd([b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"])]
        ops += [self.command() for _ in range(n)]
        for k in KEYS + DESTS:
            ops.append(Cmd([b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"]))
        ops.append(Cmd([b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"]))
        return ops


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_geo_sequence(seed, redis_server, skein_server):
    check_seed(Gen(seed), seed, COMMANDS_PER_SEED, redis_server, skein_server)
