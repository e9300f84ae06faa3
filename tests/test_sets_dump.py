"""Sets and DUMP/RESTORE against redis-server 7.0.15: intset payloads (and one-member
hash tables) are byte-identical, a DUMP from either server RESTOREs into the other with
the same members and encoding (also under other set-max-intset-entries), and damaged
payloads are refused with Redis's errors while the server keeps serving."""
import random

from resp_client import parse
from dump_helpers import (assert_bad_format, assert_same_restore_verdicts, both,
                          damaged_with_valid_crc)
from test_dump_restore import bulk, with_valid_crc


def intset_members():
    """Member lists that load as intsets, of every width and around the size limit."""
    rnd = random.Random(7)
    out = [[1], [-1, 0, 1], [32767, -32768], [32768], [-32769, 5], [2147483647],
           [2147483648], [-9223372036854775808, 9223372036854775807, 0],
           list(range(512)), list(range(-256, 256)), [i * 70000 for i in range(300)],
           [i * 2 ** 40 for i in range(-100, 100)]]
    for _ in range(20):
        width = rnd.choice([2 ** 15, 2 ** 31, 2 ** 63])
        n = rnd.randrange(1, 513)
        out.append(sorted({rnd.randrange(-width, width) for _ in range(n)}))
    return out


def table_members():
    """Member lists that load as hash tables."""
    rnd = random.Random(8)
    out = [[b"a"], [b"x" * 100], [b"hello world " * 20], [b"01"], [b"a", 1, 2],
           list(range(513)), [b"m:%d" % i for i in range(1000)], [b"", b"\x00\xff"],
           [b"1.5", b"+1", b" 1", b"-0"]]
    for _ in range(10):
        n = rnd.randrange(1, 700)
        out.append([bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40)))
                    for _ in range(n)])
    return out


def sadd(conn, key, members):
    for i in range(0, len(members), 1000):
        r = conn.call("SADD", key, *members[i:i + 1000])
        assert r[:1] == b":", r


def content(conn, key):
    return sorted(parse(conn.call("SMEMBERS", key))), conn.call("OBJECT", "ENCODING", key)


def test_intset_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for members in intset_members():
            for c in (ref, sk):
                c.call("DEL", "is")
                sadd(c, "is", members)
                assert c.call("OBJECT", "ENCODING", "is") == b"$6\r\nintset\r\n"
            a, b = ref.call("DUMP", "is"), sk.call("DUMP", "is")
            assert a == b, "DUMP of %r differs:\n redis %r\n skein %r" % (members[:5], a, b)
    finally:
        for c in (ref, sk):
            c.call("DEL", "is")
            c.close()


def test_one_member_table_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for members in ([b"a"], [b"x" * 100], [b"hello world " * 20], [b"01"], [b""]):
            for c in (ref, sk):
                c.call("DEL", "ht")
                sadd(c, "ht", members)
            assert ref.call("DUMP", "ht") == sk.call("DUMP", "ht")
        # An integer held in a hash table (set-max-intset-entries 0).
        for c in (ref, sk):
            c.call("CONFIG", "SET", "set-max-intset-entries", "0")
            c.call("DEL", "ht")
            c.call("SADD", "ht", "12345")
            assert c.call("OBJECT", "ENCODING", "ht") == b"$9\r\nhashtable\r\n"
        assert ref.call("DUMP", "ht") == sk.call("DUMP", "ht")
    finally:
        for c in (ref, sk):
            c.call("CONFIG", "SET", "set-max-intset-entries", "512")
            c.call("DEL", "ht")
            c.close()


def test_dump_restores_across_servers(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for src, dst in ((ref, sk), (sk, ref)):
            for i, members in enumerate(intset_members() + table_members()):
                src.call("DEL", "x")
                sadd(src, "x", members)
                payload = bulk(src.call("DUMP", "x"))
                assert dst.call("RESTORE", "y", "0", payload, "REPLACE") == b"+OK\r\n"
                assert content(dst, "y") == content(src, "x"), (i, members[:5])
                # And back: the same payload again.
                again = bulk(dst.call("DUMP", "y"))
                assert src.call("RESTORE", "z", "0", again, "REPLACE") == b"+OK\r\n"
                assert content(src, "z") == content(src, "x")
    finally:
        for c in (ref, sk):
            c.call("DEL", "x", "y", "z")
            c.close()


def test_restore_follows_the_configured_limit(redis_server, skein_server):
    """A loaded set is converted as Redis's rdbLoadObject does under the current
    set-max-intset-entries: intset blobs past it become hash tables, member lists of
    integers within it become intsets."""
    ref, sk = both(redis_server, skein_server)
    try:
        payloads = []
        for members in (list(range(10)), list(range(3)), [1, b"a"], list(range(600))):
            ref.call("DEL", "p")
            sadd(ref, "p", members)
            payloads.append(bulk(ref.call("DUMP", "p")))
        # A hash table of integers (type SET) written under a zero limit.
        ref.call("CONFIG", "SET", "set-max-intset-entries", "0")
        ref.call("DEL", "p")
        ref.call("SADD", "p", 1, 2, 3)
        payloads.append(bulk(ref.call("DUMP", "p")))
        for limit in ("4", "0", "1", "3", "700", "512"):
            for c in (ref, sk):
                assert c.call("CONFIG", "SET", "set-max-intset-entries", limit) == b"+OK\r\n"
            for p in payloads:
                for c in (ref, sk):
                    assert c.call("RESTORE", "r", "0", p, "REPLACE") == b"+OK\r\n"
                assert content(ref, "r") == content(sk, "r"), limit
    finally:
        for c in (ref, sk):
            c.call("CONFIG", "SET", "set-max-intset-entries", "512")
            c.call("DEL", "p", "r")
            c.close()


def intset_body(width, values, count=None):
    blob = width.to_bytes(4, "little") + (len(values) if count is None else count).to_bytes(4, "little")
    for v in values:
        blob += v.to_bytes(width, "little", signed=True)
    assert len(blob) < 64
    return b"\x0b" + bytes([len(blob)]) + blob


def set_body(members):
    body = b"\x02" + bytes([len(members)])
    for m in members:
        body += bytes([len(m)]) + m
    return body


# Payloads with a valid checksum whose set is malformed: Redis (deep sanitization on)
# and Skein (always) answer "Bad data format".
BAD_SET_BODIES = [
    intset_body(3, [1, 2]),                       # no such width
    intset_body(2, [1, 2], count=3),              # length beyond the values
    intset_body(2, [1, 2, 3], count=2),           # values beyond the length
    intset_body(2, [2, 1]),                       # not ascending
    intset_body(4, [5, 5]),                       # duplicate
    intset_body(2, []),                           # empty set
    b"\x0b\x04\x02\x00\x00\x00",                  # shorter than the header
    b"\x0b\xc0\x05",                              # an integer where the blob should be
    set_body([]),                                 # empty set
    set_body([b"a", b"a"]),                       # duplicate members
    set_body([b"1", b"1"]),                       # duplicate integers
    set_body([b"a", b"b", b"a"]),
    b"\x02\x03\x01a\x01b",                        # fewer members than claimed
    b"\x02\x81\xff\xff\xff\xff\xff\xff\xff\xff",  # a huge claimed length
    b"\x14\x01\x00",                              # 20: no listpack sets in 7.0
]


def test_corrupted_set_payloads_are_refused(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(5)
    try:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "yes")
        assert_bad_format(ref, sk, BAD_SET_BODIES)
        # Well formed, if unusual: a wider intset than needed loads and dumps as is.
        good = with_valid_crc(intset_body(8, [1, 2, 3]))
        for c in (ref, sk):
            assert c.call("RESTORE", "w", "0", good, "REPLACE") == b"+OK\r\n"
        assert ref.call("DUMP", "w") == sk.call("DUMP", "w")
        assert content(ref, "w") == content(sk, "w")
        # Damaged real payloads (bad checksums, truncations): the same errors.
        for members in ([1, 2, 3], list(range(-300, 300, 7)), [b"a", b"bb", b"x" * 50]):
            ref.call("DEL", "src")
            sadd(ref, "src", members)
            payload = bulk(ref.call("DUMP", "src"))
            assert_same_restore_verdicts(ref, sk, payload, rnd)
            # The same damage with a recomputed checksum: Skein refuses or loads a
            # sound set, never dies.
            for bad in damaged_with_valid_crc(payload, rnd):
                r = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                assert r in (b"+OK\r\n", b"-ERR Bad data format\r\n"), r
                if r == b"+OK\r\n" and sk.call("TYPE", "dst") == b"+set\r\n":
                    n = parse(sk.call("SCARD", "dst"))
                    assert len(parse(sk.call("SMEMBERS", "dst"))) == n
        assert sk.call("PING") == b"+PONG\r\n"
        assert skein_server.alive()
    finally:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "no")
        for c in (ref, sk):
            c.call("DEL", "src", "dst", "w")
            c.close()
