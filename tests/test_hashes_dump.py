"""DUMP/RESTORE of hashes against redis-server 7.0.15: listpack payloads byte-identical,
payloads of every encoding (listpack, hashtable, and the older ziplist, zipmap and plain
pair encodings built here by hand) RESTORE into either server with the same content and
encoding, and damaged payloads are refused with Redis's errors while the server keeps
serving."""
import random
import struct

import pytest

from resp_client import RawConn, parse
from dump_helpers import rdb_len, rdb_str, ziplist
from test_dump_restore import bulk, corruptions, with_valid_crc

TYPE_HASH, TYPE_HASH_ZIPMAP, TYPE_HASH_ZIPLIST, TYPE_HASH_LISTPACK = 4, 9, 13, 16


def hashes():
    """Field/value lists covering the listpack's encodings (integers of every width,
    strings of every length class), the value-length and entry-count limits."""
    rnd = random.Random(7)
    ints = [b"0", b"1", b"-1", b"127", b"128", b"-128", b"-129", b"4095", b"4096", b"-4096",
            b"-4097", b"32767", b"32768", b"-32768", b"8388607", b"8388608", b"-8388608",
            b"2147483647", b"2147483648", b"-2147483649", b"9223372036854775807",
            b"-9223372036854775808", b"9223372036854775808", b"007", b"+1", b"-0", b"1.5"]
    out = [
        [(b"f", b"v")],
        [(b"", b"")],
        [(b"a\x00b", b"\x00\xff\r\n")],
        [(b"k%d" % i, v) for i, v in enumerate(ints)],
        [(v, b"x") for v in ints],
        [(b"x" * 63, b"y" * 64), (b"z" * 64, b"w")],
        [(b"f%d" % i, b"v%d" % i) for i in range(512)],
        [(b"a" * 40, b"a" * 40)],  # compressible payload
    ]
    for _ in range(20):
        n = rnd.randrange(1, 40)
        fields = {}
        for _ in range(n):
            kind = rnd.randrange(4)
            if kind == 0:
                v = str(rnd.randrange(-10**12, 10**12)).encode()
            elif kind == 1:
                v = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 65)))
            else:
                v = bytes(rnd.choice(b"abc") for _ in range(rnd.randrange(0, 65)))
            fields[bytes(rnd.choice(b"fgh") for _ in range(rnd.randrange(1, 12)))] = v
        out.append(list(fields.items()))
    return out


def fill(conn, key, pairs):
    conn.call("DEL", key)
    args = [b"HSET", key]
    for f, v in pairs:
        args += [f, v]
    assert conn.call(*args)[:1] == b":"


def content(conn, key):
    reply = parse(conn.call("HGETALL", key))
    pairs = sorted(zip(reply[0::2], reply[1::2]))
    return pairs, conn.call("OBJECT", "ENCODING", key)


def test_listpack_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    try:
        for i, pairs in enumerate(hashes()):
            key = "hd:%d" % i
            fill(ref, key, pairs)
            fill(sk, key, pairs)
            assert ref.call("OBJECT", "ENCODING", key) == b"$8\r\nlistpack\r\n"
            a, b = ref.call("DUMP", key), sk.call("DUMP", key)
            assert a == b, "DUMP of %r differs:\n redis %r\n skein %r" % (pairs[:3], a, b)
            ref.call("DEL", key)
            sk.call("DEL", key)
    finally:
        ref.close()
        sk.close()


def big_hashes():
    """Hashes Redis keeps as hash tables: many fields, or a long field or value."""
    return [
        [(b"f%d" % i, b"%d" % i) for i in range(513)],
        [(b"f", b"v" * 65)],
        [(b"F" * 65, b"1"), (b"g", b"2")],
        [(b"f%d" % i, b"x" * (i % 100)) for i in range(2000)],
    ]


@pytest.mark.parametrize("direction", ["redis_to_skein", "skein_to_redis"])
def test_dump_restores_across_servers(direction, redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    src, dst = (ref, sk) if direction == "redis_to_skein" else (sk, ref)
    try:
        for i, pairs in enumerate(hashes() + big_hashes()):
            key = "hx:%d" % i
            fill(src, key, pairs)
            payload = bulk(src.call("DUMP", key))
            dst.call("DEL", key)
            assert dst.call("RESTORE", key, "0", payload) == b"+OK\r\n"
            assert content(src, key) == content(dst, key)
            # Restored values keep working: write to both and compare again.
            for c in (src, dst):
                c.call("HSET", key, "extra", "1")
                c.call("HDEL", key, pairs[0][0])
            assert content(src, key) == content(dst, key)
            src.call("DEL", key)
            dst.call("DEL", key)
    finally:
        ref.close()
        sk.close()


# ------------------------------------------------------------ payloads built by hand

def zipmap(pairs):
    """A zipmap as Redis 2.4 wrote it (with a free byte per value)."""
    def zlen(n):
        return bytes([n]) if n < 254 else b"\xfe" + struct.pack("<I", n)
    out = bytes([len(pairs) if len(pairs) < 254 else 254])
    for f, v in pairs:
        out += zlen(len(f)) + f + zlen(len(v)) + b"\x00" + v
    return out + b"\xff"


def old_payloads():
    """(name, payload) for the encodings Redis 7.0 still loads."""
    zl_items = [b"a", 1, b"bb", -300, b"c", b"hello", b"n", 70000, b"big", 1 << 40,
                b"m", -5, b"s", b"x" * 64, b"e", b""]
    out = [
        ("ziplist", with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) + rdb_str(ziplist(zl_items)))),
        ("ziplist-long-value", with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) +
                                              rdb_str(ziplist([b"f", b"y" * 100])))),
        ("ziplist-600", with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) + rdb_str(
            ziplist([x for i in range(600) for x in (b"f%d" % i, i)])))),
        ("zipmap", with_valid_crc(bytes([TYPE_HASH_ZIPMAP]) + rdb_str(
            zipmap([(b"f", b"v"), (b"12", b"34"), (b"", b"empty")])))),
        ("zipmap-long", with_valid_crc(bytes([TYPE_HASH_ZIPMAP]) + rdb_str(
            zipmap([(b"f", b"v" * 300)])))),
        ("zipmap-many", with_valid_crc(bytes([TYPE_HASH_ZIPMAP]) + rdb_str(
            zipmap([(b"f%d" % i, b"%d" % i) for i in range(600)])))),
        ("pairs", with_valid_crc(bytes([TYPE_HASH]) + rdb_len(3) + b"".join(
            rdb_str(x) for x in [b"a", b"1", b"b", b"22", b"c", b"333"]))),
        ("pairs-int-encoded", with_valid_crc(bytes([TYPE_HASH]) + rdb_len(2) +
                                             b"\xc0\x05" + rdb_str(b"x") + rdb_str(b"y") +
                                             b"\xc1\x39\x30")),
        ("pairs-long-later", with_valid_crc(bytes([TYPE_HASH]) + rdb_len(3) + b"".join(
            rdb_str(x) for x in [b"a", b"1", b"b", b"z" * 65, b"c", b"3"]))),
        ("pairs-many", with_valid_crc(bytes([TYPE_HASH]) + rdb_len(600) + b"".join(
            rdb_str(b"f%d" % i) + rdb_str(b"v") for i in range(600)))),
    ]
    return out


def bad_payloads():
    """Well-checksummed payloads with wrong contents."""
    out = [
        with_valid_crc(bytes([TYPE_HASH]) + rdb_len(0)),
        with_valid_crc(bytes([TYPE_HASH]) + rdb_len(2) + b"".join(
            rdb_str(x) for x in [b"a", b"1", b"a", b"2"])),
        with_valid_crc(bytes([TYPE_HASH]) + rdb_len(600) + b"".join(
            rdb_str(b"f") + rdb_str(b"v") for i in range(600))),
        with_valid_crc(bytes([TYPE_HASH]) + rdb_len(3) + rdb_str(b"a") + rdb_str(b"b")),
        with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) + rdb_str(ziplist([b"a", b"1", b"a", b"2"]))),
        with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) + rdb_str(ziplist([b"a", b"1", b"b"]))),
        with_valid_crc(bytes([TYPE_HASH_ZIPLIST]) + rdb_str(ziplist([]))),
        with_valid_crc(bytes([TYPE_HASH_ZIPMAP]) + rdb_str(zipmap([(b"a", b"1"), (b"a", b"2")]))),
        with_valid_crc(bytes([TYPE_HASH_ZIPMAP]) + rdb_str(zipmap([]))),
        with_valid_crc(bytes([TYPE_HASH_LISTPACK]) + rdb_str(b"\x07\x00\x00\x00\x00\x00\xff")),
        with_valid_crc(bytes([TYPE_HASH_LISTPACK]) + b"\xc0\x05"),
    ]
    return out


@pytest.fixture
def sanitizing_redis(fresh_redis):
    """A Redis that validates RESTORE payloads deeply, as Skein always does."""
    return fresh_redis(["--sanitize-dump-payload", "yes"])


def test_old_encodings_load_like_redis(sanitizing_redis, skein_server):
    ref, sk = RawConn(sanitizing_redis.port), RawConn(skein_server.port)
    try:
        for name, payload in old_payloads():
            a = ref.call("RESTORE", "old", "0", payload, "REPLACE")
            b = sk.call("RESTORE", "old", "0", payload, "REPLACE")
            assert a == b == b"+OK\r\n", (name, a, b)
            assert content(ref, "old") == content(sk, "old"), name
            # A loaded listpack DUMPs to the same bytes as Redis's.
            if ref.call("OBJECT", "ENCODING", "old") == b"$8\r\nlistpack\r\n":
                assert ref.call("DUMP", "old") == sk.call("DUMP", "old"), name
        for p in bad_payloads():
            a = ref.call("RESTORE", "bad", "0", p, "REPLACE")
            b = sk.call("RESTORE", "bad", "0", p, "REPLACE")
            assert a == b == b"-ERR Bad data format\r\n", (p, a, b)
        assert sk.call("PING") == b"+PONG\r\n"
    finally:
        ref.close()
        sk.close()


def test_restore_converts_under_current_limits(redis_server, skein_server):
    """A listpack payload over the receiving server's entry limit becomes a hash table
    (the value length is not checked on load, as in Redis)."""
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    try:
        fill(ref, "src", [(b"f%d" % i, b"v") for i in range(10)] + [(b"long", b"x" * 60)])
        payload = bulk(ref.call("DUMP", "src"))
        for c in (ref, sk):
            assert c.call("CONFIG", "SET", "hash-max-listpack-entries", "5") == b"+OK\r\n"
            assert c.call("CONFIG", "SET", "hash-max-listpack-value", "10") == b"+OK\r\n"
        for limit in (b"5", b"20"):
            for c in (ref, sk):
                c.call("CONFIG", "SET", "hash-max-listpack-entries", limit)
                assert c.call("RESTORE", "dst", "0", payload, "REPLACE") == b"+OK\r\n"
            assert content(ref, "dst") == content(sk, "dst"), limit
    finally:
        for c in (ref, sk):
            c.call("CONFIG", "SET", "hash-max-listpack-entries", "512")
            c.call("CONFIG", "SET", "hash-max-listpack-value", "64")
            c.call("DEL", "src", "dst")
        ref.close()
        sk.close()


def test_corrupted_payloads_are_refused(sanitizing_redis, skein_server):
    """Truncations, bit flips and garbage, with the checksum left wrong and made right:
    wherever a Redis that sanitizes payloads refuses, Skein refuses with the same error;
    whatever Skein accepts is a well-formed hash it can serve."""
    ref, sk = RawConn(sanitizing_redis.port), RawConn(skein_server.port)
    rnd = random.Random(5)
    try:
        sources = [[(b"f", b"v")], [(b"a", b"1"), (b"bb", b"-300"), (b"c", b"x" * 30)],
                   [(b"f%d" % i, b"%d" % i) for i in range(20)]]
        checked = 0
        for pairs in sources:
            fill(ref, "src", pairs)
            payload = bulk(ref.call("DUMP", "src"))
            variants = corruptions(payload, rnd)
            variants += [with_valid_crc(v[:-10]) for v in variants if len(v) > 10]
            for bad in variants:
                a = ref.call("RESTORE", "dst", "0", bad, "REPLACE")
                b = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                if a[:1] == b"-":
                    assert a == b, "payload %r:\n redis %r\n skein %r" % (bad, a, b)
                    checked += 1
                elif b == b"+OK\r\n":
                    # Both accepted: the same content.
                    assert content(ref, "dst") == content(sk, "dst"), bad
                else:
                    assert b in (b"-ERR Bad data format\r\n",
                                 b"-ERR DUMP payload version or checksum are wrong\r\n"), b
                ref.call("DEL", "dst")
                sk.call("DEL", "dst")
        assert checked > 100
        assert sk.call("PING") == b"+PONG\r\n"
        assert skein_server.alive()
    finally:
        ref.call("DEL", "src", "dst")
        ref.close()
        sk.close()
