"""Set commands' side effects: keyspace notifications compared with redis-server 7.0.15
(the same events in the same order, e.g. srem then del, new then sadd, spop then del), and
the propagation stream (Skein's DEBUG PROPAGATION): SPOP as SREM, SPOP with a count as
SREMs of at most 1024 members or as DEL/UNLINK when the whole set goes, a no-op not
propagated; the stream replayed into redis-server gives the same sets."""
from resp_client import RawConn, _parse, parse
from test_notifications import cmd, compare, record

SEQUENCE = [
    ("sadd-new", [cmd("SADD", "s", "1", "2", "3")]),
    ("sadd-more", [cmd("SADD", "s", "3", "4", "x")]),
    ("sadd-nothing", [cmd("SADD", "s", "1")]),
    ("sadd-wrongtype", [cmd("SET", "str", "v"), cmd("SADD", "str", "a")]),
    ("srem", [cmd("SREM", "s", "1", "nope")]),
    ("srem-nothing", [cmd("SREM", "s", "nope"), cmd("SREM", "nokey", "a")]),
    ("srem-last", [cmd("SADD", "one", "a"), cmd("SREM", "one", "a", "b")]),
    ("smove", [cmd("SADD", "src", "a", "b"), cmd("SMOVE", "src", "dst", "a")]),
    ("smove-existing-dst", [cmd("SADD", "dst", "z"), cmd("SMOVE", "src", "dst", "b")]),
    ("smove-already-there", [cmd("SADD", "src", "z", "y"), cmd("SMOVE", "src", "dst", "z")]),
    ("smove-nothing", [cmd("SMOVE", "src", "dst", "nope"), cmd("SMOVE", "dst", "dst", "z")]),
    ("spop-last", [cmd("SADD", "p", "only"), cmd("SPOP", "p")]),
    ("spop-count-all", [cmd("SADD", "p", "1", "2", "3"), cmd("SPOP", "p", "5")]),
    ("spop-count-zero", [cmd("SADD", "p", "1"), cmd("SPOP", "p", "0")]),
    ("spop-missing", [cmd("SPOP", "nokey"), cmd("SPOP", "nokey", "3")]),
    ("sinterstore", [cmd("SADD", "a", "1", "2", "3"), cmd("SADD", "b", "2", "3", "4"),
                     cmd("SINTERSTORE", "i", "a", "b")]),
    ("sinterstore-overwrite", [cmd("SINTERSTORE", "i", "a", "b")]),
    ("sinterstore-empty", [cmd("SINTERSTORE", "i", "a", "nokey"),
                           cmd("SINTERSTORE", "i", "a", "nokey")]),
    ("sunionstore", [cmd("SUNIONSTORE", "u", "a", "b"), cmd("SUNIONSTORE", "u", "a")]),
    ("sunionstore-on-string", [cmd("SET", "ustr", "v", "EX", "100"),
                               cmd("SUNIONSTORE", "ustr", "a"), cmd("TTL", "ustr")]),
    ("sdiffstore", [cmd("SDIFFSTORE", "d", "a", "b"), cmd("SDIFFSTORE", "d", "a", "a")]),
    ("reads", [cmd("SCARD", "a"), cmd("SISMEMBER", "a", "1"), cmd("SMEMBERS", "nokey"),
               cmd("SINTERCARD", "2", "a", "b"), cmd("SSCAN", "a", "0")]),
]


def test_set_notifications(redis_server, skein_server):
    for flags in ("KEA", "KEAn", "Es$g", "Km"):
        ref = record(redis_server.port, 2, flags, SEQUENCE)
        sk = record(skein_server.port, 2, flags, SEQUENCE)
        diffs = compare(ref, sk)
        assert not diffs, "\n".join(diffs)


def take(conn):
    raw = conn.call("DEBUG", "PROPAGATION", "TAKE")
    stream = parse(raw)
    out, pos = [], 0
    while pos < len(stream):
        c, pos = _parse(stream, pos)
        out.append(c)
    return stream, out


def test_set_propagation(fresh_skein, fresh_redis):
    sk = fresh_skein()
    ref = fresh_redis()
    c = RawConn(sk.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    streams = []

    def step(*args):
        reply = c.call(*args)
        stream, cmds = take(c)
        streams.append(stream)
        return reply, [x for x in cmds if x[0].upper() != b"SELECT"]

    _, cmds = step("SADD", "s", *range(10))
    assert cmds == [[b"SADD", b"s"] + [b"%d" % i for i in range(10)]]
    assert step("SADD", "s", "1")[1] == []
    assert step("SREM", "s", "nope")[1] == []
    reply, cmds = step("SPOP", "s")
    assert cmds == [[b"SREM", b"s", parse(reply)]]
    reply, cmds = step("SPOP", "s", "3")
    popped = parse(reply)
    assert cmds == [[b"MULTI"], [b"SREM", b"s"] + popped, [b"EXEC"]] or \
        cmds == [[b"SREM", b"s"] + popped]
    reply, cmds = step("SPOP", "s", "100")
    assert cmds == [[b"DEL", b"s"]] and len(parse(reply)) == 6
    assert step("SPOP", "s", "1")[1] == []
    # Big counts: batches of 1024 members.
    step("SADD", "big", *("m%d" % i for i in range(5000)))
    reply, cmds = step("SPOP", "big", "2500")
    popped = parse(reply)
    srems = [x for x in cmds if x[0] == b"SREM"]
    assert [len(x) - 2 for x in srems] == [1024, 1024, 452]
    assert sorted(m for x in srems for m in x[2:]) == sorted(popped)
    assert cmds[0] == [b"MULTI"] and cmds[-1] == [b"EXEC"]
    reply, cmds = step("SPOP", "big", "2400")   # the remaining-set strategy
    srems = [x for x in cmds if x[0] == b"SREM"]
    assert sum(len(x) - 2 for x in srems) == 2400 == len(parse(reply))
    assert c.call("CONFIG", "SET", "lazyfree-lazy-server-del", "yes") == b"+OK\r\n"
    _, cmds = step("SPOP", "big", "1000")
    assert cmds == [[b"UNLINK", b"big"]]
    assert c.call("CONFIG", "SET", "lazyfree-lazy-server-del", "no") == b"+OK\r\n"
    # The others propagate as called when they change something.
    step("SADD", "a", "1", "2", "x")
    step("SADD", "b", "2", "x", "y")
    assert step("SMOVE", "a", "b", "1")[1] == [[b"SMOVE", b"a", b"b", b"1"]]
    assert step("SMOVE", "a", "b", "nope")[1] == []
    assert step("SINTERSTORE", "i", "a", "b")[1] == [[b"SINTERSTORE", b"i", b"a", b"b"]]
    assert step("SUNIONSTORE", "u", "a", "b")[1] == [[b"SUNIONSTORE", b"u", b"a", b"b"]]
    assert step("SDIFFSTORE", "none", "a", "a")[1] == []
    assert step("SDIFFSTORE", "u", "a", "a")[1] == [[b"SDIFFSTORE", b"u", b"a", b"a"]]
    assert step("SINTERCARD", "2", "a", "b")[1] == []
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    # The stream replayed into Redis gives the same sets.
    feed = RawConn(ref.port)
    stream = b"".join(streams)
    feed.send_raw(stream)
    n = 0
    pos = 0
    while pos < len(stream):
        _, pos = _parse(stream, pos)
        n += 1
    replies = [feed.read_reply() for _ in range(n)]
    assert not [r for r in replies if r.startswith(b"-")]
    for key in ("s", "big", "a", "b", "i", "u", "none"):
        assert feed.call("TYPE", key) == c.call("TYPE", key)
        if c.call("TYPE", key) == b"+set\r\n":
            assert sorted(parse(feed.call("SMEMBERS", key))) == \
                sorted(parse(c.call("SMEMBERS", key)))
    c.close()
    feed.close()


def changes(conn):
    """rdb_changes_since_last_save (None inside MULTI, where INFO is queued)."""
    info = parse(conn.call("INFO", "persistence"))
    if not isinstance(info, bytes):
        return None
    for line in info.decode().split("\r\n"):
        if line.startswith("rdb_changes_since_last_save:"):
            return int(line.split(":")[1])
    return None


def test_dirty_counts_match_redis(redis_server, skein_server):
    """Each command of the set scripts adds what Redis adds to the dirty counter (e.g. SREM
    the members removed, not one more for the emptied key's deletion)."""
    import glob
    import os
    from difftool import split_line
    conns = [RawConn(redis_server.port), RawConn(skein_server.port)]
    here = os.path.dirname(__file__)
    diffs = []
    try:
        for path in sorted(glob.glob(os.path.join(here, "scripts", "sets_*.txt"))):
            for c in conns:
                c.call("FLUSHALL")
            for line in open(path).read().splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("@"):
                    line = line.split(None, 1)[1]
                args = split_line(line)
                delta = []
                for c in conns:
                    before = changes(c)
                    c.call(*args)
                    after = changes(c)
                    delta.append(None if None in (before, after) else after - before)
                if delta[0] != delta[1]:
                    diffs.append("%s: %s redis %r skein %r" % (
                        os.path.basename(path), line[:60], delta[0], delta[1]))
    finally:
        for c in conns:
            c.call("CONFIG", "SET", "set-max-intset-entries", "512")
            c.call("FLUSHALL")
            c.close()
    assert not diffs, "\n".join(diffs)
