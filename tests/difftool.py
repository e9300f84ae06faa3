"""Differential script runner: the same commands against redis-server and skein-server,
replies compared byte for byte, or by a stated rule where a reply depends on time or
randomness.

Script lines are commands in redis-cli quoting. A line may start with a rule:
  @sort CMD...       compare the top-level array as a sorted multiset
  @type CMD...       compare only the reply's type (first byte) - for random replies
  @approx N CMD...   both integers, within N of each other (TTLs against a clock)
  @scanall CMD...    CMD is a SCAN-family call with cursor 0; iterate to the end on each
                     server and compare the sorted union of returned elements
  @resp2 / @resp3 CMD...  run (and compare) only under that protocol
Directives: `@sleep MS` sleeps on both sides. Lines starting with # are comments.
"""
import time

from resp_client import RawConn, parse

def split_line(line):
    """redis-cli style splitting (sdssplitargs)."""
    args, cur, i, n = [], None, 0, len(line)
    while i < n:
        c = line[i]
        if cur is None:
            if c.isspace():
                i += 1
                continue
            cur = bytearray()
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n:
                    i += 1
                    e = line[i]
                    if e == "x" and i + 2 < n:
                        cur.append(int(line[i + 1:i + 3], 16))
                        i += 3
                        continue
                    cur += {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}.get(e, e.encode())
                else:
                    cur += line[i].encode()
                i += 1
            i += 1
            args.append(bytes(cur))
            cur = None
        elif c == "'":
            i += 1
            while i < n and line[i] != "'":
                cur += line[i].encode()
                i += 1
            i += 1
            args.append(bytes(cur))
            cur = None
        else:
            while i < n and not line[i].isspace():
                cur += line[i].encode()
                i += 1
            args.append(bytes(cur))
            cur = None
    return args


def scan_all(conn, args):
    """Iterate a SCAN-family command to the end; return the sorted elements seen."""
    at = 1 if args[0].upper() == b"SCAN" else 2
    args = list(args)
    cursor = b"0"
    seen = []
    for _ in range(1000000):
        args[at] = cursor
        reply = parse(conn.call(*args))
        if isinstance(reply, tuple):
            return reply
        cursor, items = reply[0], reply[1]
        seen.extend(items)
        if cursor == b"0":
            break
    return sorted(repr(x) for x in seen)


def compare(rule, param, a, b):
    if rule is None:
        return a == b
    if rule == "sort":
        pa, pb = parse(a), parse(b)
        if isinstance(pa, list) and isinstance(pb, list):
            return sorted(map(repr, pa)) == sorted(map(repr, pb)) and a[:1] == b[:1]
        return a == b
    if rule == "type":
        return a[:1] == b[:1]
    if rule == "approx":
        pa, pb = parse(a), parse(b)
        if isinstance(pa, int) and isinstance(pb, int):
            return abs(pa - pb) <= param
        return a == b
    raise ValueError(rule)


def run_script(text, ref_port, skein_port, proto=2, name="script"):
    """Run `text` on both servers; return a list of mismatch descriptions."""
    ref, sk = RawConn(ref_port), RawConn(skein_port)
    failures = []
    try:
        for c in (ref, sk):
            c.call("FLUSHALL")
            if proto == 3:
                c.call("HELLO", "3")
        for lineno, raw_line in enumerate(text.splitlines(), 1):
            line = raw_line.strip()
            if not line or line.startswith("#"):
                continue
            rule, param = None, None
            if line.startswith("@sleep"):
                time.sleep(int(line.split()[1]) / 1000.0)
                continue
            if line.startswith("@resp2 ") or line.startswith("@resp3 "):
                if int(line[5]) != proto:
                    continue
                line = line[7:]
            if line.startswith("@"):
                head, line = line.split(None, 1)
                rule = head[1:]
                if rule == "approx":
                    p, line = line.split(None, 1)
                    param = int(p)
            args = split_line(line)
            if rule == "scanall":
                a, b = scan_all(ref, args), scan_all(sk, args)
                ok = a == b
            else:
                a, b = ref.call(*args), sk.call(*args)
                ok = compare(rule, param, a, b)
            if not ok:
                failures.append("%s:%d (RESP%d) %s\n  redis: %r\n  skein: %r" % (
                    name, lineno, proto, line, a, b))
    finally:
        ref.close()
        sk.close()
    return failures
