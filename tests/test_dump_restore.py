"""DUMP/RESTORE interoperability with redis-server 7.0.15: payloads are byte-identical,
a DUMP from either server RESTOREs into the other, and corrupted payloads are refused
with Redis's errors while the server stays up."""
import random

import pytest

from resp_client import RawConn, parse


def values():
    """Strings covering every encoding DUMP picks: integers of each width, plain,
    binary, LZF-compressible (and not), at and around the thresholds."""
    rnd = random.Random(1234)
    vals = [b"", b"0", b"-1", b"127", b"-128", b"128", b"32767", b"-32768", b"32768",
            b"2147483647", b"-2147483648", b"2147483648", b"12345678901",
            b"9223372036854775807", b"-9223372036854775808", b"007", b"+1", b"1.5",
            b"\x00\xff\r\n binary", b"a" * 20, b"a" * 21, b"a" * 25, b"ab" * 11,
            b"x" * 1000, bytes(range(256)), b"hello world " * 40,
            b"tail abcdef xyz abcdef", b"0123456789" * 30]
    for n in range(300):
        size = rnd.choice([21, 22, 24, 25, 30, 33, 40, 64, 100, 300, 2000, 20000])
        alphabet = rnd.choice([b"a", b"ab", b"abc", b"abcdefgh", bytes(range(256))])
        vals.append(bytes(rnd.choice(alphabet) for _ in range(size)))
        # Repeated chunks with mutations exercise back references and their limits.
        chunk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(3, 40)))
        s = bytearray(chunk * (size // len(chunk) + 1))[:size]
        for _ in range(rnd.randrange(0, 5)):
            s[rnd.randrange(len(s))] = rnd.randrange(256)
        vals.append(bytes(s))
    return vals


def bulk(reply):
    assert reply[:1] == b"$", reply
    return parse(reply)


def test_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    try:
        for i, v in enumerate(values()):
            key = "dr:%d" % i
            assert ref.call("SET", key, v) == sk.call("SET", key, v) == b"+OK\r\n"
            a, b = ref.call("DUMP", key), sk.call("DUMP", key)
            assert a == b, "DUMP of %r differs:\n redis %r\n skein %r" % (v[:60], a, b)
        ref.call("DEL", *["dr:%d" % i for i in range(len(values()))])
        sk.call("DEL", *["dr:%d" % i for i in range(len(values()))])
    finally:
        ref.close()
        sk.close()


@pytest.mark.parametrize("direction", ["redis_to_skein", "skein_to_redis"])
def test_dump_restores_across_servers(direction, redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    src, dst = (ref, sk) if direction == "redis_to_skein" else (sk, ref)
    try:
        for i, v in enumerate(values()):
            key = "x:%d" % i
            src.call("SET", key, v)
            payload = bulk(src.call("DUMP", key))
            assert dst.call("RESTORE", key, "0", payload, "REPLACE") == b"+OK\r\n"
            assert bulk(dst.call("GET", key)) == v
            # Both servers agree on the restored value's encoding.
            assert dst.call("OBJECT", "ENCODING", key) == src.call("OBJECT", "ENCODING", key)
            # The restored value dumps back to the same payload.
            assert bulk(dst.call("DUMP", key)) == payload
            src.call("DEL", key)
            dst.call("DEL", key)
        # A TTL travels with RESTORE.
        src.call("SET", "ttlkey", "v")
        payload = bulk(src.call("DUMP", "ttlkey"))
        assert dst.call("RESTORE", "ttlkey", "100000", payload) == b"+OK\r\n"
        assert 99000 <= parse(dst.call("PTTL", "ttlkey")) <= 100000
        assert dst.call("RESTORE", "ttlkey", "0", payload)[:8] == b"-BUSYKEY"
        src.call("DEL", "ttlkey")
        dst.call("DEL", "ttlkey")
    finally:
        ref.close()
        sk.close()


def corruptions(payload, rnd):
    """Damaged variants of a payload: truncations, bit flips, bad version, garbage."""
    out = [payload[:n] for n in range(len(payload))]
    out.append(payload + b"\x00")
    out.append(payload[:-10] + b"\x0b\x00" + payload[-8:])
    for _ in range(150):
        p = bytearray(payload)
        for _ in range(rnd.randrange(1, 4)):
            p[rnd.randrange(len(p))] ^= 1 << rnd.randrange(8)
        out.append(bytes(p))
    for _ in range(30):
        out.append(bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 64))))
    return out


def with_valid_crc(body):
    """`body` (type + value) with Redis's footer: version 10 and the CRC64."""
    data = body + b"\x0a\x00"
    return data + crc64_jones(data).to_bytes(8, "little")


def crc64_jones(data):
    """Redis's crc64 (reflected Jones polynomial), bit by bit."""
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


# Payload bodies with a correct checksum whose contents are wrong: Redis answers
# "Bad data format" for each.
BAD_BODIES = [
    b"\x08\x00",                      # 8 is not an object type
    b"\x14\x00",                      # nor is 20
    b"\xff",                          # nor 255
    b"\x00\xc4",                      # unknown string encoding
    b"\x00\xc3\x05\x20\x00abc",       # LZF claims more output than it has
    b"\x00\xc3\x02\x05\x21\x00",      # LZF back reference before the start
    b"\x00\xc3\x81\xff\xff\xff\xff\xff\xff\xff\xff\x05",  # LZF input longer than payload
    b"\x00\x80\xff\xff\xff\xff",      # string longer than the payload
    b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\x00\xbf",                      # unknown length encoding
    b"\x00\x40",                      # truncated 14-bit length
]


def test_corrupted_payloads_are_refused(redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    rnd = random.Random(99)
    try:
        sources = [b"hello", b"12345", b"a" * 200, b"hello world " * 10]
        for v in sources:
            ref.call("SET", "src", v)
            payload = bulk(ref.call("DUMP", "src"))
            for bad in corruptions(payload, rnd):
                a = ref.call("RESTORE", "dst", "0", bad, "REPLACE")
                b = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                assert a == b, "payload %r:\n redis %r\n skein %r" % (bad, a, b)
                ref.call("DEL", "dst")
                sk.call("DEL", "dst")
        for body in BAD_BODIES:
            bad = with_valid_crc(body)
            a = ref.call("RESTORE", "dst", "0", bad)
            b = sk.call("RESTORE", "dst", "0", bad)
            assert a == b == b"-ERR Bad data format\r\n", (body, a, b)
        assert sk.call("PING") == b"+PONG\r\n"
        assert skein_server.alive()
    finally:
        ref.call("DEL", "src", "dst")
        ref.close()
        sk.close()


def test_restore_reads_into_footer_like_redis(redis_server, skein_server):
    """Redis decodes the value from the whole payload, footer included: a string whose
    length runs into the version bytes still loads."""
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    try:
        bad = with_valid_crc(b"\x00\x05abc")
        a = ref.call("RESTORE", "fk", "0", bad, "REPLACE")
        b = sk.call("RESTORE", "fk", "0", bad, "REPLACE")
        assert a == b
        assert ref.call("GET", "fk") == sk.call("GET", "fk")
        ref.call("DEL", "fk")
        sk.call("DEL", "fk")
    finally:
        ref.close()
        sk.close()
