"""What list commands propagate (DEBUG PROPAGATION): LMPOP as LPOP/RPOP key count, the
others as called, nothing for a command that changed nothing; and a generated list
workload's stream replayed into a fresh redis-server 7.0.15 gives the same lists."""
from resp_client import RawConn, parse
from test_lists_generated import KEYS, Gen
from test_propagation import commands


def take(c):
    raw = c.call("DEBUG", "PROPAGATION", "TAKE")
    head, _, rest = raw.partition(b"\r\n")
    return commands(rest[: int(head[1:])])


def assert_propagates(c, steps):
    """Run each step's command; what it propagated (SELECTs aside) must be its list."""
    for args, want in steps:
        c.call(*args)
        got = [cmd for cmd in take(c) if cmd[0].upper() != b"SELECT"]
        assert got == want, (args, got)


def test_list_commands_propagate_as_redis_rewrites_them(fresh_skein):
    skein = fresh_skein()
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    steps = [
        (["RPUSH", "l", "a", "b", "c", "d"], [[b"RPUSH", b"l", b"a", b"b", b"c", b"d"]]),
        (["LMPOP", "2", "nokey", "l", "LEFT", "COUNT", "3"], [[b"LPOP", b"l", b"3"]]),
        (["LMPOP", "1", "l", "RIGHT"], [[b"RPOP", b"l", b"1"]]),
        (["LMPOP", "1", "l", "RIGHT"], []),
        (["LPOP", "nokey"], []),
        (["RPUSH", "l", "x", "y"], [[b"RPUSH", b"l", b"x", b"y"]]),
        (["LPOP", "l", "0"], []),
        (["LPOP", "l", "1"], [[b"LPOP", b"l", b"1"]]),
        (["LMOVE", "l", "m", "LEFT", "RIGHT"], [[b"LMOVE", b"l", b"m", b"LEFT", b"RIGHT"]]),
        (["RPOPLPUSH", "l", "m"], []),
        (["LINSERT", "m", "BEFORE", "none", "z"], []),
        (["LREM", "m", "0", "none"], []),
        (["LSET", "m", "5", "z"], []),
        (["LPUSHX", "nokey", "z"], []),
        (["LTRIM", "nokey", "0", "1"], []),
        # Redis propagates when the dirty counter moved: a trim removing nothing does not.
        (["LTRIM", "m", "0", "-1"], []),
        (["RPUSH", "m", "p"], [[b"RPUSH", b"m", b"p"]]),
        (["LTRIM", "m", "1", "-1"], [[b"LTRIM", b"m", b"1", b"-1"]]),
    ]
    assert_propagates(c, steps)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"


def test_generated_list_stream_replays_to_same_lists(fresh_skein, fresh_redis):
    skein, ref = fresh_skein(workers=2), fresh_redis()
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    for seed in range(6):
        for op in Gen(100 + seed).sequence(300):
            if op.args[0].upper() != b"CONFIG":
                c.call(*op.args)
    cmds = take(c)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    assert len(cmds) > 500
    feed = RawConn(ref.port)
    for cmd in cmds:
        reply = feed.call(*cmd)
        assert not reply.startswith(b"-"), (cmd, reply)
    for key in KEYS:
        assert parse(feed.call("LRANGE", key, 0, -1)) == parse(c.call("LRANGE", key, 0, -1))
        assert feed.call("TYPE", key) == c.call("TYPE", key)
