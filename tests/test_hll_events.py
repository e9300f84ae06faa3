"""HyperLogLog side effects against redis-server 7.0.15: keyspace notifications (`new`
then `pfadd` for PFADD creating a key, `pfadd` for PFMERGE, nothing for PFCOUNT's cache
rewrite or PFDEBUG's conversions), WATCH (PFCOUNT rewriting the cached cardinality
touches the key, PFDEBUG TODENSE does not), and the propagation stream (Skein's DEBUG
PROPAGATION): each command as called when it changed something (PFCOUNT when it rewrote
the cache, PFDEBUG when it converted), nothing otherwise, and the stream replayed into
redis-server gives the same bytes. test_counters.py compares the dirty counter on this
module's SEQUENCE."""
from resp_client import RawConn, _parse, parse
from test_notifications import cmd, compare, record

SEQUENCE = [
    ("pfadd-new", [cmd("PFADD", "h", "a", "b", "c")]),
    ("pfadd-more", [cmd("PFADD", "h", "c", "d", "e", "f")]),
    ("pfadd-nothing", [cmd("PFADD", "h", "a"), cmd("PFADD", "h")]),
    ("pfadd-empty-new", [cmd("PFADD", "e")]),
    ("pfadd-wrongtype", [cmd("SET", "str", "v"), cmd("PFADD", "str", "a")]),
    ("pfcount-cache", [cmd("PFCOUNT", "h"), cmd("PFCOUNT", "h")]),
    ("pfcount-missing", [cmd("PFCOUNT", "nokey"), cmd("PFCOUNT", "nokey", "h")]),
    ("pfcount-many", [cmd("PFADD", "h2", "x", "y"), cmd("PFCOUNT", "h", "h2"),
                      cmd("GET", "h2")]),
    ("pfmerge-new", [cmd("PFMERGE", "m", "h", "h2")]),
    ("pfmerge-existing", [cmd("PFMERGE", "m", "h"), cmd("PFMERGE", "m")]),
    ("pfmerge-missing-only", [cmd("PFMERGE", "m2", "nokey")]),
    ("pfmerge-wrongtype", [cmd("PFMERGE", "m3", "str")]),
    ("pfadd-many", [cmd("PFADD", "big", *("e%d" % i for i in range(1500)))]),
    ("pfdebug-encoding", [cmd("PFDEBUG", "ENCODING", "big"), cmd("PFDEBUG", "ENCODING", "h")]),
    ("pfdebug-todense", [cmd("PFDEBUG", "TODENSE", "h"), cmd("PFDEBUG", "TODENSE", "h")]),
    ("pfdebug-getreg", [cmd("PFADD", "g", "a"), cmd("PFDEBUG", "GETREG", "g"),
                        cmd("PFDEBUG", "GETREG", "g")]),
    ("pfdebug-decode", [cmd("PFADD", "d", "a"), cmd("PFDEBUG", "DECODE", "d")]),
    ("pfdebug-missing", [cmd("PFDEBUG", "GETREG", "nokey")]),
    ("corrupt", [cmd("SET", "c", b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\x00"),
                 cmd("PFCOUNT", "c"), cmd("PFADD", "c", "a", "b"), cmd("PFMERGE", "c2", "c")]),
]


def test_hll_notifications(redis_server, skein_server):
    for flags in ("KEA", "KEAn", "E$", "Km", "Kg"):
        ref = record(redis_server.port, 2, flags, SEQUENCE)
        sk = record(skein_server.port, 2, flags, SEQUENCE)
        diffs = compare(ref, sk)
        assert not diffs, "\n".join(diffs)


def watch_then(port, setup, touch):
    """EXEC's reply after WATCH h, `touch` from another connection, MULTI, PING."""
    a, b = RawConn(port), RawConn(port)
    try:
        a.call("FLUSHALL")
        for args in setup:
            a.call(*args)
        a.call("WATCH", "h")
        b.call(*touch)
        a.call("MULTI")
        a.call("PING")
        return a.call("EXEC")
    finally:
        a.close()
        b.close()


def test_hll_watch(redis_server, skein_server):
    cases = [
        ([("PFADD", "h", "a")], ("PFCOUNT", "h")),           # cache rewritten: touched
        ([("PFADD", "h", "a"), ("PFCOUNT", "h")], ("PFCOUNT", "h")),   # cached: untouched
        ([("PFADD", "h", "a")], ("PFCOUNT", "h", "h")),      # several keys: untouched
        ([("PFADD", "h", "a")], ("PFADD", "h", "a")),        # no change
        ([("PFADD", "h", "a")], ("PFADD", "h", "b")),
        ([("PFADD", "h", "a")], ("PFMERGE", "h")),
        ([("PFADD", "h", "a")], ("PFDEBUG", "TODENSE", "h")),  # no signal in Redis
        ([("PFADD", "h", "a")], ("PFDEBUG", "GETREG", "h")),
    ]
    for setup, touch in cases:
        ref = watch_then(redis_server.port, setup, touch)
        sk = watch_then(skein_server.port, setup, touch)
        assert ref == sk, "%r then %r: redis %r, skein %r" % (setup, touch, ref, sk)


def take(conn):
    stream = parse(conn.call("DEBUG", "PROPAGATION", "TAKE"))
    out, pos = [], 0
    while pos < len(stream):
        c, pos = _parse(stream, pos)
        out.append(c)
    return stream, [x for x in out if x[0].upper() != b"SELECT"]


def test_hll_propagation(fresh_skein, fresh_redis):
    sk, ref = fresh_skein(), fresh_redis()
    c = RawConn(sk.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    streams = []

    def step(*args):
        c.call(*args)
        stream, cmds = take(c)
        streams.append(stream)
        return cmds

    as_called = lambda *args: [[a.encode() for a in args]]  # noqa: E731
    assert step("PFADD", "h", "a", "b") == as_called("PFADD", "h", "a", "b")
    assert step("PFADD", "h", "a") == []
    assert step("PFCOUNT", "h") == as_called("PFCOUNT", "h")
    assert step("PFCOUNT", "h") == []
    assert step("PFCOUNT", "h", "nokey") == []
    assert step("PFMERGE", "m", "h") == as_called("PFMERGE", "m", "h")
    assert step("PFMERGE", "m") == as_called("PFMERGE", "m")
    assert step("PFDEBUG", "ENCODING", "m") == []
    assert step("PFDEBUG", "TODENSE", "m") == as_called("PFDEBUG", "TODENSE", "m")
    assert step("PFDEBUG", "TODENSE", "m") == []
    assert step("PFADD", "g", "x") == as_called("PFADD", "g", "x")
    assert step("PFDEBUG", "GETREG", "g") == as_called("PFDEBUG", "GETREG", "g")
    assert step("PFADD", "big", *("e%d" % i for i in range(2000)))[0][:2] == [b"PFADD", b"big"]
    assert step("PFCOUNT", "big") == as_called("PFCOUNT", "big")
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    # The stream replayed into Redis gives the same bytes.
    feed = RawConn(ref.port)
    stream = b"".join(streams)
    feed.send_raw(stream)
    n, pos = 0, 0
    while pos < len(stream):
        _, pos = _parse(stream, pos)
        n += 1
    replies = [feed.read_reply() for _ in range(n)]
    assert not [r for r in replies if r.startswith(b"-")], replies
    for key in ("h", "m", "g", "big"):
        assert feed.call("GET", key) == c.call("GET", key), key
    c.close()
    feed.close()


def test_pfselftest(skein_server):
    # 10,000,000 elements: seconds in a debug build.
    c = RawConn(skein_server.port, timeout=120)
    try:
        assert c.call("PFSELFTEST") == b"+OK\r\n"
    finally:
        c.close()
