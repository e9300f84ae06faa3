"""List commands' keyspace notifications and dirty counts, differential: each step runs on
redis-server 7.0.15 and skein-server with a subscriber on every keyspace/keyevent channel
(notify-keyspace-events KEAn, `new` included), and the notifications each step produced
must be the same messages in the same order (LMOVE announces the push before the pop, as
lmoveHandlePush does; `del` follows the command's own event when a list is emptied). The
increase of rdb_changes_since_last_save per step must be Redis's too."""
from resp_client import RawConn, parse
from test_notifications import cmd, compare, record

SEQUENCE = [
    ("lpush-new", [cmd("LPUSH", "l", "a", "b", "c")]),
    ("rpush", [cmd("RPUSH", "l", "d", "e")]),
    ("pushx", [cmd("LPUSHX", "l", "x"), cmd("RPUSHX", "nokey", "x"), cmd("LPUSHX", "nokey", "y")]),
    ("lpop", [cmd("LPOP", "l"), cmd("RPOP", "l")]),
    ("pop-count", [cmd("LPOP", "l", "2"), cmd("RPOP", "l", "0"), cmd("LPOP", "nokey", "2")]),
    ("pop-empties", [cmd("RPOP", "l", "10")]),
    ("lset", [cmd("RPUSH", "l", "1", "2", "3"), cmd("LSET", "l", "0", "z"), cmd("LSET", "l", "9", "z")]),
    ("linsert", [cmd("LINSERT", "l", "BEFORE", "2", "q"), cmd("LINSERT", "l", "AFTER", "none", "q")]),
    ("lrem", [cmd("LREM", "l", "0", "q"), cmd("LREM", "l", "0", "none")]),
    ("lrem-empties", [cmd("RPUSH", "r", "a", "a"), cmd("LREM", "r", "0", "a")]),
    ("ltrim", [cmd("LTRIM", "l", "0", "-1"), cmd("LTRIM", "l", "1", "-1")]),
    ("ltrim-empties", [cmd("LTRIM", "l", "5", "1"), cmd("LTRIM", "l", "0", "1")]),
    ("lmove-new-dst", [cmd("RPUSH", "s", "1", "2", "3"), cmd("LMOVE", "s", "d", "LEFT", "RIGHT")]),
    ("lmove", [cmd("LMOVE", "s", "d", "RIGHT", "LEFT")]),
    ("lmove-same", [cmd("LMOVE", "s", "s", "LEFT", "RIGHT")]),
    ("lmove-empties", [cmd("LMOVE", "s", "d", "LEFT", "LEFT")]),
    ("lmove-one-same", [cmd("RPUSH", "one", "x"), cmd("LMOVE", "one", "one", "LEFT", "RIGHT")]),
    ("rpoplpush", [cmd("RPOPLPUSH", "d", "e"), cmd("RPOPLPUSH", "nokey", "e")]),
    ("lmove-wrongtype", [cmd("SET", "str", "v"), cmd("LMOVE", "d", "str", "LEFT", "LEFT")]),
    ("lmpop", [cmd("LMPOP", "2", "nokey", "d", "LEFT", "COUNT", "1")]),
    ("lmpop-empties", [cmd("LMPOP", "1", "d", "RIGHT", "COUNT", "10")]),
    ("lmpop-none", [cmd("LMPOP", "1", "d", "RIGHT")]),
    ("reads", [cmd("RPUSH", "l", "a"), cmd("LRANGE", "l", "0", "-1"), cmd("LINDEX", "l", "0"),
               cmd("LLEN", "l"), cmd("LPOS", "l", "a")]),
]


def dirty(conn):
    info = parse(conn.call("INFO", "persistence")).decode()
    for line in info.splitlines():
        if line.startswith("rdb_changes_since_last_save:"):
            return int(line.split(":")[1])
    raise AssertionError(info)


def assert_notifications_match(redis_server, skein_server, sequence):
    """The same notifications, in RESP2 and RESP3, for each step of `sequence`."""
    for proto in (2, 3):
        ref = record(redis_server.port, proto, "KEAn", sequence)
        sk = record(skein_server.port, proto, "KEAn", sequence)
        diffs = compare(ref, sk)
        assert not diffs, "\n".join(diffs)


def assert_dirty_deltas_match(redis_server, skein_server, sequence):
    """The same increase of rdb_changes_since_last_save for each step of `sequence`."""
    conns = [RawConn(redis_server.port), RawConn(skein_server.port)]
    try:
        for c in conns:
            c.call("FLUSHALL")
        for name, actions in sequence:
            deltas = []
            for c in conns:
                before = dirty(c)
                for act in actions:
                    c.call(*act[1:])
                deltas.append(dirty(c) - before)
            assert deltas[0] == deltas[1], (name, deltas)
    finally:
        for c in conns:
            c.call("FLUSHALL")
            c.close()


def test_list_notifications_match_redis(redis_server, skein_server):
    assert_notifications_match(redis_server, skein_server, SEQUENCE)


def test_list_dirty_counts_match_redis(redis_server, skein_server):
    assert_dirty_deltas_match(redis_server, skein_server, SEQUENCE)
