"""Streams and DUMP/RESTORE against redis-server 7.0.15: payloads (RDB type 19: the nodes'
listpacks, the counters, consumer groups with their pending entries and consumers) are
byte-identical for the same commands; a DUMP from either server RESTOREs into the other
and dumps back to the very same bytes (delivery and seen times included); the restored
stream then answers the same commands the same way; the pre-7.0 type 15 loads as Redis
loads it; damaged payloads are refused with Redis's errors, or load as a sound stream,
and the server keeps serving."""
import random

from dump_helpers import (assert_same_restore_verdicts, both, both_then_clean,
                          damaged_with_valid_crc, rdb_len, read_len, skip_string)
from resp_client import parse
from test_dump_restore import bulk, with_valid_crc
from test_streams_groups import masked


def stream_commands(rnd, key="src", groups=True):
    """Commands building a stream with varied IDs, fields, deletions, trims and groups."""
    cmds = []
    ms = rnd.choice([1, 1000, 1700000000000])
    fields = [[b"a"], [b"a", b"b"], [b"field%d" % i for i in range(5)], [b"1", b"-7"]]
    n = rnd.randrange(1, 400)
    for i in range(n):
        ms += rnd.choice([0, 1, 1, 3, 1000, 1 << 40])
        names = rnd.choice(fields)
        args = []
        for f in names:
            args += [f, rnd.choice([b"%d" % i, b"v" * rnd.randrange(0, 80), b"-123456789012",
                                    b"x%d" % rnd.randrange(10 ** 6)])]
        cmds.append(["XADD", key, "%d-*" % ms] + args)
    for _ in range(rnd.randrange(0, n // 3 + 1)):
        cmds.append(["XDEL", key, "%d-%d" % (ms - rnd.randrange(0, 10 ** 6), rnd.randrange(3))])
    if rnd.random() < 0.5:
        cmds.append(["XTRIM", key, "MAXLEN", rnd.choice(["~", "="]), str(rnd.randrange(0, n))])
    if rnd.random() < 0.3:
        cmds.append(["XSETID", key, "%d-5" % (ms + 10), "ENTRIESADDED", str(n + 7),
                     "MAXDELETEDID", "%d-0" % ms])
    if groups:
        for g in range(rnd.randrange(0, 4)):
            name = "g%d" % g
            cmds.append(["XGROUP", "CREATE", key, name, rnd.choice(["0", "$"])])
            for c in range(rnd.randrange(0, 4)):
                cmds.append(["XREADGROUP", "GROUP", name, "c%d" % c, "COUNT",
                             str(rnd.randrange(1, 50)), "STREAMS", key, ">"])
            cmds.append(["XGROUP", "CREATECONSUMER", key, name, "idle"])
    return cmds


def run(conn, cmds):
    for c in cmds:
        r = conn.call(*c)
        assert not r.startswith(b"-") or b"equal or smaller" in r, (c, r)


def test_dump_bytes_match_redis(redis_server, skein_server):
    ref, sk = both(redis_server, skein_server)
    rnd = random.Random(3)
    try:
        for trial in range(25):
            conf = [("stream-node-max-entries", str(rnd.choice([1, 2, 10, 100, 0]))),
                    ("stream-node-max-bytes", str(rnd.choice([1, 100, 4096, 0])))]
            cmds = stream_commands(rnd, groups=False)
            dumps = []
            for c in (ref, sk):
                for name, value in conf:
                    c.call("CONFIG", "SET", name, value)
                c.call("DEL", "src")
                run(c, cmds)
                dumps.append(c.call("DUMP", "src"))
            assert dumps[0] == dumps[1], (trial, conf)
    finally:
        for c in (ref, sk):
            c.call("CONFIG", "SET", "stream-node-max-entries", "100")
            c.call("CONFIG", "SET", "stream-node-max-bytes", "4096")
            c.call("DEL", "src", "dst")
            c.close()


PROBES = [
    ["XINFO", "STREAM", "dst", "FULL", "COUNT", "0"],
    ["XINFO", "GROUPS", "dst"],
    ["XLEN", "dst"],
    ["XRANGE", "dst", "-", "+"],
    ["XREVRANGE", "dst", "+", "-", "COUNT", "5"],
]


def after_restore(conn):
    """What the restored stream answers, then does (times masked)."""
    out = [masked(conn.call(*p)) for p in PROBES]
    groups = parse(conn.call("XINFO", "GROUPS", "dst"))
    for g in groups or []:
        name = g[1] if isinstance(g, list) else g[b"name"]
        out.append(masked(conn.call("XREADGROUP", "GROUP", name, "new", "STREAMS", "dst", ">")))
        out.append(masked(conn.call("XPENDING", "dst", name)))
        out.append(masked(conn.call("XAUTOCLAIM", "dst", name, "new", "0", "0", "JUSTID")))
    out.append(conn.call("XADD", "dst", "*", "z", "1")[:1])
    out.append(masked(conn.call("XTRIM", "dst", "MAXLEN", "3")))
    out.append(masked(conn.call("XINFO", "STREAM", "dst")).split(b"last-generated-id")[0])
    return out


def test_round_trips_both_ways_with_groups(redis_server, skein_server):
    rnd = random.Random(5)
    with both_then_clean(redis_server, skein_server, "src", "dst") as (ref, sk):
        for trial in range(20):
            cmds = stream_commands(rnd)
            for src, dst in ((ref, sk), (sk, ref)):
                for c in (ref, sk):
                    c.call("DEL", "src", "dst")
                run(src, cmds)
                payload = bulk(src.call("DUMP", "src"))
                for c in (ref, sk):
                    assert c.call("RESTORE", "dst", "0", payload) == b"+OK\r\n"
                # Dumped back to the same bytes, times and all.
                assert bulk(dst.call("DUMP", "dst")) == payload, trial
                assert after_restore(ref) == after_restore(sk), trial


def as_type_15(payload):
    """A type-19 stream payload rewritten as Redis 5/6's type 15: without the first ID,
    max deleted ID, entries added and each group's entries read."""
    b = payload[:-10]
    out = bytearray(b"\x0f")
    i = 1
    nodes, i, _ = read_len(b, i)
    start = i
    for _ in range(nodes * 2):
        i = skip_string(b, i)
    out += b[1:i]
    for _ in range(3):  # length, last id
        _, j, _ = read_len(b, i)
        out += b[i:j]
        i = j
    for _ in range(5):  # first id, max deleted id, entries added: dropped
        _, i, _ = read_len(b, i)
    ngroups, j, _ = read_len(b, i)
    out += b[i:j]
    i = j
    for _ in range(ngroups):
        j = skip_string(b, i)
        for _ in range(2):
            _, j, _ = read_len(b, j)
        out += b[i:j]
        _, i, _ = read_len(b, j)  # entries read: dropped
        pel, j, _ = read_len(b, i)
        for _ in range(pel):
            j += 16 + 8
            _, j, _ = read_len(b, j)
        consumers, j, _ = read_len(b, j)
        for _ in range(consumers):
            j = skip_string(b, j) + 8
            n, j, _ = read_len(b, j)
            j += 16 * n
        out += b[i:j]
        i = j
    assert i == len(b) and start > 0
    return with_valid_crc(bytes(out))


def test_type_15_loads_as_redis_loads_it(redis_server, skein_server):
    rnd = random.Random(8)
    with both_then_clean(redis_server, skein_server, "src", "dst") as (ref, sk):
        for trial in range(12):
            for c in (ref, sk):
                c.call("DEL", "src", "dst")
            run(ref, stream_commands(rnd))
            old = as_type_15(bulk(ref.call("DUMP", "src")))
            replies = [c.call("RESTORE", "dst", "0", old) for c in (ref, sk)]
            assert replies[0] == replies[1] == b"+OK\r\n", (trial, replies)
            assert ref.call("DUMP", "dst") == sk.call("DUMP", "dst"), trial
            assert after_restore(ref) == after_restore(sk), trial


def test_damaged_payloads(redis_server, skein_server):
    rnd = random.Random(9)
    with both_then_clean(redis_server, skein_server, "src", "dst") as (ref, sk):
        bodies = [b"\x13" + rdb_len(1) + b"\x05short", b"\x13\x00\x05", b"\x0f\x01",
                  b"\x13" + rdb_len(0) + rdb_len(1) + b"\x00" * 8]
        for body in bodies:
            a = ref.call("RESTORE", "dst", "0", with_valid_crc(body), "REPLACE")
            b = sk.call("RESTORE", "dst", "0", with_valid_crc(body), "REPLACE")
            assert b == b"-ERR Bad data format\r\n", (body, a, b)
        for trial in range(4):
            ref.call("DEL", "src")
            run(ref, stream_commands(rnd))
            payload = bulk(ref.call("DUMP", "src"))
            assert_same_restore_verdicts(ref, sk, payload, rnd)
            # The same damage under a recomputed checksum: Skein refuses or loads a sound
            # stream (Redis, without sanitize-dump-payload, loads more), never dies.
            for bad in damaged_with_valid_crc(payload, rnd, rounds=150):
                r = sk.call("RESTORE", "dst", "0", bad, "REPLACE")
                assert r in (b"+OK\r\n", b"-ERR Bad data format\r\n"), r
                if r == b"+OK\r\n" and sk.call("TYPE", "dst") == b"+stream\r\n":
                    for p in PROBES:
                        assert not sk.call(*p).startswith(b"-"), p
                    sk.call("XADD", "dst", "*", "f", "v")
                    sk.call("XTRIM", "dst", "MAXLEN", "1")
                    sk.call("XDEL", "dst", "0-1")
        assert sk.call("PING") == b"+PONG\r\n"


def test_appended_after_a_deleted_top_entry_round_trips(redis_server, skein_server):
    """XSETID below a deleted top entry, then XADD: the new entry follows the deleted one
    in its node, as in Redis; the payload loads (only live entries must ascend)."""
    cmds = [["XADD", "src", "1-0", "a", "1"], ["XADD", "src", "5-0", "a", "2"],
            ["XADD", "src", "6-0", "a", "3"], ["XDEL", "src", "5-0", "6-0"],
            ["XSETID", "src", "3-0"], ["XADD", "src", "4-0", "a", "4"]]
    with both_then_clean(redis_server, skein_server, "src", "dst") as (ref, sk):
        run(ref, cmds)
        payload = bulk(ref.call("DUMP", "src"))
        assert sk.call("RESTORE", "dst", "0", payload) == b"+OK\r\n"
        assert bulk(sk.call("DUMP", "dst")) == payload
        assert sk.call("XRANGE", "dst", "-", "+") == ref.call("XRANGE", "src", "-", "+")
