"""Stream commands' keyspace notifications, dirty counts and propagated forms. Events and
dirty counts are differential (redis-server 7.0.15 and skein-server, a subscriber on every
keyspace/keyevent channel, `new` included); propagation is checked against the rewrites
Redis makes (XADD's generated ID written in, `~` trims written as the `=` trim they
turned out to be)."""
from resp_client import RawConn
from test_lists_events import assert_dirty_deltas_match, assert_notifications_match
from test_lists_propagation import take
from test_notifications import cmd

SEQUENCE = [
    ("xadd-new", [cmd("XADD", "s", "1-0", "a", "1")]),
    ("xadd", [cmd("XADD", "s", "2-0", "a", "2"), cmd("XADD", "s", "3-*", "a", "3")]),
    ("xadd-fails", [cmd("XADD", "s", "1-0", "a", "1"), cmd("XADD", "nokey", "NOMKSTREAM", "1-0", "a", "1"),
                    cmd("XADD", "s", "0-0", "a", "b")]),
    ("xadd-trims", [cmd("XADD", "s", "MAXLEN", "2", "4-0", "a", "4")]),
    ("xadd-trims-nothing", [cmd("XADD", "s", "MAXLEN", "10", "5-0", "a", "5")]),
    ("xadd-new-trimmed", [cmd("XADD", "t", "MAXLEN", "0", "1-0", "a", "5")]),
    ("xdel", [cmd("XDEL", "s", "4-0", "5-0", "9-0")]),
    ("xdel-none", [cmd("XDEL", "s", "9-0"), cmd("XDEL", "nokey", "1-0")]),
    ("xtrim", [cmd("XADD", "s", "6-0", "a", "6"), cmd("XADD", "s", "7-0", "a", "7"),
               cmd("XTRIM", "s", "MAXLEN", "1")]),
    ("xtrim-none", [cmd("XTRIM", "s", "MAXLEN", "5"), cmd("XTRIM", "nokey", "MAXLEN", "1")]),
    ("xsetid", [cmd("XSETID", "s", "100-0"), cmd("XSETID", "s", "1-0"), cmd("XSETID", "nokey", "1-0")]),
    ("xgroup-mkstream", [cmd("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
                         cmd("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM")]),
    ("xgroup", [cmd("XGROUP", "CREATE", "s", "g", "0"), cmd("XGROUP", "SETID", "s", "g", "0"),
                cmd("XGROUP", "CREATECONSUMER", "s", "g", "c"),
                cmd("XGROUP", "CREATECONSUMER", "s", "g", "c"),
                cmd("XGROUP", "DELCONSUMER", "s", "g", "c"), cmd("XGROUP", "DELCONSUMER", "s", "g", "c")]),
    ("xreadgroup", [cmd("XADD", "s", "200-0", "a", "1"),
                    cmd("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"),
                    cmd("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"),
                    cmd("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"),
                    cmd("XREADGROUP", "GROUP", "g", "carol", "NOACK", "STREAMS", "s", "0")]),
    ("xack-claims", [cmd("XACK", "s", "g", "200-0", "1-0"),
                     cmd("XCLAIM", "s", "g", "dave", "0", "200-0", "FORCE", "JUSTID"),
                     cmd("XCLAIM", "s", "g", "dave", "0", "200-0", "LASTID", "300-0"),
                     cmd("XAUTOCLAIM", "s", "g", "erin", "0", "0"),
                     cmd("XAUTOCLAIM", "s", "g", "erin", "0", "0", "JUSTID")]),
    ("xgroup-destroy", [cmd("XGROUP", "DESTROY", "s", "g"), cmd("XGROUP", "DESTROY", "s", "g")]),
    ("reads", [cmd("XRANGE", "s", "-", "+"), cmd("XREVRANGE", "s", "+", "-"), cmd("XLEN", "s"),
               cmd("XREAD", "STREAMS", "s", "nokey", "0", "0"), cmd("XINFO", "STREAM", "s"),
               cmd("XPENDING", "s", "g"), cmd("XINFO", "GROUPS", "m")]),
]


def test_stream_notifications_match_redis(redis_server, skein_server):
    assert_notifications_match(redis_server, skein_server, SEQUENCE)


def test_stream_dirty_counts_match_redis(redis_server, skein_server):
    assert_dirty_deltas_match(redis_server, skein_server, SEQUENCE)


def test_stream_commands_propagate_as_redis_rewrites_them(fresh_skein):
    skein = fresh_skein(["--stream-node-max-entries", "2"])
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    steps = [
        (["XADD", "s", "1-1", "a", "1"], [[b"XADD", b"s", b"1-1", b"a", b"1"]]),
        (["XADD", "s", "1-*", "a", "2"], [[b"XADD", b"s", b"1-2", b"a", b"2"]]),
        (["XADD", "s", "5-*", "a", "3"], [[b"XADD", b"s", b"5-0", b"a", b"3"]]),
        (["XADD", "s", "1-1", "a", "1"], []),
        (["XADD", "s", "NOMKSTREAM", "MAXLEN", "~", "1", "6-0", "a", "4"],
         [[b"XADD", b"s", b"NOMKSTREAM", b"MAXLEN", b"=", b"2", b"6-0", b"a", b"4"]]),
        (["XADD", "s", "MINID", "~", "1", "LIMIT", "5", "7-0", "a", "5"],
         [[b"XADD", b"s", b"MINID", b"=", b"5-0", b"LIMIT", b"5", b"7-0", b"a", b"5"]]),
        (["XADD", "s", "MAXLEN", "2", "8-*", "a", "6"],
         [[b"XADD", b"s", b"MAXLEN", b"2", b"8-0", b"a", b"6"]]),
        (["XTRIM", "s", "MAXLEN", "~", "0"], [[b"XTRIM", b"s", b"MAXLEN", b"=", b"0"]]),
        (["XTRIM", "s", "MAXLEN", "~", "0"], []),
        (["XADD", "s", "9-0", "a", "7"], [[b"XADD", b"s", b"9-0", b"a", b"7"]]),
        (["XADD", "s", "10-0", "a", "8"], [[b"XADD", b"s", b"10-0", b"a", b"8"]]),
        (["XTRIM", "s", "MINID", "10"], [[b"XTRIM", b"s", b"MINID", b"10"]]),
        (["XDEL", "s", "10-0", "11-0"], [[b"XDEL", b"s", b"10-0", b"11-0"]]),
        (["XDEL", "s", "11-0"], []),
        (["XSETID", "s", "20-0"], [[b"XSETID", b"s", b"20-0"]]),
        (["XREAD", "STREAMS", "s", "0"], []),
    ]
    for args, want in steps:
        c.call(*args)
        got = [x for x in take(c) if x[0].upper() != b"SELECT"]
        assert got == want, (args, got)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
