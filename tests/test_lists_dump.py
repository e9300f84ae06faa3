"""Lists and DUMP/RESTORE against redis-server 7.0.15: quicklist payloads are
byte-identical after the same commands (packed and LZF-compressed nodes), a DUMP from
either server RESTOREs into the other with the same elements and nodes (also under other
list options), the older list types (LIST, ZIPLIST, QUICKLIST of ziplists) load as Redis
loads them, and damaged payloads are refused with Redis's errors while the server keeps
serving."""
import random

from resp_client import parse
from dump_helpers import (assert_bad_format, assert_same_restore_verdicts, both, rdb_len,
                          rdb_str, ziplist, read_len)
from test_dump_restore import bulk, with_valid_crc


def config(conns, **opts):
    for c in conns:
        for k, v in opts.items():
            assert c.call("CONFIG", "SET", k.replace("_", "-"), str(v)) == b"+OK\r\n"


def reset(conns):
    config(conns, list_max_listpack_size=-2, list_compress_depth=0, rdbcompression="yes")


def elements(rnd, n):
    out = []
    for i in range(n):
        k = rnd.choice([0, 0, 1, 3, 10, 40, 200])
        if k == 0:
            out.append(str(rnd.choice([i, -i, 70000 * i, 2 ** 40 + i])).encode())
        else:
            out.append(b"el%d:" % i + b"xyz" * k)
    return out


def rpush(conn, key, els):
    for i in range(0, len(els), 500):
        r = conn.call("RPUSH", key, *els[i:i + 500])
        assert r[:1] == b":", r


def content(conn, key):
    return parse(conn.call("LRANGE", key, 0, -1))


SEQUENCES = [
    ("push", []),
    ("pop", [("LPOP", "k", "7"), ("RPOP", "k")]),
    ("insert", [("LINSERT", "k", "BEFORE", "el5:xyz", "new" * 30),
                ("LINSERT", "k", "AFTER", "7", "n"), ("LINSERT", "k", "AFTER", "el9:" + "xyz" * 3, "q")]),
    ("lset", [("LSET", "k", "3", "s" * 300), ("LSET", "k", "-2", "12")]),
    ("lrem", [("LREM", "k", "0", "0"), ("LREM", "k", "-1", "1")]),
    ("ltrim", [("LTRIM", "k", "3", "-4")]),
]


def test_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(1)
    try:
        for fill in (-2, -1, 4, 1, -5):
            for depth in (0, 1, 2):
                config((ref, sk), list_max_listpack_size=fill, list_compress_depth=depth,
                       rdbcompression=rnd.choice(["yes", "no"]))
                els = elements(rnd, rnd.choice([10, 100, 400]))
                for name, cmds in SEQUENCES:
                    for c in (ref, sk):
                        c.call("DEL", "k")
                        rpush(c, "k", els)
                        for cmd in cmds:
                            c.call(*cmd)
                    a, b = ref.call("DUMP", "k"), sk.call("DUMP", "k")
                    assert a == b, "%s fill %d depth %d" % (name, fill, depth)
    finally:
        reset((ref, sk))
        for c in (ref, sk):
            c.call("DEL", "k")
            c.close()


def test_dump_restores_across_servers(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(2)
    try:
        for fill, depth in ((-2, 0), (3, 1), (-1, 2), (128, 0)):
            config((ref, sk), list_max_listpack_size=fill, list_compress_depth=depth,
                   rdbcompression="no")
            for n in (1, 5, 300, 2000):
                els = elements(rnd, n)
                for src, dst in ((ref, sk), (sk, ref)):
                    src.call("DEL", "x")
                    rpush(src, "x", els)
                    payload = bulk(src.call("DUMP", "x"))
                    assert dst.call("RESTORE", "y", "0", payload, "REPLACE") == b"+OK\r\n"
                    assert content(dst, "y") == els
                    assert dst.call("OBJECT", "ENCODING", "y") == b"$9\r\nquicklist\r\n"
                    # The nodes are kept as loaded: the same bytes again.
                    assert bulk(dst.call("DUMP", "y")) == payload
    finally:
        reset((ref, sk))
        for c in (ref, sk):
            c.call("DEL", "x", "y")
            c.close()


def test_restore_takes_the_current_list_options(redis_server, skein_server):
    """Nodes are kept as saved, but compressed (or not) by the restoring server's
    list-compress-depth, and later pushes follow its list-max-listpack-size."""
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(3)
    try:
        payloads = []
        for fill in (-2, 5, 1):
            config((ref,), list_max_listpack_size=fill, list_compress_depth=0)
            ref.call("DEL", "p")
            rpush(ref, "p", elements(rnd, 200))
            payloads.append(bulk(ref.call("DUMP", "p")))
        for fill, depth in ((-2, 0), (2, 1), (-3, 3), (10, 2)):
            config((ref, sk), list_max_listpack_size=fill, list_compress_depth=depth,
                   rdbcompression="no")
            for p in payloads:
                for c in (ref, sk):
                    assert c.call("RESTORE", "r", "0", p, "REPLACE") == b"+OK\r\n"
                    c.call("LPUSH", "r", "a" * 100, "b")
                    c.call("RPUSH", "r", "c" * 5000)
                    c.call("LINSERT", "r", "AFTER", "b", "d" * 50)
                assert ref.call("DUMP", "r") == sk.call("DUMP", "r"), (fill, depth)
    finally:
        reset((ref, sk))
        for c in (ref, sk):
            c.call("DEL", "p", "r")
            c.close()


# ---------------------------------------------------------------- older list types

def as_text(v):
    return str(v).encode() if isinstance(v, int) else v


OLD_VALUES = [
    [b"a"], [1, 2, 3], [0, 12, 13, -1, 127, -128, 300, -40000, 2 ** 22, 2 ** 30, -2 ** 40],
    [b"x" * 70, b"", b"y" * 300, 5], [b"m%d" % i for i in range(600)],
    [i * 1000 for i in range(200)] + [b"z" * 20000],
]


def old_bodies(values):
    """The same elements as a LIST (type 1), a ZIPLIST (10) and a QUICKLIST (14) of two
    ziplist nodes."""
    lst = b"\x01" + rdb_len(len(values)) + b"".join(rdb_str(as_text(v)) for v in values)
    zl = b"\x0a" + rdb_str(ziplist(values))
    half = max(1, len(values) // 2)
    nodes = [values[:half]] + ([values[half:]] if values[half:] else [])
    ql = b"\x0e" + rdb_len(len(nodes)) + b"".join(rdb_str(ziplist(n)) for n in nodes)
    return [lst, zl, ql]


def test_old_list_types_load_as_in_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    try:
        for fill, depth in ((-2, 0), (4, 1), (-1, 2)):
            config((ref, sk), list_max_listpack_size=fill, list_compress_depth=depth,
                   rdbcompression="no")
            for values in OLD_VALUES:
                for body in old_bodies(values):
                    p = with_valid_crc(body)
                    for c in (ref, sk):
                        assert c.call("RESTORE", "o", "0", p, "REPLACE") == b"+OK\r\n", body[:20]
                    assert content(sk, "o") == [as_text(v) for v in values]
                    assert ref.call("DUMP", "o") == sk.call("DUMP", "o"), (fill, depth, body[:1])
    finally:
        reset((ref, sk))
        for c in (ref, sk):
            c.call("DEL", "o")
            c.close()


def lp(values):
    """A listpack of short strings (for hand-made QUICKLIST_2 nodes)."""
    body = b""
    for v in values:
        assert len(v) < 64
        e = bytes([0x80 | len(v)]) + v
        body += e + bytes([len(e)])
    total = 6 + len(body) + 1
    return total.to_bytes(4, "little") + len(values).to_bytes(2, "little") + body + b"\xff"


BAD_BODIES = [
    b"\x12\x00",                                           # no nodes
    b"\x12\x01\x02" + rdb_str(lp([])),                     # only an empty node
    b"\x12\x01\x03" + rdb_str(lp([b"a"])),                 # unknown container
    b"\x12\x01\x02\x00",                                   # empty node string
    b"\x12\x02\x02" + rdb_str(lp([b"a"])),                 # fewer nodes than claimed
    b"\x12\x01\x02" + rdb_str(lp([b"a"])[:-1] + b"\x00"),  # no end byte
    b"\x12\x01\x02" + rdb_str(b"\x0b\x00\x00\x00\x02\x00\x81a\x02\xff"),  # count 2, 1 entry
    b"\x12\x01\x02" + rdb_str(b"\x0b\x00\x00\x00\x01\x00\x81a\x03\xff"),  # bad backlen
    b"\x12\x01\x02" + rdb_str(b"\x0c\x00\x00\x00\x01\x00\x81a\x02\xff"),  # bad total
    b"\x12\x01\x02" + rdb_str(b"\x0b\x00\x00\x00\x01\x00\x85a\x02\xff"),  # string past end
    b"\x12\x01\x02\xc0\x05",                               # an integer as the node
    b"\x0e\x00",                                           # QUICKLIST: no nodes
    b"\x0e\x01" + rdb_str(ziplist([])),                    # only an empty ziplist
    b"\x0e\x01" + rdb_str(ziplist([b"a", b"b"], count=3)),  # wrong count
    b"\x0e\x01" + rdb_str(ziplist([b"a", b"b"], tail=10)),  # wrong tail
    b"\x0e\x01" + rdb_str(ziplist([b"a"])[:-1] + b"\x00"),  # no end byte
    b"\x0a" + rdb_str(ziplist([])),                        # ZIPLIST: empty
    b"\x0a" + rdb_str(ziplist([b"abc"], count=2)),
    b"\x0a" + rdb_str(b"\x0d\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\x05a\xff"),  # entry past end
    b"\x0a" + rdb_str(b"\x0e\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x07\x01a\xff"),  # bad prevlen
    b"\x01\x00",                                           # LIST: empty
    b"\x01\x03\x01a\x01b",                                 # fewer elements than claimed
    b"\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff",           # a huge claimed length
]


def test_corrupted_list_payloads_are_refused(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(5)
    try:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "yes")
        assert_bad_format(ref, sk, BAD_BODIES)
        for els in ([b"1", b"2", b"3"], elements(rnd, 50), [b"q" * 100] * 3):
            ref.call("DEL", "src")
            rpush(ref, "src", els)
            payload = bulk(ref.call("DUMP", "src"))
            assert_same_restore_verdicts(ref, sk, payload, rnd)
            # Damaged bodies under a valid checksum: the same verdict, the same content.
            body = payload[:-10]
            for _ in range(200):
                p = bytearray(body)
                p[rnd.randrange(1, len(p))] = rnd.randrange(256)
                bad = with_valid_crc(bytes(p))
                a = ref.call("RESTORE", "dst", "0", bad, "REPLACE")
                b = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                assert a == b, "payload %r:\n redis %r\n skein %r" % (bad, a, b)
                if a == b"+OK\r\n":
                    assert ref.call("LRANGE", "dst", 0, -1) == sk.call("LRANGE", "dst", 0, -1)
        assert sk.call("PING") == b"+PONG\r\n"
    finally:
        ref.call("CONFIG", "SET", "sanitize-dump-payload", "no")
        for c in (ref, sk):
            c.call("DEL", "src", "dst")
            c.close()


def containers(payload):
    """The node containers (1 plain, 2 packed) of a QUICKLIST_2 payload."""
    assert payload[0] == 0x12
    n, i, _ = read_len(payload, 1)
    out = []
    for _ in range(n):
        c, i, _ = read_len(payload, i)
        out.append(c)
        size, i, special = read_len(payload, i)
        if special:  # an LZF blob: compressed and original lengths, then the bytes
            clen, i, _ = read_len(payload, i)
            _, i, _ = read_len(payload, i)
            i += clen
        else:
            i += size
    return out


def test_plain_nodes_restore_dump_and_edit_as_in_redis(redis_server, skein_server):
    """Plain nodes (one big element outside a listpack) come from Redis only under a
    lowered DEBUG QUICKLIST-PACKED-THRESHOLD; Skein keeps them from a payload, dumps them
    as container 1 (compressed or not) and edits around them as quicklist.c does."""
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(6)
    payloads = []
    try:
        assert ref.call("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100") == b"+OK\r\n"
        for fill, depth in ((-2, 0), (3, 1), (-1, 2)):
            config((ref,), list_max_listpack_size=fill, list_compress_depth=depth)
            for _ in range(3):
                ref.call("DEL", "p")
                for i in range(rnd.choice([5, 20, 60])):
                    big = rnd.random() < 0.3
                    if big:
                        v = b"P%d-" % i + (b"abc" * rnd.randrange(40, 90) if rnd.random() < 0.6
                                           else bytes(rnd.randrange(256) for _ in range(150)))
                    else:
                        v = b"s%d" % i
                    ref.call(rnd.choice(["RPUSH", "LPUSH"]), "p", v)
                ref.call("LINSERT", "p", "AFTER", "s3", b"Q" * 120)
                payloads.append(bulk(ref.call("DUMP", "p")))
        assert any(1 in containers(p) for p in payloads)
    finally:
        ref.call("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0")
    try:
        for depth in (0, 1, 2):
            config((ref, sk), list_max_listpack_size=rnd.choice([-2, 3]), list_compress_depth=depth,
                   rdbcompression="no")
            for p in payloads:
                for c in (ref, sk):
                    assert c.call("RESTORE", "r", "0", p, "REPLACE") == b"+OK\r\n"
                assert ref.call("DUMP", "r") == sk.call("DUMP", "r")
                els = parse(ref.call("LRANGE", "r", 0, -1))
                bigs = [e for e in els if len(e) >= 100] or [els[0]]
                n = len(els)
                steps = [
                    ("LINDEX", "r", str(rnd.randrange(n))),
                    ("LRANGE", "r", "0", "-1"),
                    ("LSET", "r", str(els.index(rnd.choice(bigs))), "small"),
                    ("LINSERT", "r", "BEFORE", rnd.choice(bigs), "before-big"),
                    ("LINSERT", "r", "AFTER", rnd.choice(bigs), "after-big" * 3),
                    ("LPOS", "r", rnd.choice(bigs)),
                    ("LREM", "r", "0", rnd.choice(bigs)),
                    ("LPOP", "r"), ("RPOP", "r", "2"),
                    ("LTRIM", "r", "1", "-2"),
                    ("LPUSH", "r", "x"), ("RPUSH", "r", "y" * 200),
                ]
                for step in steps:
                    a, b = ref.call(*step), sk.call(*step)
                    assert a == b, (step, a, b)
                    assert ref.call("DUMP", "r") == sk.call("DUMP", "r"), step
                # And Skein's DUMP of plain nodes restores into Redis as they were.
                for c in (ref, sk):
                    assert c.call("RESTORE", "r", "0", p, "REPLACE") == b"+OK\r\n"
                mine = bulk(sk.call("DUMP", "r"))
                assert ref.call("RESTORE", "r2", "0", mine, "REPLACE") == b"+OK\r\n"
                assert ref.call("DUMP", "r2") == ref.call("DUMP", "r")
    finally:
        reset((ref, sk))
        for c in (ref, sk):
            c.call("DEL", "p", "r", "r2")
            c.close()
