"""Consumer groups against redis-server 7.0.15 where replies carry times (XPENDING's idle
times, XINFO CONSUMERS' idle, XINFO STREAM FULL's delivery and seen times: compared with
those numbers masked), the radix tree figures of XINFO STREAM on streams of many nodes,
and the propagated forms of the group commands (XREADGROUP as XCLAIM / XGROUP SETID /
XGROUP CREATECONSUMER), checked by replaying Skein's stream into a fresh Redis."""
import random
import re

from resp_client import RawConn
from test_lists_propagation import take

TIMESTAMP = re.compile(rb":\d{13}\r\n")
IDLE = re.compile(rb"(\$4\r\nidle\r\n):\d+\r\n")
PENDING_ROW = re.compile(rb"(\*4\r\n\$\d+\r\n\d+-\d+\r\n\$\d+\r\n[^\r]*\r\n):\d+\r\n")


def masked(raw):
    raw = TIMESTAMP.sub(b":T\r\n", raw)
    raw = IDLE.sub(rb"\1:I\r\n", raw)
    return PENDING_ROW.sub(rb"\1:I\r\n", raw)


SEQUENCE = [
    ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
    ("XADD", "s", "1-0", "a", "1"),
    ("XADD", "s", "2-0", "a", "2", "b", "x"),
    ("XADD", "s", "3-0", "a", "3"),
    ("XADD", "s", "4-0", "a", "4"),
    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"),
    ("XPENDING", "s", "g", "-", "+", "10"),
    ("XPENDING", "s", "g", "-", "+", "10", "alice"),
    ("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10"),
    ("XPENDING", "s", "g", "IDLE", "100000", "-", "+", "10"),
    ("XPENDING", "s", "g", "(1-0", "(4-0", "1"),
    ("XINFO", "CONSUMERS", "s", "g"),
    ("XINFO", "STREAM", "s", "FULL"),
    ("XINFO", "STREAM", "s", "FULL", "COUNT", "1"),
    ("XINFO", "STREAM", "s", "FULL", "COUNT", "0"),
    ("XCLAIM", "s", "g", "carol", "0", "1-0", "TIME", "1000000000000"),
    ("XCLAIM", "s", "g", "carol", "0", "2-0", "FORCE", "RETRYCOUNT", "9"),
    ("XPENDING", "s", "g", "-", "+", "10"),
    ("XINFO", "STREAM", "s", "FULL"),
    ("XDEL", "s", "2-0"),
    ("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0"),
    ("XINFO", "STREAM", "s", "FULL"),
    ("XGROUP", "CREATE", "s", "h", "0"),
    ("XREADGROUP", "GROUP", "h", "dan", "NOACK", "STREAMS", "s", ">"),
    ("XINFO", "STREAM", "s", "FULL"),
    ("XINFO", "CONSUMERS", "s", "h"),
]


def run(port, proto, seq):
    c = RawConn(port)
    try:
        c.call("FLUSHALL")
        if proto == 3:
            c.call("HELLO", "3")
        return [masked(c.call(*cmd)) for cmd in seq]
    finally:
        c.close()


def test_timed_replies_match_redis_masked(redis_server, skein_server):
    for proto in (2, 3):
        ref = run(redis_server.port, proto, SEQUENCE)
        sk = run(skein_server.port, proto, SEQUENCE)
        for cmd, a, b in zip(SEQUENCE, ref, sk):
            assert a == b, (proto, cmd, a, b)


def build(rng, n):
    """Commands that build a stream of many nodes with IDs of varied shapes."""
    cmds = [("CONFIG", "SET", "stream-node-max-entries", str(rng.choice([1, 2, 3, 5, 100])))]
    ms = rng.choice([0, 1, 255, 65535, 1700000000000])
    for i in range(n):
        step = rng.choice([0, 1, 1, 2, 255, 256, 70000, 1 << 33])
        ms += step
        seq = rng.choice([0, 0, 1, 7, 300]) if step else i + 1000
        cmds.append(("XADD", "s", "%d-%d" % (ms, seq), "f", str(i)))
    for _ in range(n // 4):
        cmds.append(("XDEL", "s", cmds[rng.randrange(1, n + 1)][2]))
    cmds.append(("XTRIM", "s", "MAXLEN", "~", str(n // 2)))
    return cmds


def test_xinfo_radix_tree_figures_match_redis(redis_server, skein_server):
    rng = random.Random(7)
    conns = [RawConn(redis_server.port), RawConn(skein_server.port)]
    try:
        for trial in range(30):
            cmds = build(rng, rng.randrange(1, 120))
            out = []
            for c in conns:
                c.call("FLUSHALL")
                c.pipeline(cmds)
                out.append((c.call("XINFO", "STREAM", "s"), c.call("DUMP", "s")))
            assert out[0] == out[1], (trial, out)
    finally:
        for c in conns:
            c.call("CONFIG", "SET", "stream-node-max-entries", "100")
            c.close()


def test_group_commands_propagate_as_redis(fresh_skein, fresh_redis):
    skein, ref = fresh_skein(), fresh_redis()
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    for cmd in SEQUENCE + [
        ("XACK", "s", "g", "3-0", "9-0"),
        ("XAUTOCLAIM", "s", "g", "erin", "0", "0", "COUNT", "2"),
        ("XCLAIM", "s", "g", "erin", "0", "9-0", "LASTID", "20-0"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "fay"),
        ("XGROUP", "DELCONSUMER", "s", "g", "bob"),
        ("XREADGROUP", "GROUP", "h", "gus", "NOACK", "STREAMS", "s", "0"),
        ("XGROUP", "SETID", "s", "h", "0", "ENTRIESREAD", "0"),
        ("XADD", "s", "5-0", "a", "5"),
        ("XREADGROUP", "GROUP", "h", "hal", "NOACK", "STREAMS", "s", ">"),
        ("XGROUP", "DESTROY", "s", "h"),
    ]:
        c.call(*cmd)
    cmds = take(c)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    names = [x[0].upper() for x in cmds]
    assert b"XREADGROUP" not in names and b"XAUTOCLAIM" not in names, names
    feed = RawConn(ref.port)
    for cmd in cmds:
        reply = feed.call(*cmd)
        assert not reply.startswith(b"-"), (cmd, reply)
    for probe in [("XINFO", "STREAM", "s", "FULL"), ("XPENDING", "s", "g", "-", "+", "100"),
                  ("XINFO", "GROUPS", "s"), ("XRANGE", "s", "-", "+")]:
        assert masked(feed.call(*probe)) == masked(c.call(*probe)), probe


WATCH_CASES = [
    ("createconsumer", "s", ("XGROUP", "CREATECONSUMER", "s", "g", "c1")),
    ("readgroup history", "s", ("XREADGROUP", "GROUP", "g", "c2", "COUNT", "0", "STREAMS", "s", "0")),
    ("readgroup new", "s", ("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", ">")),
    ("xclaim new consumer", "s", ("XCLAIM", "s", "g", "c4", "0", "0-1")),
    ("xautoclaim new consumer", "s", ("XAUTOCLAIM", "s", "g", "c5", "0", "0")),
    ("delconsumer", "s", ("XGROUP", "DELCONSUMER", "s", "g", "c2")),
    ("setid", "s", ("XGROUP", "SETID", "s", "g", "0")),
    ("create", "s", ("XGROUP", "CREATE", "s", "g2", "0")),
    ("destroy", "s", ("XGROUP", "DESTROY", "s", "g2")),
    ("create mkstream", "s2", ("XGROUP", "CREATE", "s2", "g", "0", "MKSTREAM")),
    ("xack", "s", ("XACK", "s", "g", "1-0")),
    ("xadd", "s", ("XADD", "s", "*", "a", "2")),
]


def watch_outcomes(port):
    """For each case: does an EXEC watching the key abort after another client ran it?"""
    w, o = RawConn(port), RawConn(port)
    o.call("FLUSHALL")
    o.call("XADD", "s", "1-0", "a", "1")
    o.call("XGROUP", "CREATE", "s", "g", "0")
    out = []
    for name, key, cmd in WATCH_CASES:
        w.call("WATCH", key)
        o.call(*cmd)
        w.call("MULTI")
        w.call("PING")
        out.append((name, w.call("EXEC")))
    w.close()
    o.close()
    return out


def test_group_bookkeeping_leaves_watch_alone_as_redis(fresh_skein, fresh_redis):
    """XGROUP and consumers created on the way do not signal the key (Redis's
    streamCreateConsumer and xgroupCommand); MKSTREAM creating the key and XADD do."""
    skein, ref = fresh_skein(), fresh_redis()
    got, want = watch_outcomes(skein.port), watch_outcomes(ref.port)
    assert got == want
    assert dict(want)["create mkstream"].startswith(b"*-1")
    assert dict(want)["createconsumer"].startswith(b"*1")
