"""Sorted sets' side effects against redis-server 7.0.15: the keyspace notifications of
every writing command (zadd/zincr/zrem/zrem*range*/zpop*/z*store/zrangestore, new and del,
nothing for a write that changes nothing) in Redis's order, and the propagation stream
(ZMPOP rewritten to ZPOPMIN/ZPOPMAX with the count popped, the rest as called) replayed
into a fresh Redis giving the same sorted sets."""
from resp_client import RawConn, parse
from test_notifications import assert_same_notifications, cmd
from test_propagation import commands

SEQUENCE = [
    ("zadd-new", [cmd("ZADD", "z", "1", "a", "2", "b", "3", "c")]),
    ("zadd-noop", [cmd("ZADD", "z", "1", "a"), cmd("ZADD", "z", "NX", "5", "a"),
                   cmd("ZADD", "z", "XX", "5", "nosuch"), cmd("ZADD", "nokey", "XX", "1", "a")]),
    ("zadd-update", [cmd("ZADD", "z", "CH", "10", "a")]),
    ("zadd-incr", [cmd("ZADD", "z", "INCR", "1", "a"), cmd("ZINCRBY", "z", "2", "d"),
                   cmd("ZINCRBY", "new", "1", "x")]),
    ("zadd-nan", [cmd("ZADD", "z", "inf", "i"), cmd("ZINCRBY", "z", "-inf", "i")]),
    ("zrem", [cmd("ZREM", "z", "nosuch"), cmd("ZREM", "z", "d", "i")]),
    ("zrem-last", [cmd("ZREM", "new", "x")]),
    ("zremrange", [cmd("ZADD", "r", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
                   cmd("ZREMRANGEBYSCORE", "r", "10", "20"), cmd("ZREMRANGEBYSCORE", "r", "1", "1"),
                   cmd("ZREMRANGEBYRANK", "r", "0", "0"), cmd("ZREMRANGEBYLEX", "r", "[c", "[c"),
                   cmd("ZREMRANGEBYRANK", "r", "0", "-1")]),
    ("zpop", [cmd("ZADD", "p", "1", "a", "2", "b", "3", "c"), cmd("ZPOPMIN", "p"),
              cmd("ZPOPMAX", "p", "0"), cmd("ZPOPMAX", "p", "5"), cmd("ZPOPMIN", "p")]),
    ("zmpop", [cmd("ZADD", "m", "1", "a", "2", "b"), cmd("ZMPOP", "2", "nokey", "m", "MAX"),
               cmd("ZMPOP", "1", "m", "MIN", "COUNT", "9")]),
    ("store", [cmd("ZADD", "s1", "1", "a", "2", "b"), cmd("ZADD", "s2", "5", "b"),
               cmd("ZUNIONSTORE", "dst", "2", "s1", "s2"), cmd("ZINTERSTORE", "dst", "2", "s1", "s2"),
               cmd("ZDIFFSTORE", "dst", "2", "s1", "s2"), cmd("ZINTERSTORE", "dst", "2", "s1", "nokey"),
               cmd("ZINTERSTORE", "dst", "2", "s1", "nokey")]),
    ("rangestore", [cmd("ZRANGESTORE", "rs", "s1", "0", "-1"), cmd("ZRANGESTORE", "rs", "s1", "5", "9"),
                    cmd("ZRANGESTORE", "rs", "s1", "5", "9"), cmd("SET", "str", "x"),
                    cmd("ZRANGESTORE", "str", "s1", "0", "0")]),
    ("reads", [cmd("ZRANGE", "s1", "0", "-1"), cmd("ZSCORE", "nokey", "a"), cmd("ZCARD", "s1"),
               cmd("ZRANDMEMBER", "nokey")]),
    ("big", [cmd("ZADD", "b", *[x for i in range(200) for x in (str(i), "m%d" % i)]),
             cmd("ZPOPMIN", "b", "150"), cmd("ZREMRANGEBYSCORE", "b", "-inf", "+inf")]),
    ("restore", [("dump_restore", "s1", "s1copy")]),
]


def test_zset_notifications(redis_server, skein_server):
    assert_same_notifications(redis_server.port, skein_server.port, SEQUENCE, 50)


def zsets(port):
    c = RawConn(port)
    try:
        keys = sorted(parse(c.call("KEYS", "*")))
        return {k: (c.call("TYPE", k), c.call("ZRANGE", k, "0", "-1", "WITHSCORES")) for k in keys}
    finally:
        c.close()


def test_zset_propagation_replays_into_redis(fresh_skein, fresh_redis):
    sk = fresh_skein()
    ref = fresh_redis()
    c = RawConn(sk.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    for _, actions in SEQUENCE:
        for act in actions:
            if act[0] == "cmd":
                c.call(*act[1:])
    for i in range(300):
        c.call("ZADD", "w", str(i % 7), "m%d" % (i % 50))
        if i % 9 == 0:
            c.call("ZMPOP", "1", "w", "MIN" if i % 2 else "MAX", "COUNT", "3")
        if i % 13 == 0:
            c.call("ZINCRBY", "w", "0.1", "m%d" % (i % 50))
    raw = c.call("DEBUG", "PROPAGATION", "TAKE")
    head, _, rest = raw.partition(b"\r\n")
    stream = rest[: int(head[1:])]
    cmds = commands(stream)
    names = {x[0].upper() for x in cmds}
    assert b"ZMPOP" not in names and {b"ZPOPMIN", b"ZPOPMAX"} <= names
    for x in cmds:
        if x[0].upper() in (b"ZPOPMIN", b"ZPOPMAX"):
            assert len(x) in (2, 3)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    # Replayed into Redis: every command accepted, the same sorted sets.
    feed = RawConn(ref.port)
    feed.send_raw(stream)
    errors = [r for r in (feed.read_reply() for _ in cmds) if r[:1] == b"-"]
    assert errors == [] and zsets(sk.port) == zsets(ref.port)
