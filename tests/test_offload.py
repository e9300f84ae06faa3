"""Heavy commands on the background pool (issue 20, part 1): the same replies in the same
order as redis-server 7.0.15, and WATCH, keyspace notifications and blocked clients see
offloaded writes like any other.

Most tests run Skein with `offload-threshold 1`, so every command with a cost rule (SINTER,
ZUNIONSTORE, LRANGE, SORT, KEYS, SMEMBERS, DEL...) goes through the pool; one test keeps
the default threshold and crosses it with big sets. Nothing asserts a duration.
"""
import os
import socket
import time

import pytest

from conftest import ServerProc
from difftool import run_script
from resp_client import RawConn, encode, parse
from test_blocking import blocked_clients

SCRIPTS_DIR = os.path.join(os.path.dirname(__file__), "scripts")
# Every differential script: commands with a cost rule run on the pool, the rest inline.
SCRIPTS = sorted(os.listdir(SCRIPTS_DIR))
DEADLINE_S = 30


@pytest.fixture(scope="module")
def offloading():
    s = ServerProc("skein", extra=["--offload-threshold", "1"], workers=2)
    yield s
    s.stop()


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_with_everything_offloaded(name, redis_server, offloading):
    with open(os.path.join(SCRIPTS_DIR, name)) as f:
        text = f.read()
    failures = run_script(text, redis_server.port, offloading.port, 2, name)
    assert not failures, "\n".join(failures)


PIPELINE = [
    ["FLUSHALL"],
    ["SADD", "a", "1", "2", "3", "4"],
    ["SADD", "b", "3", "4", "5"],
    ["SINTER", "a", "b"],
    ["GET", "nokey"],
    ["SUNIONSTORE", "u", "a", "b"],
    ["INCR", "n"],
    ["SMEMBERS", "u"],
    ["ZADD", "z1", "1", "x", "2", "y"],
    ["ZADD", "z2", "3", "y", "4", "w"],
    ["ZUNIONSTORE", "zu", "2", "z1", "z2", "WEIGHTS", "1", "2"],
    ["ZRANGE", "zu", "0", "-1", "WITHSCORES"],
    ["INCR", "n"],
    ["RPUSH", "l", "c", "a", "b"],
    ["LRANGE", "l", "0", "-1"],
    ["SORT", "l", "ALPHA", "STORE", "sorted"],
    ["LRANGE", "sorted", "0", "-1"],
    ["CLIENT", "REPLY", "SKIP"],
    ["SMEMBERS", "a"],
    ["INCR", "n"],
    ["SELECT", "1"],
    ["SADD", "a", "9"],
    ["SMEMBERS", "a"],
    ["KEYS", "*"],
    ["SELECT", "0"],
    ["MULTI"],
    ["SINTERSTORE", "i", "a", "b"],
    ["INCR", "n"],
    ["SMEMBERS", "i"],
    ["EXEC"],
    ["SINTER", "a", "wrongtype-n-is-not-a-set", "n"],
    ["SINTER", "a", "n"],
    ["ZINTERSTORE", "bad", "0", "z1"],
    ["DEL", "a", "b", "u", "zu", "l", "sorted", "i"],
    ["GET", "n"],
    ["ECHO", "end"],
]


def pipeline_bytes(port, commands, proto=2, half_close=False):
    """Send every command in one write; return the raw replies up to ECHO end's."""
    c = RawConn(port)
    try:
        if proto == 3:
            c.call("HELLO", "3")
        c.send_raw(b"".join(encode(cmd) for cmd in commands))
        if half_close:
            c.sock.shutdown(socket.SHUT_WR)
        want = b"end\r\n"
        while not c.buf.endswith(want):
            c._fill()
        return c.buf
    finally:
        c.close()


def offloaded_commands(port):
    c = RawConn(port)
    try:
        info = parse(c.call("INFO", "threads")).decode()
    finally:
        c.close()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return int(fields["offloaded_commands"])


@pytest.mark.parametrize("proto", [2, 3])
def test_pipeline_mixing_heavy_and_light_keeps_order(proto, redis_server, offloading):
    expected = pipeline_bytes(redis_server.port, PIPELINE, proto)
    before = offloaded_commands(offloading.port)
    assert pipeline_bytes(offloading.port, PIPELINE, proto) == expected
    # SINTER, SUNIONSTORE, SMEMBERS x3, ZUNIONSTORE, ZRANGE, LRANGE x2, SORT, KEYS, the
    # failing SINTERs and ZINTERSTORE, DEL: the pool ran them (MULTI's SINTERSTORE ran in
    # EXEC, inline).
    assert offloaded_commands(offloading.port) - before >= 12


def test_pipeline_then_half_close_gets_every_reply(redis_server, offloading):
    expected = pipeline_bytes(redis_server.port, PIPELINE, half_close=True)
    assert pipeline_bytes(offloading.port, PIPELINE, half_close=True) == expected


def test_default_threshold_big_sets(redis_server, fresh_skein):
    """Sets past the default threshold: the replies of SUNIONSTORE/SINTERCARD/SCARD and
    the light commands around them, in one pipeline, equal Redis's."""
    skein = fresh_skein()
    members_a = [str(i) for i in range(0, 30000)]
    members_b = [str(i) for i in range(15000, 45000)]
    setup = [["FLUSHALL"], ["SADD", "a"] + members_a, ["SADD", "b"] + members_b]
    load = [["SUNIONSTORE", "u", "a", "b"], ["PING"], ["SINTERCARD", "2", "a", "b"],
            ["SCARD", "u"], ["ZUNIONSTORE", "zu", "2", "a", "b"], ["ZCARD", "zu"],
            ["ZRANGE", "zu", "100", "105", "WITHSCORES"], ["LRANGE", "nokey", "0", "-1"],
            ["DEL", "u", "zu"], ["EXISTS", "u", "zu"], ["ECHO", "end"]]
    for port in (redis_server.port, skein.port):
        pipeline_bytes(port, setup + [["ECHO", "end"]])
    before = offloaded_commands(skein.port)
    assert pipeline_bytes(skein.port, load) == pipeline_bytes(redis_server.port, load)
    # SUNIONSTORE, SINTERCARD, ZUNIONSTORE, DEL passed the default threshold.
    assert offloaded_commands(skein.port) - before == 4


@pytest.fixture
def two(offloading):
    """Two connections to the offloading server, on a flushed dataset."""
    a, b = RawConn(offloading.port), RawConn(offloading.port)
    a.call("FLUSHALL")
    yield a, b
    a.close()
    b.close()


def test_watch_sees_offloaded_write(two):
    a, b = two
    a.call("SADD", "s1", "1", "2")
    a.call("SADD", "s2", "2", "3")
    assert parse(a.call("WATCH", "dst")) == b"OK"
    assert parse(b.call("SUNIONSTORE", "dst", "s1", "s2")) == 3
    a.call("MULTI")
    a.call("SET", "x", "1")
    assert parse(a.call("EXEC")) is None


def test_notifications_of_offloaded_write(two):
    sub, w = two
    w.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        sub.call("SUBSCRIBE", "__keyspace@0__:dst")
        w.call("SADD", "s1", "1", "2")
        assert parse(w.call("SINTERSTORE", "dst", "s1", "s1")) == 2
        assert parse(w.call("SMEMBERS", "dst")) == [b"1", b"2"]
        msg = parse(sub.read_reply())
        assert msg == [b"message", b"__keyspace@0__:dst", b"sinterstore"]
    finally:
        w.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_blocked_client_served_by_offloaded_write(two):
    waiter, w = two
    w.call("RPUSH", "src", "3", "1", "2")
    waiter.send_raw(encode(["BLPOP", "dst", "0"]))
    end = time.time() + DEADLINE_S
    while blocked_clients(w) != 1:
        assert time.time() < end, "the waiter never blocked"
        time.sleep(0.005)
    # SORT ... STORE creates the list on the pool; the waiter is served from there.
    assert parse(w.call("SORT", "src", "STORE", "dst")) == 3
    assert parse(waiter.read_reply()) == [b"dst", b"1"]
    assert parse(w.call("LRANGE", "dst", "0", "-1")) == [b"2", b"3"]


def test_client_gone_while_offloaded(offloading):
    c = RawConn(offloading.port)
    c.call("FLUSHALL")
    c.call("SADD", "s", "1", "2", "3")
    c.send_raw(encode(["SUNIONSTORE", "d", "s", "s"]) + encode(["SMEMBERS", "d"]))
    c.close()
    probe = RawConn(offloading.port)
    try:
        assert parse(probe.call("PING")) == b"PONG"
        end = time.time() + DEADLINE_S
        while parse(probe.call("EXISTS", "d")) != 1:
            assert time.time() < end, "the offloaded write never took effect"
            time.sleep(0.005)
    finally:
        probe.close()


def lazyfree_figures(conn):
    info = parse(conn.call("INFO", "memory")).decode()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return int(fields["lazyfree_pending_objects"]), int(fields["lazyfreed_objects"])


def lazyfree_run(port):
    """UNLINK, DEL with lazyfree-lazy-user-del, overwrites and lazy expiry with
    lazyfree-lazy-server-del and lazyfree-lazy-expire, FLUSHALL ASYNC: lazyfreed_objects
    after."""
    c = RawConn(port)
    try:
        members = ["m%d" % i for i in range(1000)]
        c.call("SADD", "big", *members)
        c.call("SADD", "small", "1", "2", "3")
        assert parse(c.call("UNLINK", "big", "small", "none")) == 2
        c.call("CONFIG", "SET", "lazyfree-lazy-user-del", "yes")
        c.call("SADD", "big2", *members)
        assert parse(c.call("DEL", "big2")) == 1
        c.call("CONFIG", "SET", "lazyfree-lazy-user-del", "no")
        c.call("SADD", "big3", *members)
        assert parse(c.call("DEL", "big3")) == 1
        # Implicit deletes: a big value overwritten (lazyfree-lazy-server-del) or found
        # expired by a lookup (lazyfree-lazy-expire; active expiry off so the lookup finds it).
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        c.call("CONFIG", "SET", "lazyfree-lazy-server-del", "yes")
        c.call("CONFIG", "SET", "lazyfree-lazy-expire", "yes")
        c.call("SADD", "big4", *members)
        c.call("SET", "big4", "x")
        c.call("SADD", "big5", *members)
        c.call("PEXPIRE", "big5", "1")
        time.sleep(0.01)
        assert parse(c.call("EXISTS", "big5")) == 0
        c.call("CONFIG", "SET", "lazyfree-lazy-server-del", "no")
        c.call("CONFIG", "SET", "lazyfree-lazy-expire", "no")
        c.call("SADD", "big6", *members)
        c.call("SET", "big6", "x")
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        c.call("MSET", *["k%d" % i for i in range(20)])
        assert parse(c.call("FLUSHALL", "ASYNC")) == b"OK"
        end = time.time() + DEADLINE_S
        while True:
            pending, freed = lazyfree_figures(c)
            if pending == 0:
                return freed
            assert time.time() < end, "lazyfree never drained"
            time.sleep(0.01)
    finally:
        c.close()


def test_lazyfree_counts_as_redis(fresh_redis, fresh_skein):
    assert lazyfree_run(fresh_skein().port) == lazyfree_run(fresh_redis().port)


def test_concurrent_heavy_and_light_on_shared_keys(offloading):
    """Clients on both workers mix offloaded commands and light ones on the same keys
    (light commands meeting a shard an offloaded command holds wait on the pool): every
    reply is well formed, nothing is lost, and a union stored is a union."""
    import random
    import threading

    setup = RawConn(offloading.port)
    setup.call("FLUSHALL")
    setup.call("SADD", "a", *[str(i) for i in range(300)])
    setup.call("SADD", "b", *[str(i) for i in range(200, 500)])
    errors = []

    def client(seed):
        rnd = random.Random(seed)
        c = RawConn(offloading.port)
        try:
            for _ in range(150):
                op = rnd.randrange(5)
                dst = "d%d" % rnd.randrange(3)
                if op == 0:
                    got = parse(c.call("SUNIONSTORE", dst, "a", "b"))
                elif op == 1:
                    got = parse(c.call("SCARD", dst))
                elif op == 2:
                    got = parse(c.call("SADD", "a", str(rnd.randrange(1000))))
                elif op == 3:
                    got = parse(c.call("DEL", dst))
                else:
                    got = parse(c.call("SINTERCARD", "2", "a", "b"))
                if not isinstance(got, int):
                    errors.append((op, got))
        finally:
            c.close()

    threads = [threading.Thread(target=client, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE_S * 4)
    assert not errors
    union = parse(setup.call("SUNIONSTORE", "u", "a", "b"))
    assert union == len(set(parse(setup.call("SMEMBERS", "a")) + parse(setup.call("SMEMBERS", "b"))))
    assert parse(setup.call("PING")) == b"PONG"
    setup.close()
