"""SORT's side effects against redis-server 7.0.15: keyspace notifications (sortstore,
new, del, keymiss of BY/GET lookups), keyspace hits and misses counted for every pattern
lookup, the stored list's quicklist (Redis's default options, whatever the configured
ones), what SORT propagates (DEBUG PROPAGATION), clients blocked on the STORE destination
served as Redis serves them; and atomicity: a SORT whose GET patterns
read keys written concurrently by MSETs on other workers sees each MSET whole."""
import re
import threading

from resp_client import RawConn, parse
from test_blocking import Scenario
from test_debug_object import fields
from test_lists_propagation import take
from test_multi_concurrency import run_threads
from test_notifications import cmd, compare, record

SETUP = [cmd("RPUSH", "l", "b", "a", "c"), cmd("MSET", "w_a", "2", "w_b", "1", "v_a", "x"),
         cmd("HSET", "h_c", "f", "9")]

SEQUENCE = [
    ("setup", SETUP),
    ("store-new", [cmd("SORT", "l", "STORE", "dst")]),
    ("store-overwrite", [cmd("SORT", "l", "BY", "w_*", "GET", "v_*", "STORE", "dst")]),
    ("store-over-string", [cmd("SET", "str", "v", "EX", "100"),
                           cmd("SORT", "l", "ALPHA", "STORE", "str"), cmd("TTL", "str")]),
    ("store-empty-deletes", [cmd("SORT", "l", "LIMIT", "0", "0", "STORE", "dst"),
                             cmd("SORT", "nokey", "STORE", "dst")]),
    ("lookups-miss", [cmd("SORT", "l", "BY", "w_*", "GET", "h_*->f", "GET", "#")]),
    ("read-miss", [cmd("SORT", "nokey"), cmd("SORT_RO", "nokey", "BY", "w_*")]),
    ("wrongtype", [cmd("SORT", "str", "STORE", "dst2"), cmd("SORT", "l", "foo")]),
    ("not-double", [cmd("SET", "w_c", "abc"), cmd("SORT", "l", "BY", "w_*", "STORE", "d3")]),
    ("set-nosort-store", [cmd("SADD", "s", "z", "y", "x"),
                          cmd("SORT", "s", "BY", "nosort", "STORE", "d4")]),
]


def test_sort_notifications(redis_server, skein_server):
    for flags in ("KEA", "KEAn", "Elg", "Km", "Em"):
        ref = record(redis_server.port, 2, flags, SEQUENCE)
        sk = record(skein_server.port, 2, flags, SEQUENCE)
        diffs = compare(ref, sk)
        assert not diffs, "\n".join(diffs)


def stats(c):
    text = parse(c.call("INFO", "stats")).decode()
    return {k: int(v) for k, v in re.findall(r"(keyspace_hits|keyspace_misses):(\d+)", text)}


def test_lookups_count_hits_and_misses(fresh_redis, fresh_skein):
    deltas = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("RPUSH", "l", "a", "b", "c", "d")
        c.call("MSET", "w_a", "3", "w_b", "1", "v_c", "x")
        c.call("HSET", "h_a", "f", "1")
        got = []
        for args in (["SORT", "l"], ["SORT", "nokey"], ["SORT", "l", "BY", "w_*"],
                     ["SORT", "l", "BY", "nosort", "GET", "v_*", "GET", "#"],
                     ["SORT", "l", "BY", "w_*", "GET", "h_*->f", "LIMIT", "1", "2"],
                     ["SORT", "l", "BY", "w_*", "ALPHA", "STORE", "dst"],
                     ["SORT", "l", "GET", "nostar"]):
            before = stats(c)
            c.call(*args)
            after = stats(c)
            got.append((args, {k: after[k] - before[k] for k in after}))
        deltas.append(got)
        c.close()
    assert deltas[0] == deltas[1]


def test_stored_list_has_default_list_options(fresh_redis, fresh_skein):
    replies = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("CONFIG", "SET", "list-max-listpack-size", "4")
        c.call("CONFIG", "SET", "list-compress-depth", "1")
        c.call("RPUSH", "src", *range(300))
        c.call("SORT", "src", "DESC", "STORE", "dst")
        c.call("SORT", "src", "GET", "#", "GET", "nokey_*", "STORE", "dst2")
        replies.append([fields(c.call("DEBUG", "OBJECT", k)) for k in ("src", "dst", "dst2")])
        c.close()
    assert replies[0] == replies[1]
    assert "ql_listpack_max:-2" in replies[1][1]


def test_sort_propagation(fresh_skein):
    skein = fresh_skein()
    c = RawConn(skein.port)
    c.call("RPUSH", "l", "2", "1")
    c.call("SET", "w_1", "5")
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    steps = [
        (["SORT", "l"], []),
        (["SORT", "l", "BY", "w_*", "GET", "#"], []),
        (["SORT_RO", "l"], []),
        (["SORT", "l", "BY", "w_*", "STORE", "dst"], [[b"SORT", b"l", b"BY", b"w_*", b"STORE",
                                                       b"dst"]]),
        (["SORT", "l", "LIMIT", "0", "0", "STORE", "dst"], [[b"SORT", b"l", b"LIMIT", b"0",
                                                             b"0", b"STORE", b"dst"]]),
        # Nothing to delete: the dirty counter did not move, nothing propagated.
        (["SORT", "l", "LIMIT", "0", "0", "STORE", "dst"], []),
        (["SORT", "nokey", "STORE", "dst"], []),
    ]
    for args, want in steps:
        c.call(*args)
        got = [x for x in take(c) if x[0].upper() != b"SELECT"]
        assert got == want, (args, got)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"


def test_sort_with_patterns_is_atomic(fresh_skein):
    """Writers MSET k_0..k_N to one value on several workers; SORT ... GET k_* must never
    return a mix of two MSETs (it holds its whole database while it reads them)."""
    skein = fresh_skein(workers=4)
    n = 40
    names = [b"%d" % i for i in range(n)]
    setup = RawConn(skein.port)
    setup.call("RPUSH", "l", *names)
    setup.call("MSET", *[x for i in names for x in (b"k_" + i, b"0")])
    stop = threading.Event()

    def writer(tag):
        def body():
            c = RawConn(skein.port)
            for v in range(300):
                c.call("MSET", *[x for i in names for x in (b"k_" + i, b"%s-%d" % (tag, v))])
            stop.set()
        return body

    def reader(*by):
        def body():
            c = RawConn(skein.port)
            seen = 0
            while not stop.is_set() or seen < 50:
                got = parse(c.call("SORT", "l", "BY", *by, "GET", "k_*"))
                assert len(set(got)) == 1, got
                seen += 1
        return body

    run_threads([writer(b"a"), writer(b"b"), reader("nosort"), reader("k_*", "ALPHA")])


def sort_store_wakes_waiters(s):
    """A list created by SORT ... STORE serves clients blocked on it (Redis's dbAdd signals
    the key); one overwritten in place does not wake anybody new."""
    s.call("p", "RPUSH", "src", "3", "1", "2")
    s.block("a", "BLPOP", "dst", "0")
    s.block("b", "BRPOP", "dst", "0")
    s.call("p", "SORT", "src", "STORE", "dst")
    s.reply("a")
    s.reply("b")
    s.call("p", "LRANGE", "dst", "0", "-1")
    s.call("p", "SORT", "src", "DESC", "LIMIT", "0", "0", "STORE", "dst")
    s.block("a", "BLPOP", "dst", "0")
    s.call("p", "MULTI")
    s.call("p", "SORT", "src", "DESC", "STORE", "dst")
    s.call("p", "LLEN", "dst")
    s.call("p", "EXEC")
    s.reply("a")


def test_sort_store_serves_blocked_clients(redis_server, skein_server):
    logs = []
    for port in (redis_server.port, skein_server.port):
        s = Scenario(port, 2)
        try:
            sort_store_wakes_waiters(s)
            logs.append(s.log)
        finally:
            s.close()
    assert logs[0] == logs[1]


def test_random_option_soup_matches_redis(redis_server, skein_server):
    """Random token sequences after SORT / SORT_RO (keywords, numbers, patterns, key
    names in any order, valid or not): the same replies and stored keys as Redis, so the
    lock plan (which parses them too) never misses a key the handler touches."""
    import random
    r = random.Random(18)
    tokens = ["ASC", "DESC", "ALPHA", "LIMIT", "0", "1", "2", "-1", "x", "STORE", "BY", "GET",
              "#", "w_*", "nosort", "v_*", "dst", "l", "limit", "store", "by", "get"]
    conns = [RawConn(redis_server.port), RawConn(skein_server.port)]
    for c in conns:
        c.call("FLUSHALL")
        c.call("ZADD", "errno-reset", "0", "x")
        c.call("RPUSH", "l", "3", "1", "2")
        c.call("MSET", "w_1", "3", "w_2", "2", "w_3", "1", "v_1", "a", "v_3", "c")
    for _ in range(1500):
        args = [r.choice(["SORT", "SORT", "SORT_RO"]), r.choice(["l", "l", "nokey"])]
        args += [r.choice(tokens) for _ in range(r.randint(0, 7))]
        replies = [c.call(*args) for c in conns]
        assert replies[0] == replies[1], args
        stored = [c.call("LRANGE", "dst", "0", "-1") for c in conns]
        assert stored[0] == stored[1], args
        if any(c.call("TYPE", "l") != b"+list\r\n" for c in conns):
            for c in conns:
                c.call("DEL", "l")
                c.call("RPUSH", "l", "3", "1", "2")
