"""DUMP payload fuzzer: RESTORE damaged collection payloads into Skein and into a
redis-server 7.0.15 that validates them deeply (sanitize-dump-payload yes), then use
what was accepted.

The payloads start as DUMPs redis-server writes of every type and encoding (lists,
hashes, sets, sorted sets and streams, small and large, integers and strings, around the
conversion thresholds, streams with deleted entries, consumer groups, consumers and
pending entries), plus the older RDB types the same values had (ziplists, zipmap,
quicklist of ziplists, linked list, plain hash, zset and zset_2, stream type 15). Each is
changed (bits flipped, bytes set to edge values, lengths made wrong, chunks cut,
repeated or taken from another payload, the listpack / ziplist / intset inside rebuilt
with entries repeated, dropped, reordered, replaced or counted wrong) and given a valid
checksum. Where Redis refuses, Skein must refuse with the same error; where Redis
accepts, Skein must accept and then answer the same to every read of the type, DUMP,
RESTORE its own DUMP, DEBUG DIGEST-VALUE, writes that convert the encoding, and DEBUG
RELOAD. Skein must never log an internal error (a caught panic), stop, or send a
malformed reply.

    python3 tests/dump_fuzz.py --seed 1 --seeds 4 --count 5000

(`SKEIN_BIN` picks the binary; the debug build has overflow checks on.)"""
import argparse
import json
import os
import random
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dump_codec import (INTSET, LP, STREAM_LP, ZL, Reader,  # noqa: E402
                        intset_build, intset_items, lp_build, lp_items, old_forms, parse_body,
                        stream_parts, stream_tokens, write_body, zl_build, zl_items)
from resp_client import RawConn, parse  # noqa: E402
from test_dump_restore import crc64_jones  # noqa: E402

OK = b"+OK\r\n"
SANITIZE = ["--sanitize-dump-payload", "yes"]

# ---- the payloads redis-server writes ----

LIMITS = [("hash-max-listpack-entries", "128"), ("hash-max-listpack-value", "64"),
          ("zset-max-listpack-entries", "128"), ("zset-max-listpack-value", "64"),
          ("set-max-intset-entries", "512"), ("list-max-listpack-size", "-2"),
          ("list-compress-depth", "0"), ("stream-node-max-entries", "100"),
          ("stream-node-max-bytes", "4096")]
DEFAULTS = dict(LIMITS)

# Limits the RESTOREs run under, one profile at a time (both servers the same).
PROFILES = [{}, {"hash-max-listpack-entries": "4", "zset-max-listpack-entries": "4",
                 "set-max-intset-entries": "4", "list-max-listpack-size": "2"},
            {"hash-max-listpack-value": "3", "zset-max-listpack-value": "3",
             "list-compress-depth": "1"}]


def ints_and_strs(rnd, n, width=8, long=True):
    out = []
    for _ in range(n):
        out.append(rnd.choice([
            b"%d" % rnd.randrange(-200, 200), b"%d" % rnd.randrange(-(1 << 63), 1 << 63),
            b"%d" % rnd.choice([127, 128, 4095, 4096, -4096, -4097, 32767, -32769,
                                8388607, -8388609, 2 ** 31, -2 ** 31 - 1]),
            b"s" * rnd.randrange(0, width), bytes(rnd.randrange(256) for _ in range(5)),
            b"v%d" % rnd.randrange(1000),
            b"x" * rnd.choice([63, 64, 65, 4095, 4096] if long else [0, 1, 63])]))
    return out


def build_commands(rnd):
    """(config changes, commands, key) for each value to DUMP."""
    out = []
    for n, long in [(1, True), (2, True), (5, True), (20, True), (129, True), (600, True),
                    (3, False), (9, False), (40, False), (127, False), (140, False)]:
        els = ints_and_strs(rnd, n, long=long)
        out.append(([], [["RPUSH", "k"] + els], "k"))
        out.append(([("list-compress-depth", "1"), ("list-max-listpack-size", "4")],
                    [["RPUSH", "k"] + els], "k"))
        out.append(([], [["RPUSH", "k", "a", b"z" * 9000] + els[:3]], "k"))  # plain node
        uniq = list(dict.fromkeys(els))
        pairs = [x for i, f in enumerate(uniq) for x in (f, els[i % len(els)])]
        out.append(([], [["HSET", "k"] + pairs], "k"))
        out.append(([], [["SADD", "k"] + els], "k"))
        nums = [b"%d" % rnd.choice([rnd.randrange(-100, 100), rnd.randrange(-(1 << 40), 1 << 40),
                                    rnd.randrange(-(1 << 63), 1 << 63)]) for _ in range(n)]
        out.append(([], [["SADD", "k"] + nums], "k"))
        scored = []
        for m in uniq:
            scored += [rnd.choice([b"1", b"-2.5", b"inf", b"-inf", b"0", b"1e300",
                                   b"%d" % rnd.randrange(1000), b"3.14159"]), m]
        out.append(([], [["ZADD", "k"] + scored], "k"))
    for n in (1, 3, 12, 150):
        out.append(([("stream-node-max-entries", rnd.choice(["2", "5", "100"]))],
                    stream_commands(rnd, n), "k"))
    dels = [["XADD", "k", "%d-%d" % (1 + i // 3, i % 3), "a", str(i), "b", "x" * (i % 5)]
            for i in range(30)]
    dels += [["XDEL", "k", "%d-%d" % (1 + i // 3, i % 3)] for i in range(0, 30, 4)]
    dels += [["XGROUP", "CREATE", "k", "g", "0"],
             ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", "k", ">"],
             ["XREADGROUP", "GROUP", "g", "c2", "COUNT", "3", "STREAMS", "k", ">"],
             ["XACK", "k", "g", "1-1"], ["XDEL", "k", "1-2"]]
    out.append(([("stream-node-max-entries", "7")], dels, "k"))
    out.append(([], [["XGROUP", "CREATE", "k", "g", "$", "MKSTREAM"]], "k"))
    out.append(([], [["XADD", "k", "1-1", "a", "1"], ["XDEL", "k", "1-1"],
                     ["XGROUP", "CREATE", "k", "g", "0"]], "k"))
    return out


def stream_commands(rnd, n):
    cmds, ms = [], rnd.choice([1, 1000, 1700000000000])
    fields = [[b"a"], [b"a", b"b"], [b"f%d" % i for i in range(4)], [b"1", b"-7"]]
    for i in range(n):
        ms += rnd.choice([0, 1, 3, 1 << 40])
        args = []
        for f in rnd.choice(fields):
            args += [f, rnd.choice([b"%d" % i, b"v" * rnd.randrange(0, 40), b"-123456789012"])]
        cmds.append(["XADD", "k", "%d-*" % ms] + args)
    for _ in range(rnd.randrange(0, n // 2 + 1)):
        cmds.append(["XDEL", "k", "%d-%d" % (ms - rnd.randrange(0, 1 << 41), rnd.randrange(3))])
    for g in range(rnd.randrange(1, 4)):
        cmds.append(["XGROUP", "CREATE", "k", "g%d" % g, rnd.choice(["0", "$"])])
        for c in range(rnd.randrange(0, 4)):
            cmds.append(["XREADGROUP", "GROUP", "g%d" % g, "c%d" % c, "COUNT",
                         str(rnd.randrange(1, 5)), "STREAMS", "k", ">"])
        cmds.append(["XGROUP", "CREATECONSUMER", "k", "g%d" % g, "idle"])
        cmds.append(["XACK", "k", "g%d" % g, "%d-0" % ms])
    if rnd.random() < 0.5:
        cmds.append(["XSETID", "k", "%d-5" % (ms + 10), "ENTRIESADDED", str(n + 7),
                     "MAXDELETEDID", "%d-0" % ms])
    return cmds


def corpus(conn, seed=0):
    """Bodies (payloads without the footer) of every kind of value."""
    rnd = random.Random(seed)
    bodies = []
    for conf, cmds, key in build_commands(rnd):
        for name, value in conf:
            conn.call("CONFIG", "SET", name, value)
        conn.call("DEL", key)
        for c in cmds:
            conn.call(*c)
        raw = conn.call("DUMP", key)
        if raw.startswith(b"$") and not raw.startswith(b"$-1"):
            bodies.append(parse(raw)[:-10])
        for name, _ in conf:
            conn.call("CONFIG", "SET", name, DEFAULTS[name])
        conn.call("DEL", key)
    for b in list(bodies):
        toks = parse_body(b)
        if toks:
            bodies += [write_body(t) for t in old_forms(toks)]
    return bodies


def with_footer(body):
    data = body + b"\x0a\x00"
    return data + crc64_jones(data).to_bytes(8, "little")


# ---- changing a payload ----

EDGE_BYTES = [0, 0xFF, 0x7F, 0x80, 0x01, 0xFE, 0x40, 0xC0, 0x3F, 0xF0]
EDGE_LENS = [0, 1, 2, 63, 64, 127, 128, 255, 16383, 16384, 65535, 65536, 1 << 63,
             (1 << 64) - 1]
# Counts Redis would allocate for (a table of 2^32 slots takes it 13 s): seldom.
SLOW_LENS = [1 << 31, (1 << 32) - 1, 1 << 32]


def edge_len(rnd):
    return rnd.choice(SLOW_LENS if rnd.random() < 0.01 else EDGE_LENS)
EDGE_INTS = [0, 1, -1, 12, 13, 127, 128, -128, 4095, 4096, -4096, -4097, 32767, -32768,
             8388607, -8388608, 2 ** 31 - 1, -2 ** 31, 2 ** 63 - 1, -2 ** 63]
EDGE_STRS = [b"", b"a", b"0", b"-0", b"01", b" 1", b"1.5", b"inf", b"-inf", b"nan",
             b"9223372036854775808", b"x" * 64, b"y" * 4096, b"\x00\xff"]


def mutate_bytes(rnd, b, others):
    b = bytearray(b)
    if not b:
        return bytes(b)
    op = rnd.randrange(7)
    i = rnd.randrange(len(b))
    if op == 0:
        for _ in range(rnd.randrange(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    elif op == 1:
        b[i] = rnd.choice(EDGE_BYTES)
    elif op == 2:
        del b[i:i + rnd.randrange(1, 9)]
    elif op == 3:
        j = rnd.randrange(i, min(len(b), i + 32) + 1)
        b[j:j] = b[i:j]
    elif op == 4:
        o = rnd.choice(others)
        if o:
            k = rnd.randrange(len(o))
            b[i:i + rnd.randrange(0, 16)] = o[k:k + rnd.randrange(1, 24)]
    elif op == 5:
        del b[i:]
    else:
        b[i:i + 4] = struct.pack("<I", edge_len(rnd) & 0xFFFFFFFF)
    return bytes(b)


def mutate_items(rnd, items, others_items):
    items = list(items)
    op = rnd.randrange(9)
    if not items:
        return items + [rnd.choice(EDGE_STRS)]
    i = rnd.randrange(len(items))
    if op == 0:
        items.insert(rnd.randrange(len(items) + 1), items[i])
    elif op == 1:
        del items[i]
    elif op == 2:
        j = rnd.randrange(len(items))
        items[i], items[j] = items[j], items[i]
    elif op == 3:
        items.reverse()
    elif op == 4:
        items[i] = rnd.choice(EDGE_INTS)
    elif op == 5:
        items[i] = rnd.choice(EDGE_STRS)
    elif op == 6:
        v = items[i]
        items[i] = v + rnd.choice([-1, 1, 1 << 20]) if isinstance(v, int) else v + b"\x00"
    elif op == 7 and others_items:
        o = rnd.choice(others_items)
        if o:
            k = rnd.randrange(len(o))
            items[i:i + rnd.randrange(0, 3)] = o[k:k + rnd.randrange(1, 4)]
    else:
        del items[i:i + 2]
    return items


def mutate_blob(rnd, blob, kind, pool):
    """A listpack, ziplist or intset rebuilt with its entries changed (or its header
    wrong); else the bytes changed."""
    if kind in (LP, STREAM_LP):
        items = lp_items(blob)
        if items is not None:
            if rnd.random() < 0.8:
                items = mutate_items(rnd, items, pool.get(kind))
            count = None if rnd.random() < 0.85 else rnd.choice([0, 1, len(items) + 1, 65535])
            return lp_build(items, count=count, canonical=rnd.random() < 0.85,
                            total_fix=0 if rnd.random() < 0.95 else rnd.choice([-1, 1]),
                            wide=rnd if rnd.random() < 0.15 else None)
    elif kind == ZL:
        items = zl_items(blob)
        if items is not None:
            items = mutate_items(rnd, items, pool.get(kind))
            count = None if rnd.random() < 0.85 else rnd.choice([0, 1, len(items) + 1])
            return zl_build(items, count=count)
    elif kind == INTSET:
        got = intset_items(blob)
        if got is not None:
            vals, width = got
            vals = [v if isinstance(v, int) else 7 for v in mutate_items(rnd, vals, None)]
            vals = [max(-(1 << 63), min((1 << 63) - 1, v)) for v in vals]
            w = None if rnd.random() < 0.8 else rnd.choice([2, 4, 8, width])
            count = None if rnd.random() < 0.9 else len(vals) + rnd.choice([-1, 1])
            return intset_build(vals, width=w, count=count)
    return mutate_bytes(rnd, blob, [blob])


def mutate_tokens(rnd, toks, pool):
    toks = list(toks)
    idx = [i for i in range(1, len(toks))]
    if not idx:
        return toks
    op = rnd.randrange(8)
    i = rnd.choice(idx)
    tok = toks[i]
    if op in (0, 1) and any(t[0] == "str" and t[2] for t in toks[1:]):
        i = rnd.choice([k for k in idx if toks[k][0] == "str" and toks[k][2]])
        toks[i] = ("str", mutate_blob(rnd, toks[i][1], toks[i][2], pool), toks[i][2])
    elif op == 2 and tok[0] == "len":
        n = tok[1]
        toks[i] = ("len", edge_len(rnd) if rnd.random() < 0.6 else
                   rnd.choice([max(n - 1, 0), n + 1, 2 * n]))
    elif op == 3:
        j = rnd.choice(idx)
        toks[i], toks[j] = toks[j], toks[i]
    elif op == 4:
        toks.insert(i, toks[i])
    elif op == 5:
        del toks[i]
    elif op == 6 and tok[0] == "raw":
        b = bytearray(tok[1])
        b[rnd.randrange(len(b))] = rnd.choice(EDGE_BYTES)
        toks[i] = ("raw", bytes(b))
    elif tok[0] == "str":
        alt = pool.get("str-%s" % tok[2], [])
        toks[i] = ("str", rnd.choice(alt) if alt and rnd.random() < 0.5
                   else rnd.choice(EDGE_STRS), tok[2])
    else:
        toks.insert(i, ("len", edge_len(rnd)))
    return toks


def raw_id(ms, seq):
    return struct.pack(">QQ", ms & ((1 << 64) - 1), seq & ((1 << 64) - 1))


def entry_ids(s, live_only=False):
    """Raw IDs of the entries a stream's nodes hold (master ID plus deltas), in order
    (deleted ones too, unless `live_only`)."""
    ids = []
    for key, lp in s["nodes"]:
        items = lp_items(lp)
        if items is None or len(key) != 16:
            continue
        ms, seq = struct.unpack(">QQ", key)
        try:
            nfields = items[2]
            i = 3 + nfields + 1
            while i < len(items):
                flags = items[i]
                if not (live_only and flags & 1):
                    ids.append(raw_id(ms + items[i + 1], seq + items[i + 2]))
                if flags & 2:  # same fields as the master entry
                    i += 3 + nfields + 1
                else:
                    i += 4 + 2 * items[i + 3] + 1
        except (IndexError, TypeError):
            continue
    return ids


def mutate_stream(rnd, toks):
    """A stream changed where its parts must agree: counters, IDs, groups, pending
    entries and their consumers (the counts kept right)."""
    s = stream_parts(toks)
    if s is None:
        return toks
    ids = entry_ids(s) or [raw_id(0, 1)]
    groups = s["groups"]
    c = s["counters"]
    op = rnd.randrange(12)
    edge = [0, 1, (1 << 64) - 1, (1 << 63), 1 << 32]
    if op == 0:
        c[0] = rnd.choice([max(c[0] - 1, 0), c[0] + 1, 0, len(ids)] + edge)
    elif op == 1:
        k = rnd.randrange(len(c))
        c[k] = rnd.choice(edge + [c[k] - 1 if c[k] else 0, c[k] + 1])
    elif op == 2:  # the last ID below an entry
        ms, seq = struct.unpack(">QQ", rnd.choice(ids))
        c[1], c[2] = ms, max(seq - 1, 0)
    elif op == 3 and len(s["nodes"]) > 1:
        rnd.shuffle(s["nodes"])
    elif op == 4 and s["nodes"]:
        n = rnd.choice(s["nodes"])
        n[0] = rnd.choice(ids + [raw_id(0, 0), raw_id(-1, -1)])
    elif groups:
        g = rnd.choice(groups)
        cons = g["consumers"]
        if op == 5:
            g["last"] = list(struct.unpack(">QQ", rnd.choice(ids))) if rnd.random() < 0.5 \
                else [rnd.choice(edge), rnd.choice(edge)]
        elif op == 6 and "read" in g:
            g["read"] = rnd.choice(edge + [g["read"] + 1, len(ids) + 5])
        elif op == 7:  # a pending entry (and its owner) for another ID
            pid = rnd.choice(ids + [raw_id(0, 0), raw_id(1 << 62, 0)])
            g["pel"].append([pid, struct.pack("<q", rnd.choice([0, -1, 1 << 62])),
                             rnd.choice([0, 1, (1 << 64) - 1])])
            if cons and rnd.random() < 0.8:
                rnd.choice(cons)[2].append(pid)
            g["pel"].sort(key=lambda e: e[0]) if rnd.random() < 0.7 else None
        elif op == 8 and cons:  # an owned ID moved to, or shared with, another consumer
            a, b = rnd.choice(cons), rnd.choice(cons)
            if a[2]:
                pid = rnd.choice(a[2])
                if rnd.random() < 0.5:
                    a[2].remove(pid)
                b[2].append(pid)
        elif op == 9 and cons:  # a consumer dropped, or named like another
            k = rnd.randrange(len(cons))
            if rnd.random() < 0.5:
                del cons[k]
            else:
                cons[k][0] = rnd.choice(cons)[0] if rnd.random() < 0.5 else b""
        elif op == 10:
            if rnd.random() < 0.5 and len(groups) > 1:
                g["name"] = rnd.choice(groups)["name"]
            else:
                g["name"] = rnd.choice([b"", b"g\x00", b"x" * 300])
        elif g["pel"]:
            e = rnd.choice(g["pel"])
            if rnd.random() < 0.5:
                g["pel"].remove(e)
            else:
                e[2] = rnd.choice(edge)
    return stream_tokens(s)


def blob_pool(bodies):
    """Strings of each kind found in the corpus ("str-KIND", to splice), and the entries
    of those that decode (KIND)."""
    pool = {}
    decoders = {LP: lp_items, STREAM_LP: lp_items, ZL: zl_items}
    for b in bodies:
        for tok in parse_body(b) or []:
            if tok[0] != "str":
                continue
            pool.setdefault("str-%s" % tok[2], []).append(tok[1])
            items = decoders[tok[2]](tok[1]) if tok[2] in decoders else None
            if items is not None:
                pool.setdefault(tok[2], []).append(items)
    return pool


def mutate(rnd, body, bodies, pool):
    """One changed body (1-3 changes, at the byte, token or entry level)."""
    for _ in range(rnd.choice([1, 1, 1, 2, 3])):
        toks = parse_body(body)
        if toks is not None and rnd.random() < 0.7:
            if toks[0][1] in (15, 19) and rnd.random() < 0.5:
                toks = mutate_stream(rnd, toks)
            elif rnd.random() < 0.08:
                toks[0] = ("type", rnd.choice([0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14,
                                               15, 16, 17, 18, 19, 20, 21]))
            else:
                toks = mutate_tokens(rnd, toks, pool)
            body = write_body(toks)
        else:
            body = mutate_bytes(rnd, body, bodies)
    return body


# ---- replies ----

def well_formed(raw):
    """True when `raw` is exactly one complete RESP reply."""
    try:
        return _end(raw, 0) == len(raw)
    except (ValueError, IndexError):
        return False


def _end(raw, pos):
    eol = raw.index(b"\r\n", pos)
    t, head = raw[pos:pos + 1], raw[pos + 1:eol]
    if t in b"+-":
        return eol + 2
    if t in (b":", b"("):
        int(head)
        return eol + 2
    if t in (b"_", b",", b"#"):
        return eol + 2
    if t in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return eol + 2
        end = eol + 2 + n
        if raw[end:end + 2] != b"\r\n":
            raise ValueError("bulk without CRLF")
        return end + 2
    if t in (b"*", b"~", b">", b"%"):
        n = int(head)
        p = eol + 2
        for _ in range(max(n, 0) * (2 if t == b"%" else 1)):
            p = _end(raw, p)
        return p
    raise ValueError("type %r" % t)


def masked(raw):
    """Times a reply reports that depend on the clock (idle times, delivery times set by
    this run's reads), and pending rows' idle times, replaced."""
    from test_streams_groups import masked as stream_masked

    return stream_masked(raw)


def as_multiset(raw):
    v = parse(raw)
    if isinstance(v, list):
        return sorted(repr(x) for x in v)
    return v


def as_pairs(raw):
    v = parse(raw)
    if isinstance(v, list) and v and isinstance(v[0], tuple) and v[0][0] != "err":
        return sorted(repr(kv) for kv in v)  # a RESP3 map
    if isinstance(v, list):
        return sorted(repr(v[i:i + 2]) for i in range(0, len(v), 2))
    if isinstance(v, dict):
        return sorted(repr(kv) for kv in v.items())
    return v


def scanned(raw):
    """A SCAN-family reply as its cursor and the multiset of what it returned."""
    v = parse(raw)
    if isinstance(v, list) and len(v) == 2 and isinstance(v[1], list):
        return v[0], sorted(repr(x) for x in v[1])
    return v


def size_of(raw):
    v = parse(raw)
    return len(v) if isinstance(v, list) else v


def first_of(conn, *cmd):
    v = parse(conn.call(*cmd))
    while isinstance(v, (list, tuple)) and v:
        v = v[0]
    return v if isinstance(v, bytes) else b"x"


# Per type: (command, how its replies compare). "exact" byte for byte, "set" as a
# multiset, "pairs" as a multiset of pairs, "size" only the count, "kind" the reply type.
def reads(kind, conn):
    k = "k"
    if kind == b"list":
        e = first_of(conn, "LRANGE", k, "1", "1")
        return [(["LLEN", k], "exact"), (["LRANGE", k, "0", "-1"], "exact"),
                (["LINDEX", k, "0"], "exact"), (["LINDEX", k, "-1"], "exact"),
                (["LINDEX", k, "3"], "exact"), (["LRANGE", k, "-3", "2"], "exact"),
                (["LPOS", k, e, "COUNT", "0"], "exact"), (["LPOS", k, "1", "RANK", "-1"], "exact"),
                (["SORT", k, "ALPHA", "LIMIT", "0", "20"], "exact"),
                (["LRANGE", k, "-100", "100"], "exact")]
    if kind == b"hash":
        f = first_of(conn, "HKEYS", k)
        return [(["HLEN", k], "exact"), (["HGETALL", k], "pairs"), (["HKEYS", k], "set"),
                (["HVALS", k], "set"), (["HGET", k, f], "exact"), (["HSTRLEN", k, f], "exact"),
                (["HEXISTS", k, "1"], "exact"), (["HMGET", k, f, "0", ""], "exact"),
                (["HRANDFIELD", k, "-5", "WITHVALUES"], "size"),
                (["HRANDFIELD", k, "3"], "size"), (["HRANDFIELD", k], "kind"),
                (["HSCAN", k, "0", "COUNT", "1000"], "scan")]
    if kind == b"set":
        m = first_of(conn, "SMEMBERS", k)
        return [(["SCARD", k], "exact"), (["SMEMBERS", k], "set"),
                (["SISMEMBER", k, m], "exact"), (["SMISMEMBER", k, "1", m, "-1"], "exact"),
                (["SRANDMEMBER", k, "-5"], "size"), (["SRANDMEMBER", k, "3"], "size"),
                (["SINTER", k, k], "set"), (["SSCAN", k, "0", "COUNT", "1000"], "scan"),
                (["SORT", k, "ALPHA"], "set"), (["SINTERCARD", "1", k], "exact"), (["COPY", k, "k3"], "exact"), (["SPOP", "k3"], "kind"),
                (["SCARD", "k3"], "exact"), (["DEL", "k3"], "exact")]
    if kind == b"zset":
        m = first_of(conn, "ZRANGE", k, "0", "0")
        return [(["ZCARD", k], "exact"), (["ZRANGE", k, "0", "-1", "WITHSCORES"], "exact"),
                (["ZREVRANGE", k, "0", "2", "WITHSCORES"], "exact"),
                (["ZRANGEBYLEX", k, "-", "+"], "exact"),
                (["ZRANGEBYSCORE", k, "-inf", "+inf", "WITHSCORES"], "exact"),
                (["ZCOUNT", k, "0", "10"], "exact"), (["ZLEXCOUNT", k, "-", "+"], "exact"),
                (["ZSCORE", k, m], "exact"), (["ZRANK", k, m], "exact"),
                (["ZMSCORE", k, m, "1"], "exact"),
                (["ZRANDMEMBER", k, "-3", "WITHSCORES"], "size"),
                (["ZRANDMEMBER", k, "2"], "size"), (["ZSCAN", k, "0", "COUNT", "1000"], "scan"),
                (["ZREVRANGEBYSCORE", k, "+inf", "-inf", "LIMIT", "1", "3"], "exact"),
                (["ZRANGESTORE", "k3", k, "0", "-1"], "exact"),
                (["ZRANGE", "k3", "0", "-1", "WITHSCORES"], "exact"),
                (["ZUNIONSTORE", "k3", "2", k, k], "exact"),
                (["ZRANGE", "k3", "0", "-1", "WITHSCORES"], "exact"), (["DEL", "k3"], "exact")]
    if kind == b"stream":
        groups = parse(conn.call("XINFO", "GROUPS", k))
        out = [(["XLEN", k], "exact"), (["XRANGE", k, "-", "+"], "exact"),
               (["XREVRANGE", k, "+", "-", "COUNT", "5"], "exact"),
               (["XRANGE", k, "-", "+", "COUNT", "1"], "exact"),
               (["XINFO", "STREAM", k], "masked"), (["XINFO", "STREAM", k, "FULL"], "masked"),
               (["XINFO", "GROUPS", k], "masked")]
        for g in groups if isinstance(groups, list) else []:
            if g and isinstance(g, list) and isinstance(g[0], tuple):  # a RESP3 map
                g = [x for kv in g for x in kv]
            name = g[1] if isinstance(g, list) and len(g) > 1 else b"g"
            out += [(["XINFO", "CONSUMERS", k, name], "masked"),
                    (["XPENDING", k, name], "masked"),
                    (["XPENDING", k, name, "-", "+", "10"], "masked"),
                    (["XPENDING", k, name, "IDLE", "0", "-", "+", "10", "c0"], "masked"),
                    (["XREADGROUP", "GROUP", name, "new", "COUNT", "3", "STREAMS", k, "0"],
                     "masked"),
                    (["XREADGROUP", "GROUP", name, "new", "COUNT", "3", "STREAMS", k, ">"],
                     "masked"),
                    (["XAUTOCLAIM", k, name, "c9", "0", "0-0", "COUNT", "10"], "masked"),
                    (["XCLAIM", k, name, "c8", "0", "0-1", "1-1", "FORCE"], "masked"),
                    (["XINFO", "STREAM", k, "FULL"], "masked"),
                    (["XCLAIM", k, name, "c0", "0", "0-0", "1-0", "99999999999999-0",
                      "RETRYCOUNT", "7", "JUSTID"], "masked"),
                    (["XACK", k, name, "0-1", "1-0"], "exact"),
                    (["XGROUP", "DELCONSUMER", k, name, "c1"], "exact"),
                    (["XGROUP", "SETID", k, name, "0", "ENTRIESREAD", "3"], "exact"),
                    (["XINFO", "GROUPS", k], "masked")]
        out += [(["XINFO", "STREAM", k, "FULL", "COUNT", "2"], "masked"),
                (["XREAD", "COUNT", "3", "STREAMS", k, "0"], "exact")]
        return out
    return [(["GET", k], "exact"), (["STRLEN", k], "exact")]


def writes(kind):
    k = "k"
    long = "L" * 70
    if kind == b"list":
        return [["LPUSH", k, "x", "12"], ["RPUSH", k, long], ["LINSERT", k, "BEFORE", "x", "y"],
                ["LSET", k, "1", "z"], ["LREM", k, "1", "x"], ["RPOP", k], ["LPOP", k],
                ["LTRIM", k, "0", "50"], ["LRANGE", k, "0", "-1"]]
    if kind == b"hash":
        return [["HSET", k, "nf", "nv", "1", "2"], ["HINCRBY", k, "n", "5"],
                ["HSET", k, long, "v"], ["HDEL", k, "nf"], ["HLEN", k]]
    if kind == b"set":
        return [["SADD", k, "5", "-9223372036854775808"], ["SREM", k, "5"],
                ["SADD", k, "m", long], ["SCARD", k]]
    if kind == b"zset":
        return [["ZADD", k, "1.5", "nm", "-inf", "lo"], ["ZINCRBY", k, "2", "nm"],
                ["ZADD", k, "3", long], ["ZREM", k, "lo"], ["ZPOPMIN", k],
                ["ZRANGE", k, "0", "-1", "WITHSCORES"]]
    if kind == b"stream":
        return [["XADD", k, "99999999999999-*", "f", "v"], ["XTRIM", k, "MAXLEN", "2"],
                ["XRANGE", k, "-", "+"], ["XDEL", k, "99999999999999-0"],
                ["XGROUP", "CREATE", k, "gn", "0"], ["XINFO", "STREAM", k, "FULL"]]
    return [["APPEND", k, "x"]]


STRICT_SCORE = re.compile(rb"[+-]?inf|-?[0-9+.eE-]+")


def strict_score(s):
    """A score as Skein's loader reads one stored as text (parse_stored_score)."""
    if isinstance(s, int):
        return True
    if not STRICT_SCORE.fullmatch(s) or s.lower() in (b"inf", b"+inf", b"-inf") and s not in (
            b"inf", b"+inf", b"-inf"):
        return False
    try:
        return float(s) == float(s)
    except ValueError:
        return False


def score_value(v):
    return float(v) if isinstance(v, int) else float(v.replace(b"+inf", b"inf"))


def zset_in_order(items):
    """Member/score pairs sorted by score, then member bytes (as Redis writes them)."""
    pairs = [(score_value(items[k + 1]), b"%d" % items[k] if isinstance(items[k], int)
              else items[k]) for k in range(0, len(items) - 1, 2)]
    return all(a < b for a, b in zip(pairs, pairs[1:]))


def node_counts(lp):
    """(live count, deleted count, entries flagged deleted) of a stream node, or None."""
    items = lp_items(lp)
    try:
        count, deleted, nfields = items[0], items[1], items[2]
        i, flagged = 3 + nfields + 1, 0
        while i < len(items):
            flags = items[i]
            flagged += flags & 1
            i += 3 + nfields + 1 if flags & 2 else 4 + 2 * items[i + 3] + 1
        return count, deleted, flagged
    except (IndexError, TypeError):
        return None


def ids_ascending(s):
    """Every live entry's ID at or after its node's key and above the one before, the
    nodes taken in key order (IDs wrap as Redis's uint64 sums do), none above the stream's
    last ID."""
    prev = None
    for key, lp in sorted(s["nodes"], key=lambda n: n[0]):
        if len(key) != 16:
            continue
        for rid in entry_ids({"nodes": [[key, lp]]}, live_only=True):
            if rid < key or (prev is not None and rid <= prev):
                return False
            prev = rid
    return prev is None or prev <= raw_id(s["counters"][1], s["counters"][2])


def count_unknown(body):
    """Does a listpack in the body give its count as unknown (65535) though it holds
    fewer? Redis dumps that header as it is until a command counts; Skein fills it in."""
    for tok in parse_body(with_footer(body), trailing=True,
                          reader=Reader(with_footer(body), lenient=True)) or []:
        if tok[0] == "str" and tok[2] in (LP, STREAM_LP) and tok[1][4:6] == b"\xff\xff":
            items = lp_items(tok[1])
            if items is not None and len(items) < 65535:
                return True
    return False


def deliberately_refused(body):
    """Payloads Redis 7.0.15 accepts (even sanitizing) that Skein refuses on purpose, as
    docs/compat/*.md records: sorted-set scores stored as text that are not numbers
    (Redis reads them with strtod / sscanf, taking a prefix or 0); a sorted-set listpack
    or ziplist out of order; a stream whose length is not its nodes' live entries, a
    node whose deleted flags disagree with its deleted count or whose listpack header
    miscounts its elements, entry IDs out of order (or before their node's key), a length
    of no known encoding where Redis's stream loader takes RDB_LENERR (2^64-1) as the
    value."""
    payload = with_footer(body)
    reader = Reader(payload, lenient=body[:1] in (b"\x0f", b"\x13"))
    toks = parse_body(payload, trailing=True, reader=reader)
    if toks is None:
        return False
    if reader.lenient_used:
        return True
    t = toks[0][1]
    if t in (12, 17):
        items = (zl_items if t == 12 else lp_items)(toks[1][1]) or []
        if not all(strict_score(v) for v in items[1::2]):
            return True
        return not zset_in_order(items)
    if t == 3:
        return not all(strict_score(tok[1][1:]) for tok in toks[2:] if tok[0] == "raw"
                       and tok[1][0] < 253)
    if t in (15, 19):
        s = stream_parts(toks)
        if s is None:
            return False
        for _, lp in s["nodes"]:
            items = lp_items(lp)
            header = struct.unpack("<H", lp[4:6])[0] if len(lp) >= 6 else None
            if items is not None and header not in (len(items), 65535):
                return True
        if not ids_ascending(s):
            return True
        counts = [node_counts(lp) for _, lp in s["nodes"]]
        if any(c is not None and c[1] != c[2] for c in counts):
            return True
        return None not in counts and sum(max(c[0], 0) for c in counts) != s["counters"][0]
    return False


class Divergence(Exception):
    pass


class RedisTrouble(Exception):
    """The reference did not answer in time (a count it allocates for, say)."""


class Fuzzer:
    def __init__(self, ref_port, sk_port, reload_every=1, sk_log=None):
        self.ref_port, self.sk_port = ref_port, sk_port
        self.sk_log = sk_log
        self.log_seen = 0
        self.ref, self.sk = RawConn(ref_port, timeout=60), RawConn(sk_port)
        self.reload_every = reload_every
        self.proto = 2
        self.last_cmd = None
        self.dump_bytes_comparable = True
        self.profile = {}
        self.restart_ref = None  # a callable starting a new reference, returning its port
        self.redis_crashes = []
        self.stats = {"payloads": 0, "refused": 0, "accepted": 0, "skein_only": 0,
                      "deliberate": 0}
        self.failures = []

    def close(self):
        self.ref.close()
        self.sk.close()

    def both(self, *cmd):
        self.last_cmd = cmd
        try:
            a = self.ref.call(*cmd)
        except (socket.timeout, ConnectionError, OSError) as e:
            raise RedisTrouble(e)
        try:
            b = self.sk.call(*cmd)
        except (socket.timeout, ConnectionError, OSError, ValueError) as e:
            raise Divergence("skein gave no reply to %r: %r" % (cmd[:4], e))
        if not well_formed(b):
            raise Divergence("malformed reply to %r: %r" % (cmd[:4], b[:200]))
        return a, b

    def same(self, cmd, rule="exact"):
        a, b = self.both(*cmd)
        if rule == "kind":
            ok = a[:1] == b[:1]
        else:
            conv = {"exact": lambda x: x, "set": as_multiset, "pairs": as_pairs,
                    "size": size_of, "masked": masked, "scan": scanned}[rule]
            ok = conv(a) == conv(b)
        if not ok:
            raise Divergence("%r differs:\n   redis %r\n   skein %r" % (cmd, a[:300], b[:300]))
        return a

    def set_proto(self, proto):
        """RESP2 or RESP3 on both connections (kept over reconnects)."""
        self.proto = proto
        self.ref.call("HELLO", str(proto))
        self.sk.call("HELLO", str(proto))

    def set_profile(self, profile):
        self.profile = profile
        for name, value in LIMITS:
            v = profile.get(name, value)
            self.ref.call("CONFIG", "SET", name, v)
            self.sk.call("CONFIG", "SET", name, v)

    def check(self, body, options=()):
        """RESTORE `body` on both; a description of what went wrong, or None."""
        why = self.check_replies(body, options)
        problems = self.new_log_problems()
        if problems:
            why = (why + "\n" if why else "") + "skein log: " + " | ".join(problems[:3])
        return why

    def new_log_problems(self):
        """Internal errors (caught panics) Skein logged since the last look."""
        if not self.sk_log:
            return []
        with open(self.sk_log, "rb") as f:
            f.seek(self.log_seen)
            text = f.read()
        self.log_seen += len(text)
        return [line.decode(errors="replace") for line in text.splitlines()
                if b"internal error" in line or b"panicked" in line]

    def check_replies(self, body, options):
        self.stats["payloads"] += 1
        payload = with_footer(body)
        try:
            self.ref.call("DEL", "k", "k2", "k3")
            self.sk.call("DEL", "k", "k2", "k3")
            a, b = self.both("RESTORE", "k", "0", payload, "REPLACE", *options)
            if a != OK:
                self.stats["refused"] += 1
                if b == OK:
                    self.stats["skein_only"] += 1
                    raise Divergence("skein accepts what redis refuses (%r)" % a)
                if a != b:
                    raise Divergence("refusals differ: redis %r, skein %r" % (a, b))
                return None
            if b != OK:
                if deliberately_refused(body):
                    self.stats["deliberate"] += 1
                    return None
                raise Divergence("skein refuses what redis accepts: %r" % b)
            self.stats["accepted"] += 1
            self.dump_bytes_comparable = not count_unknown(body)
            self.stats["type%d" % body[0]] = self.stats.get("type%d" % body[0], 0) + 1
            self.exercise()
            return None
        except Divergence as d:
            return str(d)
        except RedisTrouble:
            self.stats["redis_slow"] = self.stats.get("redis_slow", 0) + 1
            if self.restart_ref and not self.ref_alive():
                # Redis itself died on this payload: noted, not Skein's failure.
                self.redis_crashes.append((body, options, self.last_cmd))
                print("redis-server died on %r after RESTORE of %s %s"
                      % (self.last_cmd, body.hex(), " ".join(options)), flush=True)
                self.ref_port = self.restart_ref()
                self.reconnect()
                self.set_profile(self.profile)
                return None
            self.reconnect()
            return None

    def ref_alive(self):
        """Does the reference answer PING (within 60 s)?"""
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = RawConn(self.ref_port, timeout=60)
                ok = c.call("PING") == b"+PONG\r\n"
                c.close()
                return ok
            except ConnectionRefusedError:
                return False
            except OSError:
                time.sleep(0.5)
        return False

    def reconnect(self):
        """New connections (the reference waited on until it answers again)."""
        self.ref.close()
        self.sk.close()
        deadline = time.time() + 300
        while True:
            try:
                self.ref = RawConn(self.ref_port, timeout=60)
                self.ref.call("PING")
                break
            except (socket.timeout, ConnectionError, OSError):
                if time.time() > deadline:
                    raise
        self.sk = RawConn(self.sk_port)
        if self.proto != 2:
            self.set_proto(self.proto)

    def exercise(self):
        kind = self.same(["TYPE", "k"])[1:-2]
        self.same(["OBJECT", "ENCODING", "k"])
        self.same(["DEBUG", "DIGEST-VALUE", "k"])
        self.own_dump_restores(first=True)
        for cmd, rule in reads(kind, self.ref):
            self.same(cmd, rule)
        self.same(["DEBUG", "DIGEST-VALUE", "k"])
        self.reload()
        for cmd in writes(kind):
            self.same(cmd, "masked" if kind == b"stream" else "exact")
            self.same(["OBJECT", "ENCODING", "k"])
        self.same(["DEBUG", "DIGEST-VALUE", "k"])
        self.own_dump_restores()
        self.reload()

    def own_dump_restores(self, first=False):
        """Skein's DUMP of the key RESTOREs into both servers to the same value; a compact
        encoding's DUMP is Redis's, byte for byte (a stream's only while no command has
        stamped times on it)."""
        enc = parse(self.sk.call("OBJECT", "ENCODING", "k"))
        compact = enc in (b"listpack", b"intset", b"quicklist") or (first and enc == b"stream")
        if compact and self.dump_bytes_comparable:
            self.same(["DUMP", "k"])
        d = self.sk.call("DUMP", "k")
        if not well_formed(d):
            raise Divergence("malformed DUMP reply %r" % d[:200])
        if d.startswith(b"$-1"):
            return
        dump = parse(d)
        self.same(["RESTORE", "k2", "0", dump, "REPLACE"])
        self.same(["DEBUG", "DIGEST-VALUE", "k2"])
        a, b = self.both("DEBUG", "DIGEST-VALUE", "k")
        if b != self.sk.call("DEBUG", "DIGEST-VALUE", "k2"):
            raise Divergence("skein's own DUMP restores to another value")
        self.ref.call("DEL", "k2")
        self.sk.call("DEL", "k2")

    def reload(self):
        if self.stats["accepted"] % self.reload_every:
            return
        a, b = self.both("DEBUG", "DIGEST")
        ra, rb = self.both("DEBUG", "RELOAD")
        if rb != OK:
            raise Divergence("skein's DEBUG RELOAD failed: %r (redis %r)" % (rb, ra))
        if ra != OK:
            raise Divergence("redis's DEBUG RELOAD failed: %r" % ra)
        a2, b2 = self.both("DEBUG", "DIGEST")
        if b2 != b:
            raise Divergence("skein's keyspace changed over DEBUG RELOAD")


def run_seed(fz, seed, count, bodies, pool, log=None, out=None):
    """`count` changed payloads from `seed`; the failures (also written to `out`, a file,
    as JSON lines as they come)."""
    rnd = random.Random(seed)
    failures = []
    profile = 0
    streams = [b for b in bodies if b[0] in (15, 19)]
    for n in range(count):
        if n % 200 == 0:
            profile = rnd.randrange(len(PROFILES))
            fz.set_profile(PROFILES[profile])
            fz.set_proto(3 if rnd.random() < 0.3 else 2)
        # Streams have the most parts that must agree: a quarter of the payloads.
        src = rnd.choice(streams if streams and rnd.random() < 0.25 else bodies)
        body = src if rnd.random() < 0.03 else mutate(rnd, src, bodies, pool)
        options = rnd.choice([(), (), (), ("IDLETIME", "100"), ("FREQ", "3"), ("ABSTTL",)])
        if log:
            log.write("%d %d %s %s\n" % (seed, n, body.hex(), " ".join(options)))
        why = fz.check(body, options)
        if why:
            failures.append((seed, n, profile, body, options, why))
            if out:
                out.write(json.dumps([seed, n, profile, body.hex(), list(options), why]) + "\n")
                out.flush()
            fz.reconnect()
            fz.set_profile(PROFILES[profile])
    fz.set_profile({})
    fz.set_proto(2)
    return failures


def log_problems(path):
    with open(path, errors="replace") as f:
        return [line.rstrip() for line in f
                if "internal error" in line or "panicked" in line]


def describe(f):
    seed, n, profile, body, options, why = f
    hexed = body.hex()
    return ("seed %d #%d (profile %d, options %r): %s\n   body (%d bytes) %s"
            % (seed, n, profile, options, why, len(body),
               hexed if len(hexed) <= 240 else hexed[:240] + "..."))


def main():
    from conftest import ServerProc

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000, help="payloads per seed")
    ap.add_argument("--log", help="write every payload tried here")
    ap.add_argument("--max-report", type=int, default=30)
    ap.add_argument("--out", help="write each failure here as JSON (seed, n, profile, "
                    "body hex, options, what)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reload-every", type=int, default=1,
                    help="DEBUG RELOAD after every Nth accepted payload")
    opts = ap.parse_args()
    ref = ServerProc("redis", extra=SANITIZE)
    sk = ServerProc("skein", workers=opts.workers)
    failures, problems, fz, refs = [], [], None, [ref]
    log = open(opts.log, "w") if opts.log else None
    out = open(opts.out, "w") if opts.out else None
    started = time.time()
    try:
        src = RawConn(ref.port)
        bodies = corpus(src)
        src.close()
        pool = blob_pool(bodies)
        fz = Fuzzer(ref.port, sk.port, opts.reload_every, os.path.join(sk.dir, "server.log"))

        def restart_ref():
            refs.append(ServerProc("redis", extra=SANITIZE))
            return refs[-1].port

        fz.restart_ref = restart_ref
        for seed in range(opts.seed, opts.seed + opts.seeds):
            fs = run_seed(fz, seed, opts.count, bodies, pool, log, out)
            print("seed %d: %d failures %s" % (seed, len(fs), fz.stats), flush=True)
            failures += fs
            if not sk.alive():
                print("skein exited")
                break
        fz.close()
        sk.log.flush()
        problems = log_problems(os.path.join(sk.dir, "server.log"))
    finally:
        for r in refs:
            r.stop()
        sk.stop()
        for f in (log, out):
            if f:
                f.close()
    for f in failures[:opts.max_report]:
        print(describe(f))
    for body, options, cmd in fz.redis_crashes if fz else []:
        print("redis-server died (not counted): %r after RESTORE of %s %s"
              % (cmd, body.hex()[:400], " ".join(options)))
    for p in problems[:opts.max_report]:
        print("skein log:", p)
    print("%d corpus bodies; %d failures, %d log problems in %.0f s"
          % (len(bodies), len(failures), len(problems), time.time() - started))
    return 1 if failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
