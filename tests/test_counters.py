"""Server counters, differential: how much INFO stats keyspace_hits, keyspace_misses,
expired_keys and INFO persistence rdb_changes_since_last_save move for each step of a
command sequence must be the same on redis-server 7.0.15 and on skein-server (deltas are
compared, not absolute values). The sequence is the one test_notifications.py replays
(string, bitmap and generic key commands, lazy and active expiry, MULTI/EXEC, SWAPDB,
FLUSHDB/FLUSHALL) followed by hit/miss cases of every read, and test_zsets_events.py's
sorted-set sequence; no subscriber is involved.

The active expiry cycle is off except where a step waits for it, so no count depends on
when it runs. The servers are the module's own (no RDB saves: rdb_changes_since_last_save
only grows, except where a step says otherwise).
"""
import pytest

from resp_client import RawConn, parse
from test_notifications import SEQUENCE, cmd, run_actions

FIELDS = [b"keyspace_hits", b"keyspace_misses", b"expired_keys",
          b"rdb_changes_since_last_save"]

EXTRA = [
    ("setup-hits", [cmd("FLUSHALL"), cmd("SET", "h", "hello"), cmd("SET", "n", "5"),
                    cmd("SET", "t", "v", "EXAT", "99999999999")]),
] + [("hit-or-miss " + " ".join(c), [cmd(*c)]) for c in [
    ("GET", "h"), ("GET", "nokey"), ("MGET", "h", "n", "nokey"), ("EXISTS", "h", "nokey", "h"),
    ("TYPE", "h"), ("TTL", "h"), ("PTTL", "nokey"), ("EXPIRETIME", "t"), ("STRLEN", "h"),
    ("GETRANGE", "h", "0", "1"), ("SUBSTR", "nokey", "0", "1"), ("GETBIT", "h", "3"),
    ("BITCOUNT", "h"), ("BITPOS", "h", "1"), ("BITFIELD_RO", "h", "GET", "u8", "0"),
    ("BITFIELD", "h", "GET", "u8", "0"), ("LCS", "h", "n"), ("DUMP", "h"), ("DUMP", "nokey"),
    ("OBJECT", "ENCODING", "h"), ("OBJECT", "ENCODING", "nokey"), ("TOUCH", "h", "nokey"),
    ("COPY", "h", "h2"), ("COPY", "nokey", "h3"), ("KEYS", "t*"), ("DBSIZE",),
    ("SET", "h", "x", "GET"), ("SET", "nokey", "x", "NX", "GET"), ("DEL", "nokey"),
    ("GETSET", "h", "y"), ("GETDEL", "h2"), ("GETDEL", "h2"), ("GETEX", "t"),
    ("GETEX", "nokey", "EX", "5"), ("INCR", "n"), ("APPEND", "h", "z"), ("SETRANGE", "h", "0", "q"),
    ("SETBIT", "h", "0", "1"), ("BITOP", "AND", "d", "h", "n", "nokey2"),
    ("RENAME", "d", "d2"), ("RENAMENX", "d2", "h"), ("MOVE", "d2", "1"),
    ("EXPIRE", "n", "100"), ("PERSIST", "n"), ("PERSIST", "n"), ("MSET", "a", "1", "b", "2"),
    ("MSETNX", "a", "1", "c", "2"), ("UNLINK", "a", "b", "nokey"), ("SETNX", "a", "1"),
    ("INCRBYFLOAT", "a", "1.5"), ("SETEX", "s", "100", "v"), ("PSETEX", "s", "100000", "v"),
    ("SET", "s", "v", "XX"), ("SET", "nokey", "v", "XX"), ("EXPIRE", "s", "-1"),
    ("SELECT", "0"), ("PING",), ("ECHO", "x"), ("FLUSHDB",), ("FLUSHDB",),
]] + [
    ("lazy-expire-write", [cmd("SET", "lx", "1", "PX", "20"), ("sleep", 60),
                           cmd("INCR", "lx")]),
    ("lazy-expire-del", [cmd("SET", "lx2", "1", "PX", "20"), ("sleep", 60),
                         cmd("DEL", "lx2")]),
    ("lazy-expire-exists", [cmd("SET", "lx3", "1", "PX", "20"), ("sleep", 60),
                            cmd("EXISTS", "lx3")]),
    ("multi-reads", [cmd("SET", "m", "1"), cmd("MULTI"), cmd("GET", "m"), cmd("GET", "nokey"),
                     cmd("INCR", "m"), cmd("EXEC")]),
    ("multi-empty", [cmd("MULTI"), cmd("EXEC")]),
    ("multi-discarded", [cmd("MULTI"), cmd("SET", "m", "9"), cmd("DISCARD")]),
    ("multi-watch-failed", [cmd("WATCH", "m"), cmd("SET", "m", "2"), cmd("MULTI"),
                            cmd("SET", "m", "3"), cmd("EXEC")]),
    ("flushall-keys", [cmd("MSET", "x1", "1", "x2", "2"), cmd("FLUSHALL")]),
    ("flushall-empty", [cmd("FLUSHALL")]),
    ("swapdb", [cmd("SET", "sw", "1"), cmd("SWAPDB", "0", "1"), cmd("SWAPDB", "0", "1")]),
]


def counters(conn):
    out = {}
    for section in ("stats", "persistence"):
        text = parse(conn.call("INFO", section))
        for line in text.split(b"\r\n"):
            k, _, v = line.partition(b":")
            if k in FIELDS:
                out[k] = int(v)
    missing = [f for f in FIELDS if f not in out]
    assert not missing, "INFO lacks %r" % missing
    return out


def record(port, sequence):
    conn = RawConn(port)
    conn.call("FLUSHALL")
    assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    out = []
    try:
        for name, actions in sequence:
            before = counters(conn)
            replies = run_actions(conn, actions)
            after = counters(conn)
            out.append((name, replies, {f.decode(): after[f] - before[f] for f in FIELDS}))
    finally:
        conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        conn.close()
    return out


@pytest.fixture(scope="module")
def servers():
    from conftest import ServerProc
    ref, sk = ServerProc("redis"), ServerProc("skein", workers=4)
    yield ref, sk
    ref.stop()
    sk.stop()


def sequence(which):
    if which == "notification-sequence":
        return SEQUENCE
    if which == "zset-sequence":
        # Every writing sorted-set command: Redis counts each member added, updated or
        # removed in the dirty counter.
        from test_zsets_events import SEQUENCE as ZSET_SEQUENCE
        return [("setup", [cmd("FLUSHALL")])] + ZSET_SEQUENCE
    if which == "hll-sequence":
        # PFADD counts each register raised (and a created key), PFCOUNT its cache
        # rewrite, PFDEBUG its conversions.
        from test_hll_events import SEQUENCE as HLL_SEQUENCE
        return [("setup", [cmd("FLUSHALL")])] + HLL_SEQUENCE
    return EXTRA


@pytest.mark.parametrize("which", ["notification-sequence", "hits-and-misses", "zset-sequence",
                                   "hll-sequence"])
def test_counter_deltas(which, servers):
    ref, sk = servers
    seq = sequence(which)
    a, b = record(ref.port, seq), record(sk.port, seq)
    diffs = []
    for (name, r_rep, r_delta), (_, s_rep, s_delta) in zip(a, b):
        if r_rep != s_rep:
            diffs.append("step %s: replies differ\n  redis: %r\n  skein: %r" % (name, r_rep, s_rep))
        if r_delta != s_delta:
            diffs.append("step %s: counter deltas differ\n  redis: %r\n  skein: %r" % (
                name, r_delta, s_delta))
    assert not diffs, "\n".join(diffs)
