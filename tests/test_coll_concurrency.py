"""Multi-key collection commands are atomic across shards and workers (a skein-server
with 4 workers, or redis-server with SKEIN_TEST_AGAINST_REDIS=1: the invariants are
Redis's).

* LMOVE: elements rotate between lists spread over shards while checkers read every
  list's length in one MULTI/EXEC; the total never changes, and at the end every element
  is in exactly one list.
* SMOVE + SUNIONSTORE: members move between sets while checkers store the union of all
  of them; the union always holds every member.
* ZUNIONSTORE: transfers of score between two sorted sets (ZINCRBY pairs in MULTI/EXEC)
  while checkers store the sum; each member's summed score never changes.

Bounded by counts (a deadline only guards against a hang); no assertion on timing.
"""
import random

from resp_client import RawConn, parse
from test_multi_concurrency import run_threads

WORKERS = 4




def test_lmove_keeps_every_element(fresh_skein):
    srv = fresh_skein(workers=WORKERS)
    lists = ["ring:%d" % i for i in range(12)]
    c = RawConn(srv.port)
    elements = []
    for i, name in enumerate(lists):
        items = ["e%d:%d" % (i, j) for j in range(10)]
        elements += items
        c.call("RPUSH", name, *items)
    total = len(elements)

    def mover(seed):
        rnd = random.Random(seed)
        m = RawConn(srv.port)
        for _ in range(600):
            a, b = rnd.sample(lists, 2)
            m.call("LMOVE", a, b, rnd.choice(["LEFT", "RIGHT"]), rnd.choice(["LEFT", "RIGHT"]))
        m.close()

    def checker():
        k = RawConn(srv.port)
        for _ in range(200):
            k.call("MULTI")
            for name in lists:
                k.call("LLEN", name)
            counts = parse(k.call("EXEC"))
            assert sum(counts) == total, counts
        k.close()

    run_threads([lambda s=s: mover(s) for s in range(6)] + [checker, checker])
    seen = []
    for name in lists:
        seen += [x.decode() for x in parse(c.call("LRANGE", name, "0", "-1"))]
    assert sorted(seen) == sorted(elements)
    c.close()


def test_smove_and_sunionstore(fresh_skein):
    srv = fresh_skein(workers=WORKERS)
    sets = ["bag:%d" % i for i in range(8)]
    c = RawConn(srv.port)
    members = []
    for i, name in enumerate(sets):
        ms = ["m%d:%d" % (i, j) for j in range(20)]
        members += ms
        c.call("SADD", name, *ms)

    def mover(seed):
        rnd = random.Random(seed)
        m = RawConn(srv.port)
        for _ in range(600):
            a, b = rnd.sample(sets, 2)
            member = rnd.choice(members)
            m.call("SMOVE", a, b, member)
        m.close()

    def checker(n):
        k = RawConn(srv.port)
        dest = "union:%d" % n
        for _ in range(200):
            assert parse(k.call("SUNIONSTORE", dest, *sets)) == len(members)
            assert parse(k.call("SINTERCARD", str(len(sets)), *sets)) == 0
        k.close()

    run_threads([lambda s=s: mover(s) for s in range(6)] + [lambda: checker(1), lambda: checker(2)])
    total = sum(parse(c.call("SCARD", name)) for name in sets)
    assert total == len(members)
    c.close()


def test_zunionstore_sees_whole_transfers(fresh_skein):
    srv = fresh_skein(workers=WORKERS)
    c = RawConn(srv.port)
    names = ["m%d" % i for i in range(30)]
    for n in names:
        c.call("ZADD", "left", "100", n)
        c.call("ZADD", "right", "100", n)

    def mover(seed):
        rnd = random.Random(seed)
        m = RawConn(srv.port)
        for _ in range(400):
            n = rnd.choice(names)
            amount = str(rnd.randint(1, 5))
            a, b = rnd.sample(["left", "right"], 2)
            m.call("MULTI")
            m.call("ZINCRBY", a, "-" + amount, n)
            m.call("ZINCRBY", b, amount, n)
            assert len(parse(m.call("EXEC"))) == 2
        m.close()

    def checker(k_id):
        k = RawConn(srv.port)
        dest = "sum:%d" % k_id
        for _ in range(150):
            assert parse(k.call("ZUNIONSTORE", dest, "2", "left", "right")) == len(names)
            scores = parse(k.call("ZRANGE", dest, "0", "-1", "WITHSCORES"))
            assert all(float(s) == 200 for s in scores[1::2]), scores
        k.close()

    run_threads([lambda s=s: mover(s) for s in range(6)] + [lambda: checker(1), lambda: checker(2)])
    c.close()
