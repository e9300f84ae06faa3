"""maxmemory against redis-server 7.0.15: the -OOM refusal of an EXEC whose transaction
holds a denyoom command once memory went over the limit after it was queued, CONFIG SET
maxmemory shrinking and growing at run time, and the used_memory figure checked against
jemalloc's own count while a real client fills the server."""
import time

import redis

from conftest import AGAINST_REDIS
from resp_client import RawConn, parse

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"


def info(conn, section="memory"):
    text = parse(conn.call("INFO", section)).decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def exec_after_limit(port):
    """A transaction queued under no limit, then EXEC once another client set one."""
    a, b = RawConn(port), RawConn(port)
    try:
        replies = [a.call("MULTI"), a.call("SET", "k", "v"), a.call("GET", "k")]
        b.call("CONFIG", "SET", "maxmemory", "1")
        replies.append(a.call("EXEC"))
        # The transaction is gone: EXEC again has no MULTI.
        replies.append(a.call("EXEC"))
        # A transaction of reads only still runs.
        b.call("CONFIG", "SET", "maxmemory", "0")
        a.call("MULTI")
        a.call("GET", "k")
        b.call("CONFIG", "SET", "maxmemory", "1")
        replies.append(a.call("EXEC"))
        replies.append(a.call("SET", "k", "v"))
        b.call("CONFIG", "SET", "maxmemory", "0")
        replies.append(parse(a.call("INFO", "errorstats")))
        return replies
    finally:
        a.close()
        b.close()


def test_exec_refused_when_over_limit(fresh_redis, fresh_skein):
    r, s = fresh_redis(), fresh_skein()
    want, got = exec_after_limit(r.port), exec_after_limit(s.port)
    assert got == want
    assert got[3] == (b"-EXECABORT Transaction discarded because of: OOM command not "
                      b"allowed when used memory > 'maxmemory'.\r\n")
    assert got[6] == OOM


def test_shrink_and_grow_at_run_time(fresh_skein):
    s = fresh_skein()
    c = redis.Redis(port=s.port)
    base = int(c.info("memory")["used_memory"])
    # Filled from a connection of its own, closed after (its read buffer held the whole
    # pipeline).
    filler = redis.Redis(port=s.port)
    pipe = filler.pipeline(transaction=False)
    for i in range(20000):
        pipe.set("key:%d" % i, "x" * 100)
    pipe.execute()
    filler.close()
    # Its buffers are freed once its worker has seen the close: wait for that.
    for _ in range(200):
        if len(c.client_list()) == 1:
            break
        time.sleep(0.01)
    used = int(c.info("memory")["used_memory"])
    # Shrinking below what is used: writes are refused (noeviction), reads served.
    c.config_set("maxmemory", str(base + (used - base) // 2))
    try:
        c.set("new", "v")
        raise AssertionError("SET accepted over maxmemory")
    except redis.exceptions.OutOfMemoryError:
        pass
    assert c.get("key:7") == b"x" * 100
    assert c.dbsize() == 20000
    # Deleting makes room again.
    for i in range(0, 20000, 1000):
        c.delete(*["key:%d" % j for j in range(i, i + 1000)])
    assert c.set("new", "v")
    c.config_set("maxmemory", "0")
    assert c.set("new2", "v")
    if not AGAINST_REDIS:
        log = open(s.dir + "/server.log").read()
        assert "is smaller than the current memory usage" in log


def test_used_memory_tracks_allocator(fresh_skein):
    """used_memory counts every allocation at its size class: it follows jemalloc's own
    allocated bytes (which also hold objects cached in its thread caches) within a small
    margin, going up with data and back down when it is deleted."""
    s = fresh_skein()
    c = redis.Redis(port=s.port)
    base = int(c.info("memory")["used_memory"])
    pipe = c.pipeline(transaction=False)
    for i in range(100000):
        pipe.set("key:%d" % i, "v" * 200)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    m = c.info("memory")
    used, allocated = int(m["used_memory"]), int(m["allocator_allocated"])
    grown = used - base
    # 100k keys of 200-byte values: at least the payload, at most 2x of it.
    assert 20_000_000 <= grown <= 50_000_000, grown
    assert abs(allocated - used) <= 0.05 * used + 4 * 1024 * 1024, (used, allocated)
    c.flushall()
    after = int(c.info("memory")["used_memory"])
    assert after - base < 2 * 1024 * 1024, (base, after)
