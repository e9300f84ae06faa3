"""RDB value payloads as tokens, and the encodings they carry (listpack, ziplist, intset,
zipmap), for the DUMP payload fuzzer: parse what redis-server wrote, change it at any
level, write it back (strings uncompressed, lengths in their smallest form unless told).

A body is the payload without its footer: the type byte, then the value. `parse_body`
gives [("type", t), tok...] where tok is ("len", n), ("str", bytes, blob_kind) or
("raw", bytes) (stream IDs, times and old zset scores); `write_body` turns them back into
bytes."""
import struct

LP, ZL, INTSET, ZIPMAP, STREAM_LP = "lp", "zl", "intset", "zipmap", "streamlp"


class Short(Exception):
    pass


class Reader:
    """`lenient`: read a length of no known encoding as 2^64-1 (RDB_LENERR), as Redis's
    stream loader does where it does not check rdbLoadLen's result (IDs, counters,
    delivery counts); `lenient_used` says it happened."""

    def __init__(self, b, i=0, lenient=False):
        self.b, self.i = b, i
        self.lenient, self.lenient_used = lenient, False

    def take(self, n):
        if self.i + n > len(self.b):
            raise Short()
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def byte(self):
        return self.take(1)[0]

    def length(self):
        """An RDB length: (value, special encoding or None)."""
        first = self.byte()
        kind = first >> 6
        if kind == 0:
            return first & 63, None
        if kind == 1:
            return ((first & 63) << 8) | self.byte(), None
        if kind == 3:
            return None, first & 63
        if first == 0x80:
            return int.from_bytes(self.take(4), "big"), None
        if first == 0x81:
            return int.from_bytes(self.take(8), "big"), None
        if self.lenient:
            self.lenient_used = True
            return (1 << 64) - 1, None
        raise Short()

    def plain_len(self):
        """rdbLoadLen: an encoding marker (0xC0-0xFF) reads as its low six bits."""
        n, special = self.length()
        return n if special is None else special

    def string(self):
        n, special = self.length()
        if special is None:
            return self.take(n)
        if special == 0:
            return b"%d" % struct.unpack("<b", self.take(1))[0]
        if special == 1:
            return b"%d" % struct.unpack("<h", self.take(2))[0]
        if special == 2:
            return b"%d" % struct.unpack("<i", self.take(4))[0]
        if special == 3:
            clen = self.plain_len()
            ulen = self.plain_len()
            return lzf_decompress(self.take(clen), ulen)
        raise Short()


def lzf_decompress(data, out_len):
    out = bytearray()
    i = 0
    while i < len(data):
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            out += data[i:i + ctrl + 1]
            i += ctrl + 1
            continue
        n = ctrl >> 5
        if n == 7:
            n += data[i]
            i += 1
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
        i += 1
        if ref < 0:
            raise Short()
        for _ in range(n + 2):
            out.append(out[ref])
            ref += 1
    if len(out) != out_len:
        raise Short()
    return bytes(out)


def rdb_len(n):
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n < 1 << 32:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n & ((1 << 64) - 1))


# ---- the value types Redis 7.0 reads, as tokens ----

BLOB_TYPES = {9: ZIPMAP, 10: ZL, 11: INTSET, 12: ZL, 13: ZL, 16: LP, 17: LP}


def parse_body(body, trailing=False, reader=None):
    """The tokens of a body, or None where it does not parse (damaged or unknown), or has
    bytes left over (unless `trailing`: a value Redis reads into the payload's footer)."""
    try:
        r = reader or Reader(body)
        t = r.byte()
        toks = [("type", t)]
        _parse_value(r, t, toks)
        if r.i != len(body) and not trailing:
            return None
        return toks
    except (Short, IndexError):
        return None


def _str(r, toks, kind=None):
    toks.append(("str", r.string(), kind))


def _len(r, toks):
    n = r.plain_len()
    toks.append(("len", n))
    return n


def _parse_value(r, t, toks):
    if t == 0:
        _str(r, toks)
    elif t in (1, 2):
        for _ in range(_len(r, toks)):
            _str(r, toks)
    elif t == 4:
        for _ in range(_len(r, toks)):
            _str(r, toks)
            _str(r, toks)
    elif t == 3:
        for _ in range(_len(r, toks)):
            _str(r, toks)
            n = r.byte()
            toks.append(("raw", bytes([n]) + (r.take(n) if n < 253 else b"")))
    elif t == 5:
        for _ in range(_len(r, toks)):
            _str(r, toks)
            toks.append(("raw", r.take(8)))
    elif t in BLOB_TYPES:
        _str(r, toks, BLOB_TYPES[t])
    elif t == 14:
        for _ in range(_len(r, toks)):
            _str(r, toks, ZL)
    elif t == 18:
        for _ in range(_len(r, toks)):
            container = _len(r, toks)
            _str(r, toks, LP if container == 2 else None)
    elif t in (15, 19):
        _parse_stream(r, t == 19, toks)
    else:
        raise Short()


def _parse_stream(r, v2, toks):
    for _ in range(_len(r, toks)):
        _str(r, toks)
        _str(r, toks, STREAM_LP)
    for _ in range(3 + (5 if v2 else 0)):  # length, last id, [first id, max deleted, added]
        _len(r, toks)
    for _ in range(_len(r, toks)):
        _str(r, toks)
        _len(r, toks)
        _len(r, toks)
        if v2:
            _len(r, toks)
        for _ in range(_len(r, toks)):
            toks.append(("raw", r.take(16)))
            toks.append(("raw", r.take(8)))
            _len(r, toks)
        for _ in range(_len(r, toks)):
            _str(r, toks)
            toks.append(("raw", r.take(8)))
            for _ in range(_len(r, toks)):
                toks.append(("raw", r.take(16)))


def write_body(toks):
    out = bytearray()
    for tok in toks:
        if tok[0] == "type":
            out.append(tok[1] & 0xFF)
        elif tok[0] == "len":
            out += rdb_len(tok[1])
        elif tok[0] == "str":
            out += rdb_len(len(tok[1])) + tok[1]
        else:
            out += tok[1]
    return bytes(out)


# ---- listpack ----

def lp_items(lp):
    """The entries of a listpack (int or bytes), or None where it does not decode."""
    try:
        if len(lp) < 7:
            return None
        i, items = 6, []
        while lp[i] != 0xFF:
            b = lp[i]
            if b < 0x80:
                v, n = b, 1
            elif b < 0xC0:
                ln = b & 0x3F
                v, n = lp[i + 1:i + 1 + ln], 1 + ln
            elif b < 0xE0:
                u = ((b & 0x1F) << 8) | lp[i + 1]
                v, n = u - (1 << 13) if u >= 1 << 12 else u, 2
            elif b < 0xF0:
                ln = ((b & 0x0F) << 8) | lp[i + 1]
                v, n = lp[i + 2:i + 2 + ln], 2 + ln
            elif b == 0xF0:
                ln = struct.unpack("<I", lp[i + 1:i + 5])[0]
                v, n = lp[i + 5:i + 5 + ln], 5 + ln
            elif b in (0xF1, 0xF2, 0xF3, 0xF4):
                w = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
                v, n = int.from_bytes(lp[i + 1:i + 1 + w], "little", signed=True), 1 + w
            else:
                return None
            items.append(v)
            i += n + len(backlen(n))
        return items
    except (IndexError, struct.error):
        return None


def backlen(n):
    if n <= 127:
        return bytes([n])
    if n < 16383:
        return bytes([n >> 7, (n & 127) | 128])
    if n < 2097151:
        return bytes([n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128])
    if n < 268435455:
        return bytes([n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128,
                      (n & 127) | 128])
    return bytes([n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128,
                  ((n >> 7) & 127) | 128, (n & 127) | 128])


def as_int(v):
    """The integer a string holds in Redis's strict form, else None."""
    if isinstance(v, int):
        return v
    if not v or len(v) > 20:
        return None
    try:
        n = int(v)
    except ValueError:
        return None
    if b"%d" % n != v or not -(1 << 63) <= n < 1 << 63:
        return None
    return n


INT_ENCODINGS = [  # (fits, encode) from the narrowest
    (lambda n: 0 <= n <= 127, lambda n: bytes([n])),
    (lambda n: -4096 <= n <= 4095, lambda n: bytes([0xC0 | ((n & 0x1FFF) >> 8), n & 0xFF])),
    (lambda n: -32768 <= n <= 32767, lambda n: b"\xf1" + struct.pack("<h", n)),
    (lambda n: -(1 << 23) <= n < 1 << 23, lambda n: b"\xf2" + struct.pack("<i", n)[:3]),
    (lambda n: -(1 << 31) <= n < 1 << 31, lambda n: b"\xf3" + struct.pack("<i", n)),
    (lambda n: True, lambda n: b"\xf4" + struct.pack("<q", n)),
]


def lp_entry(v, canonical=True, wide=None):
    """One listpack entry: an integer (or a string holding one, when `canonical`) as an
    integer, else a string; in the smallest encoding, or a wider one Redis also reads
    when `wide` (a random.Random) says so."""
    if isinstance(v, int) and not -(1 << 63) <= v < 1 << 63:
        v = b"%d" % v
    n = as_int(v) if canonical or isinstance(v, int) else None
    if n is not None:
        fits = [enc for ok, enc in INT_ENCODINGS if ok(n)]
        enc = (wide.choice(fits) if wide else fits[0])(n)
    else:
        ln = len(v)
        kinds = [k for k, limit in ((0, 64), (1, 4096), (2, 1 << 32)) if ln < limit]
        kind = wide.choice(kinds) if wide else kinds[0]
        if kind == 0:
            enc = bytes([0x80 | ln]) + v
        elif kind == 1:
            enc = bytes([0xE0 | (ln >> 8), ln & 0xFF]) + v
        else:
            enc = b"\xf0" + struct.pack("<I", ln) + v
    return enc + backlen(len(enc))


def lp_build(items, count=None, canonical=True, total_fix=0, wide=None):
    body = b"".join(lp_entry(v, canonical, wide) for v in items)
    total = 6 + len(body) + 1 + total_fix
    n = min(len(items), 65535) if count is None else count
    return struct.pack("<IH", total & 0xFFFFFFFF, n & 0xFFFF) + body + b"\xff"


# ---- ziplist ----

def zl_items(zl):
    try:
        i, items = 10, []
        while zl[i] != 0xFF:
            i += 1 if zl[i] < 254 else 5
            b = zl[i]
            if b >> 6 == 0:
                ln, i = b & 0x3F, i + 1
                items.append(zl[i:i + ln])
                i += ln
            elif b >> 6 == 1:
                ln, i = ((b & 0x3F) << 8) | zl[i + 1], i + 2
                items.append(zl[i:i + ln])
                i += ln
            elif b == 0x80:
                ln, i = struct.unpack(">I", zl[i + 1:i + 5])[0], i + 5
                items.append(zl[i:i + ln])
                i += ln
            elif 0xF1 <= b <= 0xFD:
                items.append((b & 0x0F) - 1)
                i += 1
            else:
                w = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}.get(b)
                if w is None:
                    return None
                items.append(int.from_bytes(zl[i + 1:i + 1 + w], "little", signed=True))
                i += 1 + w
        return items
    except (IndexError, struct.error):
        return None


def zl_build(items, count=None):
    from dump_helpers import ziplist

    vals = []
    for v in items:
        if isinstance(v, int) and not -(1 << 63) <= v < 1 << 63:
            v = b"%d" % v
        n = as_int(v)
        vals.append(n if n is not None else v)
    return ziplist(vals, count=count)


# ---- intset ----

def intset_items(b):
    if len(b) < 8:
        return None
    width, n = struct.unpack("<II", b[:8])
    if width not in (2, 4, 8) or len(b) != 8 + width * n:
        return None
    return [int.from_bytes(b[8 + k * width:8 + (k + 1) * width], "little", signed=True)
            for k in range(n)], width


def intset_build(values, width=None, count=None):
    if width is None:
        width = 2
        for v in values:
            if not -(1 << 15) <= v < 1 << 15:
                width = max(width, 4)
            if not -(1 << 31) <= v < 1 << 31:
                width = 8
    out = struct.pack("<II", width, len(values) if count is None else count & 0xFFFFFFFF)
    for v in values:
        out += (v & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    return out


# ---- zipmap (RDB type 9, Redis < 2.6) ----

def zipmap_build(pairs):
    out = bytearray([min(len(pairs), 254)])
    for f, v in pairs:
        for s, free in ((f, None), (v, 0)):
            out += bytes([len(s)]) if len(s) < 254 else b"\xfe" + struct.pack("<I", len(s))
            if free is not None:
                out.append(free)
            out += s
    return bytes(out) + b"\xff"


# ---- old forms of modern payloads ----

def old_forms(toks):
    """Bodies of the older RDB types that hold the same value as a modern payload's
    tokens (Redis 7.0 still loads them)."""
    t = toks[0][1]
    out = []
    if t == 16:  # hash listpack -> ziplist, zipmap, plain hash
        items = lp_items(toks[1][1]) or []
        out.append([("type", 13), ("str", zl_build(items), ZL)])
        pairs = [(_b(items[k]), _b(items[k + 1])) for k in range(0, len(items) - 1, 2)]
        if all(len(f) < 254 and len(v) < 254 for f, v in pairs):
            out.append([("type", 9), ("str", zipmap_build(pairs), ZIPMAP)])
        out.append([("type", 4), ("len", len(pairs))] +
                   [("str", s, None) for p in pairs for s in p])
    elif t == 17:  # zset listpack -> ziplist, zset_2, zset
        items = lp_items(toks[1][1]) or []
        out.append([("type", 12), ("str", zl_build(items), ZL)])
        pairs = [(_b(items[k]), float(_b(items[k + 1]))) for k in range(0, len(items) - 1, 2)]
        out.append([("type", 5), ("len", len(pairs))] +
                   [tok for m, s in pairs
                    for tok in (("str", m, None), ("raw", struct.pack("<d", s)))])
        old = [("type", 3), ("len", len(pairs))]
        for m, s in pairs:
            old.append(("str", m, None))
            old.append(("raw", _old_score(s)))
        out.append(old)
    elif t == 18:  # quicklist 2 -> quicklist of ziplists, ziplist, linked list
        items = []
        for k in range(2, len(toks), 2):
            if toks[k][1] == 2:
                items += lp_items(toks[k + 1][1]) or []
            else:
                items.append(toks[k + 1][1])
        out.append([("type", 10), ("str", zl_build(items), ZL)])
        out.append([("type", 14), ("len", 2), ("str", zl_build(items[:len(items) // 2]), ZL),
                    ("str", zl_build(items[len(items) // 2:]), ZL)])
        out.append([("type", 1), ("len", len(items))] + [("str", _b(v), None) for v in items])
    elif t == 19:
        out.append(stream_v1(toks))
    return out


def _b(v):
    return b"%d" % v if isinstance(v, int) else v


def _old_score(s):
    if s != s:
        return b"\xfd"
    if s == float("inf"):
        return b"\xfe"
    if s == float("-inf"):
        return b"\xff"
    text = (b"%.17g" % s)
    return bytes([len(text)]) + text


def stream_v1(toks):
    """A type-19 stream's tokens as type 15 (no first/max-deleted IDs, entries added or
    entries read)."""
    out = [("type", 15)]
    i = 1
    nodes = toks[i][1]
    end = i + 1 + 2 * nodes
    out += toks[i:end]
    out += toks[end:end + 3]
    i = end + 8
    ngroups = toks[i][1]
    out.append(toks[i])
    i += 1
    for _ in range(ngroups):
        out += toks[i:i + 3]  # name, last id
        i += 4  # entries read dropped
        npel = toks[i][1]
        out += toks[i:i + 1 + 3 * npel]
        i += 1 + 3 * npel
        ncons = toks[i][1]
        out.append(toks[i])
        i += 1
        for _ in range(ncons):
            n = toks[i + 2][1]
            out += toks[i:i + 3 + n]
            i += 3 + n
    return out


# ---- streams as a structure ----

def stream_parts(toks):
    """A type 15/19 stream's tokens as a dict (nodes, counters, groups), or None."""
    it = iter(toks[1:])

    def nxt():
        return next(it)[1]

    try:
        v2 = toks[0][1] == 19
        nodes = [[nxt(), nxt()] for _ in range(nxt())]
        s = {"v2": v2, "nodes": nodes, "counters": [nxt() for _ in range(8 if v2 else 3)],
             "groups": []}
        for _ in range(nxt()):
            g = {"name": nxt(), "last": [nxt(), nxt()]}
            if v2:
                g["read"] = nxt()
            g["pel"] = [[nxt(), nxt(), nxt()] for _ in range(nxt())]
            g["consumers"] = []
            for _ in range(nxt()):
                name, seen = nxt(), nxt()
                g["consumers"].append([name, seen, [nxt() for _ in range(nxt())]])
            s["groups"].append(g)
        return s
    except (StopIteration, TypeError):
        return None


def stream_tokens(s):
    toks = [("type", 19 if s["v2"] else 15), ("len", len(s["nodes"]))]
    for key, lp in s["nodes"]:
        toks += [("str", key, None), ("str", lp, STREAM_LP)]
    toks += [("len", v) for v in s["counters"]]
    toks.append(("len", len(s["groups"])))
    for g in s["groups"]:
        toks += [("str", g["name"], None), ("len", g["last"][0]), ("len", g["last"][1])]
        if s["v2"]:
            toks.append(("len", g["read"]))
        toks.append(("len", len(g["pel"])))
        for pid, ms, count in g["pel"]:
            toks += [("raw", pid), ("raw", ms), ("len", count)]
        toks.append(("len", len(g["consumers"])))
        for name, seen, pel in g["consumers"]:
            toks += [("str", name, None), ("raw", seen), ("len", len(pel))]
            toks += [("raw", p) for p in pel]
    return toks
