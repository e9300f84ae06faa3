"""What hash commands announce, against redis-server 7.0.15: keyspace notifications (which
events, in which order, `new` and `del` included) and the dirty counter
(`rdb_changes_since_last_save`) and keyspace hits and misses."""

from resp_client import RawConn, parse

WORKLOAD = [
    ["HSET", "a", "f", "1", "g", "2", "h", "3"],
    ["HSET", "a", "f", "1"],
    ["HDEL", "a", "f", "g", "h"],
    ["HSET", "b", "x", "1"],
    ["HSETNX", "b", "x", "2"],
    ["HSETNX", "b", "y", "2"],
    ["HSETNX", "nb", "y", "2"],
    ["HDEL", "b", "nope"],
    ["HDEL", "nokey", "f"],
    ["HINCRBYFLOAT", "b", "x", "1.5"],
    ["HINCRBYFLOAT", "b", "y", "abc"],
    ["HSET", "b", "s", "str"],
    ["HINCRBYFLOAT", "b", "s", "1"],
    ["HINCRBY", "b", "s", "1"],
    ["HMSET", "c", "a", "1", "b", "2"],
    ["HDEL", "c", "a"],
    ["HSET", "d", "a", "1"],
    ["HDEL", "d", "a", "b"],
    ["HINCRBY", "e", "a", "1"],
    ["HINCRBY", "e", "a", "x"],
    ["HINCRBY", "e", "a", "9223372036854775807"],
    ["HGET", "e", "a"],
    ["HGETALL", "e"],
    ["HMGET", "nokey", "a"],
    ["HGET", "nokey", "a"],
    ["HLEN", "nokey"],
    ["HSCAN", "nokey", "0"],
    ["HRANDFIELD", "nokey", "3"],
    ["HEXISTS", "e", "a"],
    ["HSTRLEN", "e", "a"],
    ["HKEYS", "e"],
    ["HRANDFIELD", "e", "-2"],
    ["HSCAN", "e", "0"],
    ["SET", "s", "v"],
    ["HSET", "s", "f", "v"],
]


COUNTERS = ("rdb_changes_since_last_save", "keyspace_hits", "keyspace_misses")


def counters(conn):
    """The dirty counter and the keyspace hit/miss counts."""
    info = parse(conn.call("INFO", "all")).decode()
    fields = dict(x.split(":", 1) for x in info.split("\r\n") if ":" in x)
    return [int(fields[name]) for name in COUNTERS]


def test_counters_count_like_redis(redis_server, skein_server):
    for port in (redis_server.port, skein_server.port):
        RawConn(port).call("FLUSHALL")
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    try:
        for cmd in WORKLOAD:
            before = (counters(ref), counters(sk))
            a, b = ref.call(*cmd), sk.call(*cmd)
            assert a == b, (cmd, a, b)
            after = (counters(ref), counters(sk))
            delta = [[x - y for x, y in zip(after[i], before[i])] for i in (0, 1)]
            assert delta[0] == delta[1], (cmd, COUNTERS, delta)
    finally:
        ref.call("FLUSHALL")
        sk.call("FLUSHALL")
        ref.close()
        sk.close()


def notifications(port):
    """The keyspace events of WORKLOAD on one server, as (channel, message) pairs."""
    conn = RawConn(port)
    conn.call("FLUSHALL")
    assert conn.call("CONFIG", "SET", "notify-keyspace-events", "KEAn") == b"+OK\r\n"
    sub = RawConn(port)
    sub.call("PSUBSCRIBE", "__key*__:*")
    try:
        for cmd in WORKLOAD:
            conn.call(*cmd)
        conn.call("PUBLISH", "__keyspace@0__:end", "end")
        out = []
        while True:
            msg = parse(sub.read_reply())
            out.append((msg[2], msg[3]))
            if msg[3] == b"end":
                return out
    finally:
        conn.call("CONFIG", "SET", "notify-keyspace-events", "")
        conn.call("FLUSHALL")
        conn.close()
        sub.close()


def test_notifications_like_redis(redis_server, skein_server):
    a = notifications(redis_server.port)
    b = notifications(skein_server.port)
    assert a == b
    assert len(a) > 20
