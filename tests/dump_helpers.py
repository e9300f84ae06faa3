"""What the per-type DUMP/RESTORE tests share: a connection to each server, the same
damaged payloads given to both, and RDB pieces built by hand (lengths, strings and the
ziplist of older Redis versions)."""
import contextlib
import struct

from resp_client import RawConn
from test_dump_restore import corruptions, with_valid_crc


def both(redis_server, skein_server):
    return RawConn(redis_server.port), RawConn(skein_server.port)


@contextlib.contextmanager
def both_then_clean(redis_server, skein_server, *keys):
    """`both`, deleting `keys` on each server and closing the connections afterwards."""
    conns = both(redis_server, skein_server)
    try:
        yield conns
    finally:
        for c in conns:
            c.call("DEL", *keys)
            c.close()


def assert_same_restore_verdicts(ref, sk, payload, rnd):
    """Every damaged variant of `payload` (truncated, bit-flipped, garbage) gets the same
    RESTORE reply from both servers."""
    for bad in corruptions(payload, rnd):
        a = ref.call("RESTORE", "dst", "0", bad, "REPLACE")
        b = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
        assert a == b, "payload %r:\n redis %r\n skein %r" % (bad, a, b)


def assert_bad_format(ref, sk, bodies):
    """Each body (type + value), under a valid checksum, is refused by both servers with
    Redis's "Bad data format"."""
    for body in bodies:
        bad = with_valid_crc(body)
        a = ref.call("RESTORE", "dst", "0", bad, "REPLACE")
        b = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
        assert a == b == b"-ERR Bad data format\r\n", (body, a, b)


def damaged_with_valid_crc(payload, rnd, rounds=300):
    """`payload`'s body with 1-3 random bytes replaced, under a recomputed checksum."""
    body = payload[:-10]
    for _ in range(rounds):
        p = bytearray(body)
        for _ in range(rnd.randrange(1, 4)):
            p[rnd.randrange(len(p))] = rnd.randrange(256)
        yield with_valid_crc(bytes(p))


def rdb_len(n):
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def rdb_str(s):
    return rdb_len(len(s)) + s


def zl_entry(v, prev):
    """One ziplist entry (back length `prev`) in the smallest encoding, as Redis 6.2."""
    head = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
    if isinstance(v, int):
        if 0 <= v <= 12:
            enc = bytes([0xF1 + v])
        elif -128 <= v <= 127:
            enc = b"\xfe" + struct.pack("<b", v)
        elif -32768 <= v <= 32767:
            enc = b"\xc0" + struct.pack("<h", v)
        elif -(1 << 23) <= v < (1 << 23):
            enc = b"\xf0" + struct.pack("<i", v)[:3]
        elif -(1 << 31) <= v < (1 << 31):
            enc = b"\xd0" + struct.pack("<i", v)
        else:
            enc = b"\xe0" + struct.pack("<q", v)
    else:
        n = len(v)
        if n < 64:
            enc = bytes([n]) + v
        elif n < 16384:
            enc = bytes([0x40 | (n >> 8), n & 0xFF]) + v
        else:
            enc = b"\x80" + struct.pack(">I", n) + v
    return head + enc


def ziplist(values, count=None, tail=None, tail_fix=0):
    """A ziplist as Redis 3.2-6.2 wrote it. `count` and `tail` override the header's
    entry count and tail offset, `tail_fix` shifts the tail (to build damaged ones)."""
    body, prev, last = b"", 0, 10
    for v in values:
        last = 10 + len(body)
        e = zl_entry(v, prev)
        body += e
        prev = len(e)
    total = 10 + len(body) + 1
    n = min(len(values), 65535) if count is None else count
    t = (last if tail is None else tail) + tail_fix
    return struct.pack("<IIH", total, t, n) + body + b"\xff"


def read_len(b, i):
    """An RDB length at b[i]: (value, next position, is a special encoding)."""
    kind = b[i] >> 6
    if kind == 0:
        return b[i] & 63, i + 1, False
    if kind == 1:
        return ((b[i] & 63) << 8) | b[i + 1], i + 2, False
    if kind == 3:
        return b[i] & 63, i + 1, True
    width = 4 if b[i] == 0x80 else 8
    return int.from_bytes(b[i + 1:i + 1 + width], "big"), i + 1 + width, False


def skip_string(b, i):
    """The position after the RDB string at b[i] (plain, integer or LZF encoded)."""
    n, i, special = read_len(b, i)
    if not special:
        return i + n
    if n == 3:  # LZF: compressed length, original length, the bytes
        clen, i, _ = read_len(b, i)
        _, i, _ = read_len(b, i)
        return i + clen
    return i + {0: 1, 1: 2, 2: 4}[n]
