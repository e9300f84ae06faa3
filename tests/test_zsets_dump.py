"""Sorted sets and DUMP/RESTORE against redis-server 7.0.15: listpack payloads are
byte-identical, a DUMP from either server RESTOREs into the other with the same members,
scores and encoding (skiplists compared by content: ZSET_2 order is the skiplist's, the
same on both), the old ZSET_ZIPLIST and ZSET types load as in Redis, the configured limits
decide the loaded encoding, and damaged payloads are refused with Redis's errors while
the server keeps serving."""
import random
import struct

from resp_client import parse
from dump_helpers import (assert_bad_format, assert_same_restore_verdicts, both,
                          damaged_with_valid_crc, rdb_len, rdb_str, ziplist)
from test_dump_restore import bulk, with_valid_crc


def member_lists():
    """(member, score) lists covering integer/float/inf scores, integer-like members,
    long and binary members, and sizes around 128."""
    rnd = random.Random(11)
    out = [
        [(b"a", 1)],
        [(b"a", 1.5), (b"b", -2.25), (b"c", 0)],
        [(b"x", "inf"), (b"y", "-inf"), (b"z", "-0")],
        [(b"1", 1), (b"2", 0.1), (b"-5", 1e20), (b"100000000000", 1.1)],
        [(b"m", 4611686018427387903), (b"n", 4611686018427387904), (b"o", -4611686018427387903)],
        [(b"m", 1e18), (b"n", 5e18), (b"o", 3.0000000000000004), (b"p", 1e-5)],
        [(b"x" * 64, 1), (b"", 2), (b"\x00\xff", 3)],
        [(b"m%d" % i, i) for i in range(128)],
        [(b"m%d" % i, i / 7) for i in range(129)],
        [(b"x" * 65, 1)],
        [(b"same%d" % i, 5) for i in range(40)],
    ]
    for _ in range(15):
        n = rnd.randrange(1, 300)
        out.append([(b"k%d" % rnd.randrange(10 ** 6), rnd.choice([
            rnd.randrange(-1000, 1000), rnd.uniform(-1e6, 1e6), rnd.randrange(-2 ** 62, 2 ** 62)]))
            for _ in range(n)])
    return out


def close_all(conns, *keys):
    for c in conns:
        c.call("DEL", *keys)
        c.close()


def zadd(conn, key, pairs):
    for i in range(0, len(pairs), 500):
        args = []
        for m, s in pairs[i:i + 500]:
            args += [str(s), m]
        r = conn.call("ZADD", key, *args)
        assert r[:1] == b":", r


def content(conn, key):
    return conn.call("ZRANGE", key, "0", "-1", "WITHSCORES"), conn.call("OBJECT", "ENCODING", key)


def test_listpack_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for pairs in member_lists():
            for c in (ref, sk):
                c.call("DEL", "z")
                zadd(c, "z", pairs)
            assert ref.call("OBJECT", "ENCODING", "z") == sk.call("OBJECT", "ENCODING", "z")
            if ref.call("OBJECT", "ENCODING", "z") == b"$8\r\nlistpack\r\n":
                a, b = ref.call("DUMP", "z"), sk.call("DUMP", "z")
                assert a == b, "DUMP of %r differs:\n redis %r\n skein %r" % (pairs[:4], a, b)
        # Scores changed in place and members removed keep the bytes equal.
        for c in (ref, sk):
            c.call("DEL", "z")
            zadd(c, "z", [(b"m%d" % i, i) for i in range(50)])
            c.call("ZINCRBY", "z", "0.5", "m3")
            c.call("ZADD", "z", "-1", "m40")
            c.call("ZREM", "z", "m7", "m8")
            c.call("ZPOPMAX", "z")
            c.call("ZREMRANGEBYSCORE", "z", "10", "(12")
        assert ref.call("DUMP", "z") == sk.call("DUMP", "z")
    finally:
        close_all((ref, sk), "z")


def test_dump_restores_across_servers(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for src, dst in ((ref, sk), (sk, ref)):
            for i, pairs in enumerate(member_lists()):
                src.call("DEL", "x")
                zadd(src, "x", pairs)
                payload = bulk(src.call("DUMP", "x"))
                assert dst.call("RESTORE", "y", "0", payload, "REPLACE") == b"+OK\r\n"
                assert content(dst, "y") == content(src, "x"), (i, pairs[:4])
                again = bulk(dst.call("DUMP", "y"))
                assert src.call("RESTORE", "z", "0", again, "REPLACE") == b"+OK\r\n"
                assert content(src, "z") == content(src, "x")
        # A skiplist's ZSET_2 payload is the same on both servers (tail to head).
        for c in (ref, sk):
            c.call("DEL", "x")
            zadd(c, "x", [(b"m%d" % i, i * 1.5) for i in range(300)])
        assert ref.call("DUMP", "x") == sk.call("DUMP", "x")
    finally:
        close_all((ref, sk), "x", "y", "z")


def test_restore_follows_the_configured_limits(redis_server, skein_server):
    """Loaded sorted sets are converted as rdbLoadObject does under the current
    zset-max-listpack-entries/-value: listpacks past the entries become skiplists,
    ZSET_2 payloads within both limits become listpacks."""
    ref, sk = both(redis_server, skein_server)
    try:
        payloads = []
        for pairs in ([(b"m%d" % i, i) for i in range(10)], [(b"a", 1), (b"b" * 30, 2)],
                      [(b"m%d" % i, i) for i in range(200)], [(b"x" * 100, 1), (b"y", 2)]):
            ref.call("DEL", "p")
            zadd(ref, "p", pairs)
            payloads.append(bulk(ref.call("DUMP", "p")))
        for entries, value in (("4", "64"), ("0", "64"), ("9", "64"), ("10", "64"),
                               ("1000", "10"), ("1000", "200"), ("128", "64")):
            for c in (ref, sk):
                assert c.call("CONFIG", "SET", "zset-max-listpack-entries", entries) == b"+OK\r\n"
                assert c.call("CONFIG", "SET", "zset-max-listpack-value", value) == b"+OK\r\n"
            for p in payloads:
                for c in (ref, sk):
                    assert c.call("RESTORE", "r", "0", p, "REPLACE") == b"+OK\r\n"
                assert content(ref, "r") == content(sk, "r"), (entries, value)
    finally:
        for c in (ref, sk):
            c.call("CONFIG", "SET", "zset-max-listpack-entries", "128")
            c.call("CONFIG", "SET", "zset-max-listpack-value", "64")
            c.call("DEL", "p", "r")
            c.close()


# ------------------------------------------------------------ hand-built old payloads

def zset_ziplist_body(items, **kw):
    return b"\x0c" + rdb_str(ziplist(items, **kw))


def old_zset_body(pairs, kind=3):
    body = bytes([kind]) + rdb_len(len(pairs))
    for m, s in pairs:
        body += rdb_str(m)
        if kind == 5:
            body += struct.pack("<d", s)
        elif s == "nan":
            body += b"\xfd"
        elif s == "inf":
            body += b"\xfe"
        elif s == "-inf":
            body += b"\xff"
        else:
            t = repr(float(s)).encode()
            body += bytes([len(t)]) + t
    return body


GOOD_OLD_BODIES = [
    zset_ziplist_body([b"a", b"1", b"b", b"2.5"]),
    zset_ziplist_body([7, -100000, b"a", 1, b"b", 300, b"zz", b"inf"]),
    zset_ziplist_body([b"m%d" % i if i % 2 == 0 else i for i in range(260)]),
    old_zset_body([(b"a", 1.0), (b"b", 2.5), (b"c", "inf"), (b"d", "-inf")]),
    old_zset_body([(b"m%d" % i, i * 0.5) for i in range(200)]),
    old_zset_body([(b"a", 1.0), (b"b", 2.0)], kind=5),
]

BAD_BODIES = [
    old_zset_body([], kind=5),                                 # empty
    old_zset_body([(b"a", 1.0), (b"a", 2.0)], kind=5),         # duplicate member
    old_zset_body([(b"a", float("nan"))], kind=5),             # NaN score
    old_zset_body([(b"a", "nan")]),                            # NaN score, old type
    old_zset_body([(b"a", 1.0), (b"a", 1.0)]),                 # duplicate, old type
    b"\x05\x03" + rdb_str(b"a") + struct.pack("<d", 1.0),      # fewer than claimed
    b"\x05\x81" + b"\xff" * 8,                                 # a huge claimed length
    zset_ziplist_body([b"a", b"1", b"a", b"2"]),               # duplicate member
    zset_ziplist_body([b"a", b"1", b"b"]),                     # odd count
    zset_ziplist_body([]),                                     # empty
    zset_ziplist_body([b"a", b"1"], count=3),                  # wrong count
    zset_ziplist_body([b"a", b"1", b"b", b"2"], tail_fix=1),   # wrong tail offset
    b"\x0c" + rdb_str(b"\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00"),  # no end byte
]


def listpack_body(items):
    """RDB_TYPE_ZSET_LISTPACK of small string items."""
    entries = b""
    for v in items:
        assert len(v) < 64
        e = bytes([0x80 | len(v)]) + v
        entries += e + bytes([len(e)])
    total = 6 + len(entries) + 1
    return b"\x11" + rdb_str(struct.pack("<IH", total, len(items)) + entries + b"\xff")


BAD_BODIES += [
    listpack_body([b"a", b"1", b"a", b"2"]),   # duplicate member
    listpack_body([b"a", b"1", b"b"]),         # odd count
    listpack_body([]),                         # empty
]


def test_old_types_load_as_in_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for body in GOOD_OLD_BODIES:
            p = with_valid_crc(body)
            for c in (ref, sk):
                assert c.call("RESTORE", "o", "0", p, "REPLACE") == b"+OK\r\n", body[:20]
            assert content(ref, "o") == content(sk, "o"), body[:20]
            if ref.call("OBJECT", "ENCODING", "o") == b"$8\r\nlistpack\r\n":
                assert ref.call("DUMP", "o") == sk.call("DUMP", "o")
    finally:
        close_all((ref, sk), "o")


def test_corrupted_zset_payloads_are_refused(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(5)
    try:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "yes")
        assert_bad_format(ref, sk, BAD_BODIES)
        for pairs in ([(b"a", 1), (b"b", 2.5)], [(b"m%d" % i, i / 3) for i in range(150)]):
            ref.call("DEL", "src")
            zadd(ref, "src", pairs)
            payload = bulk(ref.call("DUMP", "src"))
            assert_same_restore_verdicts(ref, sk, payload, rnd)
            # The same damage with a recomputed checksum: Skein refuses or loads a sound
            # sorted set, never dies.
            for bad in damaged_with_valid_crc(payload, rnd):
                r = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                assert r in (b"+OK\r\n", b"-ERR Bad data format\r\n"), r
                if r == b"+OK\r\n" and sk.call("TYPE", "dst") == b"+zset\r\n":
                    n = parse(sk.call("ZCARD", "dst"))
                    assert len(parse(sk.call("ZRANGE", "dst", "0", "-1"))) == n
                    sk.call("ZADD", "dst", "1", "new")
                    sk.call("ZRANGEBYSCORE", "dst", "-inf", "+inf")
        assert sk.call("PING") == b"+PONG\r\n"
        assert skein_server.alive()
    finally:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "no")
        for c in (ref, sk):
            c.call("DEL", "src", "dst")
            c.close()


def test_zscan_replies_listpack_scores_as_stored(redis_server, skein_server):
    """ZSCAN of a listpack replies each score's stored text, as Redis's lpGet does, even a
    form Redis never writes (found by tests/dump_fuzz.py)."""
    bodies = [listpack_body([b"a", b"1.50", b"b", b"+2", b"c", b"5016994646098731615"]),
              bytes.fromhex("111d1d0000000400817802c09502847632353405f45f62c0a80cf29f4509ff")]
    ref, sk = both(redis_server, skein_server)
    try:
        for body in bodies:
            for c in (ref, sk):
                assert c.call("RESTORE", "o", "0", with_valid_crc(body), "REPLACE") == b"+OK\r\n"
            assert ref.call("ZSCAN", "o", "0") == sk.call("ZSCAN", "o", "0"), body
            assert ref.call("ZSCAN", "o", "0", "MATCH", "[ac]") == \
                sk.call("ZSCAN", "o", "0", "MATCH", "[ac]")
            assert ref.call("ZRANGE", "o", "0", "-1", "WITHSCORES") == \
                sk.call("ZRANGE", "o", "0", "-1", "WITHSCORES")
    finally:
        close_all((ref, sk), "o")
