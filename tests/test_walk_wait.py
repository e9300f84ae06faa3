"""KEYS and DEBUG DIGEST meeting a shard held by a long command on the offload pool
(issue 20): run inline (KEYS below `offload-threshold`), their walk stops at the busy
shard and the whole command goes to the pool to wait there, as a keyed command does, so
its worker keeps serving its other connections. The replies, and their order in a
pipeline, are redis-server 7.0.15's for the same data.

Skein runs with one worker (every connection on it) and the default threshold; a
SUNIONSTORE of two 60,000-member sets is the long command (the pool). Nothing asserts a
duration: the hand-off is seen in INFO's offloaded_commands, and the test retries a few
times until the walk has met the held shard at least once.
"""
import time

from resp_client import RawConn, encode, parse
from test_debug_populate import info_field

MEMBERS = 60000
ATTEMPTS = 6
DEADLINE_S = 60


def load(port, members=MEMBERS):
    """Two sets of `members` members sharing half of them, and a few small keys."""
    c = RawConn(port)
    try:
        c.call("FLUSHALL")
        for name, base in (("s1", 0), ("s2", members // 2)):
            for b in range(0, members, 20000):
                c.call("SADD", name, *("m%d" % (base + i) for i in range(b, b + 20000)))
        c.call("SUNIONSTORE", "dst", "s1", "s2")
        c.call("MSET", *[x for i in range(50) for x in ("k%d" % i, str(i))])
        c.call("SET", "x", "1")
        c.call("HSET", "h", "f", "v")
        c.call("RPUSH", "l", "a", "b")
    finally:
        c.close()


def threads_info(conn):
    """(offloaded_commands, offload_pending)."""
    return tuple(int(info_field(conn, "threads", f))
                 for f in ("offloaded_commands", "offload_pending"))


def held_by_pool(conn, before):
    """Wait until the SUNIONSTORE holds its shards on the pool: a SCAN (COUNT below the
    threshold, so inline) of the few keys there stops at a shard held past its wait
    slice, with a cursor other than 0. False if the SUNIONSTORE ended first."""
    end = time.time() + DEADLINE_S
    while time.time() < end:
        if parse(conn.call("SCAN", "0", "COUNT", "1000"))[0] != b"0":
            return True
        if threads_info(conn)[0] > before:
            return False
    return False


def replies(conn, n):
    return [parse(conn.read_reply()) for _ in range(n)]


def normal(walk, got):
    """KEYS's order is the server's own: compared as a sorted list."""
    return [sorted(r) if isinstance(r, list) and walk == "KEYS" else r for r in got]


def pipeline_for(walk):
    first = ["KEYS", "*"] if walk == "KEYS" else ["DEBUG", "DIGEST"]
    return [first, ["PING"], ["GET", "x"], ["DEBUG", "DIGEST-VALUE", "x"],
            ["ECHO", "end"]]


def beside_long_command(port, walk):
    """The pipeline of `walk` sent while a SUNIONSTORE runs on the pool, PINGs from a third
    connection meanwhile. Returns (long command's reply, the pipeline's replies, pings,
    whether the walk went to the pool)."""
    heavy, walker = RawConn(port, timeout=DEADLINE_S), RawConn(port, timeout=DEADLINE_S)
    pinger = RawConn(port)
    try:
        before, _ = threads_info(pinger)
        heavy.send_raw(encode(["SUNIONSTORE", "dst", "s1", "s2"]))
        holding = held_by_pool(pinger, before)
        commands = pipeline_for(walk)
        walker.send_raw(b"".join(encode(c) for c in commands))
        pings = [parse(pinger.call("PING")) for _ in range(5)]
        got = replies(walker, len(commands))
        stored = parse(heavy.read_reply())
        after, _ = threads_info(pinger)
        # The SUNIONSTORE, and the walk if it met a shard the SUNIONSTORE held.
        return stored, got, pings, holding and after - before >= 2
    finally:
        for c in (heavy, walker, pinger):
            c.close()


def expected_from_redis(port, walk):
    c = RawConn(port, timeout=DEADLINE_S)
    try:
        stored = parse(c.call("SUNIONSTORE", "dst", "s1", "s2"))
        commands = pipeline_for(walk)
        c.send_raw(b"".join(encode(x) for x in commands))
        return stored, replies(c, len(commands))
    finally:
        c.close()


def run_walk(walk, fresh_redis, fresh_skein):
    redis, skein = fresh_redis(), fresh_skein(workers=1)
    load(redis.port)
    load(skein.port)
    stored_want, want = expected_from_redis(redis.port, walk)
    handed_over = 0
    for _ in range(ATTEMPTS):
        stored, got, pings, went = beside_long_command(skein.port, walk)
        assert stored == stored_want
        assert normal(walk, got) == normal(walk, want)
        assert pings == [b"PONG"] * 5
        handed_over += went
        if handed_over:
            break
    assert handed_over, "the walk never met the shard the pool held"


def test_keys_waits_on_the_pool(fresh_redis, fresh_skein):
    run_walk("KEYS", fresh_redis, fresh_skein)


def test_debug_digest_waits_on_the_pool(fresh_redis, fresh_skein):
    run_walk("DIGEST", fresh_redis, fresh_skein)
