"""HyperLogLogs and DUMP/RESTORE against redis-server 7.0.15: the same commands give the
same DUMP payload on both servers; an HLL dumped by Redis and RESTOREd into Skein (sparse,
near the sparse limit, dense, merged, with a valid or stale cached cardinality) has the
same bytes and the same PFCOUNT (the union's too), and the other way round; bytes written
by Redis and SET into Skein count the same."""
from resp_client import parse
from dump_helpers import both


def build(conn):
    """HLLs of every shape, made by commands; returns their keys."""
    conn.call("FLUSHALL")
    conn.call("PFADD", "tiny", "a")
    conn.call("PFADD", "small", *("s%d" % i for i in range(40)))
    conn.call("PFCOUNT", "small")                       # valid cached cardinality
    conn.call("PFADD", "near", *("n%d" % i for i in range(700)))   # sparse, ~2.5 KB
    conn.call("PFADD", "dense", *("d%d" % i for i in range(5000)))
    conn.call("PFCOUNT", "dense")
    conn.call("PFADD", "dense", "more")                 # stale cache
    conn.call("PFMERGE", "merged", "small", "near", "dense")
    conn.call("PFADD", "empty")
    conn.call("PFDEBUG", "TODENSE", "tiny")
    return ["tiny", "small", "near", "dense", "merged", "empty"]


def test_dump_payloads_match(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        keys = build(ref)
        assert build(sk) == keys
        for k in keys:
            assert ref.call("GET", k) == sk.call("GET", k), k
            assert ref.call("DUMP", k) == sk.call("DUMP", k), k
    finally:
        ref.close()
        sk.close()


def move_all(src, dst, keys):
    for k in keys:
        payload = parse(src.call("DUMP", k))
        assert dst.call("RESTORE", k, "0", payload, "REPLACE") == b"+OK\r\n", k


def test_restore_both_ways(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for src, dst in ((ref, sk), (sk, ref)):
            keys = build(src)
            dst.call("FLUSHALL")
            move_all(src, dst, keys)
            for k in keys:
                assert dst.call("GET", k) == src.call("GET", k), k
            for k in keys:
                # PFCOUNT may rewrite the cache on both sides alike.
                assert dst.call("PFCOUNT", k) == src.call("PFCOUNT", k), k
                assert dst.call("GET", k) == src.call("GET", k), k
            assert dst.call("PFCOUNT", *keys) == src.call("PFCOUNT", *keys)
            dst.call("PFMERGE", "all", *keys)
            src.call("PFMERGE", "all", *keys)
            assert dst.call("GET", "all") == src.call("GET", "all")
    finally:
        ref.close()
        sk.close()


def test_set_of_redis_bytes(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        keys = build(ref)
        sk.call("FLUSHALL")
        for k in keys:
            assert sk.call("SET", k, parse(ref.call("GET", k))) == b"+OK\r\n"
        for k in keys:
            assert sk.call("PFCOUNT", k) == ref.call("PFCOUNT", k), k
            assert sk.call("PFADD", k, "x", "y", "z") == ref.call("PFADD", k, "x", "y", "z"), k
            assert sk.call("GET", k) == ref.call("GET", k), k
    finally:
        ref.close()
        sk.close()
