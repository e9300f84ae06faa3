"""Keyspace notifications, differential: the same long sequence of string, bitmap and
generic key commands runs on redis-server 7.0.15 and on skein-server, each with a
subscriber on PSUBSCRIBE __key*@*__:*, and the notifications each step produced must be
the same messages (pattern, channel, payload) in the same order, byte for byte.

notify-keyspace-events is set per case (KEA, KEAn with `new`, Kx/Ex for expired only,
Eg$, Km/Em for keymiss, KA without keyevents, an empty set). The subscriber also
SUBSCRIBEs a sentinel channel: after each step the commanding connection PUBLISHes a
token there, and the subscriber reads until that token, so a step's notifications are
known to be complete without sleeping.

The active expiry cycle is off (DEBUG SET-ACTIVE-EXPIRE 0) except in the step that waits
for it (polling DBSIZE, which does not touch keys), so no notification depends on when
the cycle happens to run. These servers are the module's own.
"""
import time

import pytest

from resp_client import RawConn, encode, parse

PATTERN = b"__key*@*__:*"
SENTINEL = b"notify-test-sentinel"


def cmd(*args):
    return ("cmd",) + args


# (step name, actions). Actions: ("cmd", args...) runs a command (its reply is compared
# too); ("sleep", ms); ("active_expire_until_dbsize", n) turns the active expiry cycle on
# until DBSIZE (of the current db) is n, then off again; ("dump_restore", src, dst, opts...)
# RESTOREs dst from the server's own DUMP of src.
SEQUENCE = [
    ("set", [cmd("SET", "s", "v")]),
    ("set-overwrite", [cmd("SET", "s", "v2")]),
    ("set-ex", [cmd("SET", "s", "v", "EX", "1000")]),
    ("set-px-keepttl-get", [cmd("SET", "s2", "v", "PX", "1000000"),
                            cmd("SET", "s2", "w", "KEEPTTL", "GET")]),
    ("set-exat-pxat", [cmd("SET", "s3", "v", "EXAT", "99999999999"),
                       cmd("SET", "s4", "v", "PXAT", "99999999999000")]),
    ("set-nx-refused", [cmd("SET", "s", "x", "NX")]),
    ("set-xx-missing", [cmd("SET", "nokey", "x", "XX")]),
    ("set-xx", [cmd("SET", "s", "x", "XX")]),
    ("set-nx-get-new", [cmd("SET", "s5", "x", "NX", "GET")]),
    ("set-get-missing", [cmd("SET", "s6", "x", "GET")]),
    ("setnx", [cmd("SETNX", "nx1", "v"), cmd("SETNX", "nx1", "w")]),
    ("setex", [cmd("SETEX", "ex1", "1000", "v")]),
    ("psetex", [cmd("PSETEX", "ex2", "1000000", "v")]),
    ("getset", [cmd("GETSET", "s", "g"), cmd("GETSET", "gs-new", "g")]),
    ("getset-on-ttl", [cmd("GETSET", "ex1", "g"), cmd("TTL", "ex1")]),
    ("getdel", [cmd("GETDEL", "gs-new"), cmd("GETDEL", "gs-new")]),
    ("getex-ex", [cmd("GETEX", "s", "EX", "500")]),
    ("getex-px-exat-pxat", [cmd("GETEX", "s", "PX", "500000"),
                            cmd("GETEX", "s", "EXAT", "99999999999"),
                            cmd("GETEX", "s", "PXAT", "99999999999000")]),
    ("getex-persist", [cmd("GETEX", "s", "PERSIST"), cmd("GETEX", "s", "PERSIST")]),
    ("getex-plain", [cmd("GETEX", "s"), cmd("GETEX", "nokey")]),
    ("getex-past", [cmd("SET", "gp", "v"), cmd("GETEX", "gp", "PXAT", "1")]),
    ("mset", [cmd("MSET", "m1", "a", "m2", "b", "m1", "c")]),
    ("msetnx", [cmd("MSETNX", "n1", "a", "n2", "b"), cmd("MSETNX", "n1", "x", "n3", "y")]),
    ("append", [cmd("APPEND", "ap", "abc"), cmd("APPEND", "ap", "def"),
                cmd("APPEND", "ap", "")]),
    ("incr-family", [cmd("INCR", "c"), cmd("INCR", "c"), cmd("DECR", "c"),
                     cmd("INCRBY", "c", "10"), cmd("DECRBY", "c", "3"),
                     cmd("DECR", "c2"), cmd("INCRBY", "c", "0")]),
    ("incr-errors", [cmd("INCR", "ap"), cmd("INCRBY", "c", "x")]),
    ("incrbyfloat", [cmd("INCRBYFLOAT", "f", "1.5"), cmd("INCRBYFLOAT", "f", "-0.5"),
                     cmd("INCRBYFLOAT", "ap", "1")]),
    ("setrange", [cmd("SETRANGE", "sr", "3", "xyz"), cmd("SETRANGE", "sr", "0", "ab"),
                  cmd("SETRANGE", "sr", "1", ""), cmd("SETRANGE", "sr-none", "0", "")]),
    ("setbit", [cmd("SETBIT", "b", "7", "1"), cmd("SETBIT", "b", "7", "1"),
                cmd("SETBIT", "b", "100", "0"), cmd("SETBIT", "b", "7", "0")]),
    ("bitfield", [cmd("BITFIELD", "bf", "SET", "u8", "0", "255", "GET", "u8", "0"),
                  cmd("BITFIELD", "bf", "INCRBY", "u8", "0", "1"),
                  cmd("BITFIELD", "bf", "SET", "u8", "0", "0"),
                  cmd("BITFIELD", "bf", "GET", "u8", "0"),
                  cmd("BITFIELD", "bf-none", "GET", "u8", "0"),
                  cmd("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300"),
                  cmd("BITFIELD_RO", "bf", "GET", "u4", "0")]),
    ("bitop", [cmd("SET", "bo1", "ab"), cmd("BITOP", "AND", "bo-dst", "bo1", "b"),
               cmd("BITOP", "NOT", "bo-dst", "bo1"),
               cmd("BITOP", "OR", "bo-dst", "nokey1", "nokey2"),
               cmd("BITOP", "OR", "bo-dst2", "nokey1")]),
    ("del-unlink", [cmd("DEL", "m1", "m2", "nokey"), cmd("UNLINK", "n1", "n2", "nokey"),
                    cmd("DEL", "nokey")]),
    ("expire", [cmd("EXPIRE", "c", "1000"), cmd("PEXPIRE", "c", "1000000"),
                cmd("EXPIREAT", "c", "99999999999"), cmd("PEXPIREAT", "c", "99999999999000"),
                cmd("EXPIRE", "nokey", "10")]),
    ("expire-options", [cmd("EXPIRE", "c", "10", "NX"), cmd("EXPIRE", "c", "2000", "GT"),
                        cmd("EXPIRE", "c", "5000", "LT"), cmd("EXPIRE", "f", "10", "XX")]),
    ("expire-past", [cmd("EXPIREAT", "f", "1"), cmd("SET", "p1", "v"),
                     cmd("PEXPIRE", "p1", "-5"), cmd("SET", "p2", "v"),
                     cmd("EXPIRE", "p2", "0"), cmd("SET", "p3", "v"),
                     cmd("PEXPIREAT", "p3", "1")]),
    ("persist", [cmd("PERSIST", "c"), cmd("PERSIST", "c"), cmd("PERSIST", "nokey")]),
    ("rename", [cmd("SET", "r1", "v"), cmd("RENAME", "r1", "r2"),
                cmd("SET", "r3", "w"), cmd("RENAME", "r2", "r3"),
                cmd("RENAME", "r3", "r3"), cmd("RENAME", "nokey", "r9")]),
    ("renamenx", [cmd("SET", "rn1", "v"), cmd("RENAMENX", "rn1", "rn2"),
                  cmd("RENAMENX", "rn2", "r3"), cmd("RENAMENX", "rn2", "rn2")]),
    ("move", [cmd("SET", "mv", "v"), cmd("MOVE", "mv", "1"), cmd("MOVE", "mv", "1"),
              cmd("SELECT", "1"), cmd("SET", "mv2", "x"), cmd("MOVE", "mv2", "0"),
              cmd("SELECT", "0")]),
    ("copy", [cmd("SET", "cp", "v"), cmd("COPY", "cp", "cp2"), cmd("COPY", "cp", "cp2"),
              cmd("COPY", "cp", "cp2", "REPLACE"), cmd("COPY", "cp", "cp3", "DB", "2"),
              cmd("COPY", "nokey", "cp4")]),
    ("restore", [("dump_restore", "cp", "rs"), ("dump_restore", "cp", "rs", "REPLACE"),
                 ("dump_restore", "cp", "rs2", "ABSTTL"),
                 ("dump_restore", "cp", "rs3")]),
    ("del-restored-dump-missing", [cmd("DEL", "rs"), cmd("DUMP", "nokey")]),
    # Reads, one per step: which of them report a keymiss.
] + [("read " + " ".join(c), [cmd(*c)]) for c in [
    ("GET", "s"), ("GET", "nokey"), ("MGET", "s", "nokey", "nokey2"), ("STRLEN", "nokey"),
    ("GETRANGE", "nokey", "0", "1"), ("SUBSTR", "nokey", "0", "1"), ("EXISTS", "nokey"),
    ("EXISTS", "s", "nokey", "s"), ("TTL", "nokey"), ("PTTL", "nokey"),
    ("EXPIRETIME", "nokey"), ("TYPE", "nokey"), ("GETBIT", "nokey", "0"),
    ("BITCOUNT", "nokey"), ("BITPOS", "nokey", "1"), ("BITFIELD_RO", "nokey", "GET", "u8", "0"),
    ("LCS", "s", "nokey"), ("TOUCH", "nokey"), ("OBJECT", "ENCODING", "nokey"),
    ("OBJECT", "FREQ", "nokey"), ("DUMP", "nokey"), ("DUMP", "s"), ("GETDEL", "nokey"),
    ("GETEX", "nokey", "PERSIST"), ("GETSET", "gs2", "v"), ("KEYS", "nokey*"),
    ("COPY", "nokey", "x"), ("RENAME", "nokey", "x"),
    ("MOVE", "nokey", "1"), ("PERSIST", "nokey"), ("EXPIRE", "nokey", "5"), ("DEL", "nokey"),
    ("INCR", "gs2"), ("APPEND", "nokey-app", "x"), ("DEL", "nokey-app", "gs2"),
]] + [
    ("lazy-expiry-get", [cmd("SET", "lz", "v", "PX", "20"), ("sleep", 60), cmd("GET", "lz")]),
    ("lazy-expiry-other-reads", [cmd("SET", "lz1", "v", "PX", "20"),
                                 cmd("SET", "lz2", "v", "PX", "20"),
                                 cmd("SET", "lz3", "v", "PX", "20"),
                                 cmd("SET", "lz4", "v", "PX", "20"), ("sleep", 60),
                                 cmd("EXISTS", "lz1"), cmd("TTL", "lz2"),
                                 cmd("MGET", "lz3", "s"), cmd("STRLEN", "lz4")]),
    ("lazy-expiry-writes", [cmd("SET", "lw1", "v", "PX", "20"),
                            cmd("SET", "lw2", "1", "PX", "20"),
                            cmd("SET", "lw3", "v", "PX", "20"), ("sleep", 60),
                            cmd("SET", "lw1", "new"), cmd("INCR", "lw2"),
                            cmd("DEL", "lw3")]),
    # One key only: the order in which the cycle meets several keys is not Redis's to keep.
    ("active-expiry", [cmd("SELECT", "3"), cmd("SET", "ae1", "v", "PX", "20"),
                       cmd("SET", "keep", "v"),
                       ("sleep", 60), ("active_expire_until_dbsize", 1),
                       cmd("SELECT", "0")]),
    ("multi-exec", [cmd("MULTI"), cmd("SET", "t1", "v"), cmd("INCR", "t2"),
                    cmd("EXPIRE", "t1", "100"), cmd("RENAME", "t1", "t3"),
                    cmd("DEL", "t2"), cmd("GET", "nokey"), cmd("EXEC")]),
    ("multi-discard", [cmd("MULTI"), cmd("SET", "t4", "v"), cmd("DISCARD")]),
    ("multi-execabort", [cmd("MULTI"), cmd("SET", "t5", "v"), cmd("NOSUCHCMD"),
                         cmd("EXEC")]),
    ("swapdb", [cmd("SWAPDB", "0", "1"), cmd("SWAPDB", "1", "0")]),
    ("flushdb", [cmd("SELECT", "2"), cmd("FLUSHDB"), cmd("SELECT", "0"), cmd("FLUSHDB")]),
    ("flushall", [cmd("SET", "fa", "v"), cmd("FLUSHALL")]),
    ("after-flush", [cmd("SET", "last", "v"), cmd("DEL", "last")]),
]

CASES = ["KEA", "KEAn", "Kx", "Ex", "Eg$", "Km", "Em", "KA", "Egx$m", "En", ""]


class Subscriber:
    def __init__(self, port, proto):
        self.conn = RawConn(port)
        if proto == 3:
            assert self.conn.call("HELLO", "3").startswith(b"%")
        self.conn.send_raw(encode(["PSUBSCRIBE", PATTERN]))
        self.confirm = [self.conn.read_reply()]
        self.conn.send_raw(encode(["SUBSCRIBE", SENTINEL]))
        self.confirm.append(self.conn.read_reply())
        # Fail at once (rather than time out waiting for a sentinel) where the server
        # refused to subscribe.
        got = [parse(r)[:2] if isinstance(parse(r), list) else parse(r) for r in self.confirm]
        assert got == [[b"psubscribe", PATTERN], [b"subscribe", SENTINEL]], got

    def until(self, token):
        """The raw messages before the sentinel message carrying token."""
        out = []
        for _ in range(100000):
            raw = self.conn.read_reply()
            msg = parse(raw)
            if msg[:3] == [b"message", SENTINEL, token]:
                return out
            out.append(raw)
        raise AssertionError("no sentinel %r" % token)

    def close(self):
        self.conn.close()


def dbsize(conn):
    return parse(conn.call("DBSIZE"))


def run_actions(conn, actions):
    replies = []
    for act in actions:
        kind, args = act[0], act[1:]
        if kind == "cmd":
            replies.append(conn.call(*args))
        elif kind == "sleep":
            time.sleep(args[0] / 1000.0)
        elif kind == "active_expire_until_dbsize":
            assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == b"+OK\r\n"
            for _ in range(1000):
                if dbsize(conn) == args[0]:
                    break
                time.sleep(0.01)
            assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
            replies.append(b":%d\r\n" % dbsize(conn))
        elif kind == "dump_restore":
            src, dst, opts = args[0], args[1], args[2:]
            payload = parse(conn.call("DUMP", src))
            assert isinstance(payload, bytes), payload
            ttl = "99999999999000" if "ABSTTL" in opts else "0"
            replies.append(conn.call("RESTORE", dst, ttl, payload, *opts))
        else:
            raise ValueError(kind)
    return replies


def record(port, proto, flags, sequence):
    """Run sequence on the server at port; return [(step, replies, notifications)]."""
    ctl = RawConn(port)
    ctl.call("FLUSHALL")
    assert ctl.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    assert ctl.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n"
    sub = Subscriber(port, proto)
    if proto == 3:
        ctl.call("HELLO", "3")
    out = []
    try:
        for i, (name, actions) in enumerate(sequence):
            replies = run_actions(ctl, actions)
            token = b"%d" % i
            ctl.call("PUBLISH", SENTINEL, token)
            out.append((name, replies, sub.until(token)))
        out.append(("subscribe-confirmations", [], sub.confirm))
    finally:
        sub.close()
        ctl.call("CONFIG", "SET", "notify-keyspace-events", "")
        ctl.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        ctl.close()
    return out


def describe(raw_messages):
    return [tuple(parse(m)) for m in raw_messages]


def compare(ref, sk):
    diffs = []
    for (name, r_rep, r_msgs), (_, s_rep, s_msgs) in zip(ref, sk):
        if r_rep != s_rep:
            diffs.append("step %s: replies differ\n  redis: %r\n  skein: %r" % (name, r_rep, s_rep))
        if r_msgs != s_msgs:
            diffs.append("step %s: notifications differ\n  redis: %r\n  skein: %r" % (
                name, describe(r_msgs), describe(s_msgs)))
    return diffs


def assert_same_notifications(ref_port, sk_port, sequence, min_messages):
    """The sequence's replies and notifications match Redis's under several flag sets
    (RESP2); KEA produced at least `min_messages` notifications."""
    for flags in ("KEA", "KEAnm", "Ez", "Kg"):
        ref = record(ref_port, 2, flags, sequence)
        diffs = compare(ref, record(sk_port, 2, flags, sequence))
        assert not diffs, "\n".join(diffs)
        if flags == "KEA":
            assert sum(len(msgs) for _, _, msgs in ref) > min_messages


@pytest.fixture(scope="module")
def servers():
    from conftest import ServerProc
    ref, sk = ServerProc("redis"), ServerProc("skein", workers=4)
    yield ref, sk
    ref.stop()
    sk.stop()


@pytest.mark.parametrize("flags", CASES, ids=[c or "none" for c in CASES])
def test_notifications_resp2(flags, servers):
    ref, sk = servers
    diffs = compare(record(ref.port, 2, flags, SEQUENCE), record(sk.port, 2, flags, SEQUENCE))
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("flags", ["KEA", "KEAnm"])
def test_notifications_resp3(flags, servers):
    """The subscriber (and the commanding connection) on RESP3: push messages."""
    ref, sk = servers
    diffs = compare(record(ref.port, 3, flags, SEQUENCE), record(sk.port, 3, flags, SEQUENCE))
    assert not diffs, "\n".join(diffs)


def test_notifications_subscriber_in_other_db(servers):
    """Notifications carry the db of the key, not of any connection: a subscriber that
    SELECTed another db still gets __keyspace@0__ and events from db 5."""
    ref, sk = servers
    seq = [("db0", [cmd("SET", "a", "1")]),
           ("db5", [cmd("SELECT", "5"), cmd("SET", "a", "1"), cmd("DEL", "a"),
                    cmd("SELECT", "0")]),
           ("move-5", [cmd("SET", "mv", "1"), cmd("MOVE", "mv", "5")])]
    diffs = compare(record(ref.port, 2, "KEA", seq), record(sk.port, 2, "KEA", seq))
    assert not diffs, "\n".join(diffs)


def test_config_get_normalizes_flags(servers):
    """CONFIG GET shows the flag set in Redis's canonical form."""
    ref, sk = servers
    out = []
    for s in servers:
        c = RawConn(s.port)
        try:
            got = []
            for flags in ["KEA", "AKE", "Kg$lshzxetd", "KA", "EA", "Ex", "Kxm", "n", "Enm",
                          "KEAmn", "g", "$", "KEAKEA", "x", "xE", "K", "E", ""]:
                got.append(c.call("CONFIG", "SET", "notify-keyspace-events", flags))
                got.append(c.call("CONFIG", "GET", "notify-keyspace-events"))
            got.append(c.call("CONFIG", "SET", "notify-keyspace-events", "KEQ"))
            got.append(c.call("CONFIG", "GET", "notify-keyspace-events"))
            c.call("CONFIG", "SET", "notify-keyspace-events", "")
        finally:
            c.close()
        out.append(got)
    assert out[0] == out[1], "\n".join("%r | %r" % (a, b) for a, b in zip(*out) if a != b)
