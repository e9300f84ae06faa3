"""DEBUG LOADAOF against redis-server 7.0.15: the AOF is flushed, the dataset emptied and
loaded again from the AOF directory, with every key, value, encoding and TTL as before;
nothing is appended to the AOF by the replay, rdb_changes_since_last_save is 0 and the
replayed commands count in no command statistics; with `appendonly no` the AOF left on
disk is loaded, and with no AOF at all the server exits as Redis does; writers running
during the reload get -LOADING or are in the reloaded dataset, never lost."""
import os
import threading

import redis

from test_aof import Server, tmpdirs  # noqa: F401 (fixture)
from test_persistence import client, populate, snapshot

DEBUG = ["--enable-debug-command", "yes"]


def stats(r):
    """What a reload must leave as it was (or reset)."""
    info = r.info()
    return {
        "changes": info["rdb_changes_since_last_save"],
        "aof_size": info["aof_current_size"],
        "set_calls": r.info("commandstats")["cmdstat_set"]["calls"],
        "loading": info["loading"],
    }


def relative(snap):
    """A snapshot with expiry times as "has one" (the servers ran at other instants)."""
    return {k: (t, enc, exp > 0 if exp >= 0 else exp, v)
            for k, (t, enc, exp, v) in snap.items()}


def reload_outcome(kind, d):
    s = Server(kind, d, extra=DEBUG)
    try:
        r = client(s)
        populate(r)
        r.incrbyfloat("float", "1.5")
        r.expire("raw", 1000)
        r.persist("ttl2")
        with r.pipeline(transaction=True) as p:
            p.set("in_multi", "1").lpush("list_small", "m").execute()
        client(s, 5).set("db5", "x", ex=5000)
        before, stats_before = snapshot(s), stats(r)
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        after, stats_after = snapshot(s), stats(r)
        assert after == before, kind
        assert stats_after["changes"] == 0
        assert stats_after["set_calls"] == stats_before["set_calls"], kind
        # A write after the reload is appended once; a restart finds the same dataset.
        r.set("after", "1")
        expected = snapshot(s)
        s.stop()
        s = Server(kind, d)
        assert snapshot(s) == expected, kind
        # aof_current_size is set to every file's size (the base included, which Redis
        # did not count before): the same growth on both servers.
        grown = stats_after["aof_size"] - stats_before["aof_size"]
        return relative(after), grown, stats_after
    finally:
        s.stop()


def test_loadaof_reloads_every_key_like_redis(tmpdirs):
    want = reload_outcome("redis", tmpdirs())
    got = reload_outcome("skein", tmpdirs())
    assert got == want


def appendonly_no_outcome(kind, d):
    """appendonly turned off after some writes: DEBUG LOADAOF loads the AOF left behind."""
    s = Server(kind, d, extra=DEBUG)
    try:
        r = client(s)
        r.set("in_aof", "1")
        r.rpush("list", "a", "b")
        r.config_set("appendonly", "no")
        r.set("not_in_aof", "1")
        r.rpush("list", "c")
        reply = r.execute_command("DEBUG", "LOADAOF")
        return reply, sorted(r.keys()), r.lrange("list", 0, -1), r.info()["aof_enabled"]
    finally:
        s.stop()


def test_loadaof_with_appendonly_no_loads_the_files_on_disk(tmpdirs):
    want = appendonly_no_outcome("redis", tmpdirs())
    assert want == (b"OK", [b"in_aof", b"list"], [b"a", b"b"], 0)
    assert appendonly_no_outcome("skein", tmpdirs()) == want


def no_aof_outcome(kind, d):
    """appendonly no and no AOF directory: Redis empties the dataset and exits (1)."""
    s = Server(kind, d, extra=DEBUG + ["--appendonly", "no"])
    try:
        r = client(s)
        r.set("a", "1")
        try:
            reply = r.execute_command("DEBUG", "LOADAOF")
        except redis.ConnectionError:
            reply = "connection lost"
        return reply, s.proc.wait(timeout=10)
    finally:
        s.stop()


def test_loadaof_without_any_aof_exits_like_redis(tmpdirs):
    want = no_aof_outcome("redis", tmpdirs())
    assert want == ("connection lost", 1)
    assert no_aof_outcome("skein", tmpdirs()) == want


def concurrent_outcome(kind, d):
    """Writers INCR while the AOF is reloaded three times (each command of the replay
    slowed by key-load-delay): each reply is a count or -LOADING, and the counter ends
    equal to the INCRs acknowledged."""
    s = Server(kind, d, extra=DEBUG)
    try:
        r = client(s)
        for i in range(2000):
            r.set("k%d" % i, i)
        r.config_set("key-load-delay", 50)
        stop = threading.Event()
        acked, odd = [0, 0], []

        def writer(n):
            c = client(s, n)
            while not stop.is_set():
                try:
                    c.incr("counter")
                    acked[n] += 1
                except redis.BusyLoadingError:
                    pass
                except redis.RedisError as e:
                    odd.append(str(e))

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        replies = [r.execute_command("DEBUG", "LOADAOF") for _ in range(3)]
        stop.set()
        for t in threads:
            t.join()
        r.config_set("key-load-delay", 0)
        counts = [int(client(s, n).get("counter") or 0) for n in range(2)]
        return replies, odd, counts == acked, r.dbsize()
    finally:
        s.stop()


def test_loadaof_under_concurrent_writes(tmpdirs):
    want = concurrent_outcome("redis", tmpdirs())
    assert want == ([b"OK"] * 3, [], True, 2001)
    assert concurrent_outcome("skein", tmpdirs()) == want


def test_loadaof_log_line(tmpdirs):
    d = tmpdirs()
    s = Server("skein", d, extra=DEBUG)
    try:
        client(s).set("a", 1)
        assert client(s).execute_command("DEBUG", "LOADAOF") == b"OK"
        log = open(os.path.join(d, "skein.log")).read()
        assert "Append Only File loaded by DEBUG LOADAOF" in log
        assert "DB loaded from incr file appendonly.aof.1.incr.aof" in log
    finally:
        s.stop()


def in_multi_outcome(kind, d):
    """DEBUG LOADAOF queued in a transaction, commands after it: the replies, and what a
    restart finds (the SET after it is in the AOF once)."""
    s = Server(kind, d, extra=DEBUG)
    try:
        r = client(s)
        r.set("k", "v")
        with r.pipeline(transaction=True) as p:
            p.execute_command("DEBUG", "LOADAOF").get("k").set("after", "1").incr("n")
            replies = p.execute()
        s.stop()
        s = Server(kind, d)
        r = client(s)
        return replies, sorted(r.keys()), r.get("n")
    finally:
        s.stop()


def test_loadaof_inside_multi_like_redis(tmpdirs):
    want = in_multi_outcome("redis", tmpdirs())
    assert want == ([b"OK", b"v", True, 1], [b"after", b"k", b"n"], b"1")
    assert in_multi_outcome("skein", tmpdirs()) == want
