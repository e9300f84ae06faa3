"""Seeded random differential tests for the string and bitmap commands: many generated
commands run against redis-server 7.0.15 and skein-server, replies compared byte for
byte (the same harness as tests/scripts, with generated scripts)."""
import random

import pytest

from difftool import run_script


def quote(b):
    """A redis-cli double-quoted argument for arbitrary bytes."""
    return '"' + "".join("\\x%02x" % c for c in b) + '"'


def rand_float(r):
    sign = r.choice(["", "", "-", "+"])
    k = r.random()
    if k < 0.25:
        return sign + str(r.randint(0, 10 ** r.randint(1, 22)))
    if k < 0.55:
        d = "".join(r.choice("0123456789") for _ in range(r.randint(1, 25)))
        p = r.randint(0, len(d))
        return sign + (d[:p] + "." + d[p:])
    if k < 0.75:
        d = "".join(r.choice("0123456789") for _ in range(r.randint(1, 22)))
        e = r.choice([r.randint(-30, 30), r.randint(-400, 400), r.randint(-4960, 4935)])
        return sign + d[0] + "." + d[1:] + r.choice("eE") + str(e)
    if k < 0.85:
        d = "".join(r.choice("0123456789abcdef") for _ in range(r.randint(1, 18)))
        return sign + "0x" + d + r.choice(["", "p%d" % r.randint(-80, 80)])
    if k < 0.95:
        return sign + r.choice([
            "1.18973149535723176502e+4932", "3.6451995318824746025e-4951",
            "1e-4951", "0.1", "0.2", "0.3", "9223372036854775807", "18446744073709551617",
            "0.000003814697265625", "1e400", "inf", "1e5000", "1e-5000", "nan", "1e", ".",
        ])
    return sign + "".join(r.choice("0123456789") for _ in range(r.randint(60, 900)))


def test_incrbyfloat_random(redis_server, skein_server):
    r = random.Random(20240601)
    lines = []
    for i in range(1500):
        lines.append("SET f%d %s" % (i % 50, rand_float(r)))
        for _ in range(r.randint(1, 3)):
            lines.append("INCRBYFLOAT f%d %s" % (i % 50, rand_float(r)))
    failures = run_script("\n".join(lines), redis_server.port, skein_server.port, 2,
                          "incrbyfloat-fuzz")
    assert not failures, "\n".join(failures[:10])


def rand_range_args(r, n):
    def idx():
        return str(r.choice([r.randint(-n * 9 - 3, n * 9 + 3), r.randint(-3, 3),
                             r.randint(-n - 2, n + 2)]))
    return idx(), idx()


def test_bit_commands_random(redis_server, skein_server):
    r = random.Random(777)
    lines = []
    for round_ in range(300):
        n = r.randint(0, 40)
        data = bytes(r.choice([0, 0xff, r.randint(0, 255)]) for _ in range(n))
        lines.append("SET b %s" % quote(data))
        for _ in range(6):
            s, e = rand_range_args(r, n)
            unit = r.choice(["", " BIT", " BYTE", " bit"])
            kind = r.random()
            if kind < 0.3:
                lines.append("BITCOUNT b %s %s%s" % (s, e, unit))
            elif kind < 0.55:
                lines.append("BITPOS b %d %s %s%s" % (r.randint(0, 1), s, e, unit))
            elif kind < 0.7:
                lines.append("BITPOS b %d %s" % (r.randint(0, 1), s))
            elif kind < 0.8:
                lines.append("BITPOS b %d" % r.randint(0, 1))
            else:
                off = r.randint(0, n * 8 + 20)
                lines.append("SETBIT b %d %d" % (off, r.randint(0, 1)))
                lines.append("GETBIT b %d" % r.randint(0, n * 8 + 20))
        if round_ % 5 == 0:
            m = r.randint(0, 70)
            lines.append("SET c %s" % quote(bytes(r.randint(0, 255) for _ in range(m))))
            op = r.choice(["AND", "OR", "XOR", "NOT"])
            srcs = "b" if op == "NOT" else " ".join(r.choice(["b", "c", "nokey"])
                                                    for _ in range(r.randint(1, 4)))
            lines.append("BITOP %s d %s" % (op, srcs))
            lines.append("GET d")
    failures = run_script("\n".join(lines), redis_server.port, skein_server.port, 2,
                          "bits-fuzz")
    assert not failures, "\n".join(failures[:10])


def test_bitfield_random(redis_server, skein_server):
    r = random.Random(4242)
    lines = []
    for _ in range(400):
        if r.random() < 0.1:
            lines.append("DEL bf")
        ops = []
        for _ in range(r.randint(1, 5)):
            signed = r.random() < 0.5
            bits = r.randint(1, 64 if signed else 63)
            t = ("i" if signed else "u") + str(bits)
            off = ("#%d" % r.randint(0, 10)) if r.random() < 0.3 else str(r.randint(0, 200))
            val = r.choice([r.randint(-2 ** 63, 2 ** 63 - 1), r.randint(-300, 300),
                            2 ** (bits - 1), -2 ** (bits - 1) - 1, 2 ** bits - 1,
                            2 ** 63 - 1, -2 ** 63])
            val = max(min(val, 2 ** 63 - 1), -2 ** 63)
            kind = r.random()
            if kind < 0.15:
                ops.append("OVERFLOW " + r.choice(["WRAP", "SAT", "FAIL"]))
            if kind < 0.4:
                ops.append("GET %s %s" % (t, off))
            elif kind < 0.7:
                ops.append("SET %s %s %d" % (t, off, val))
            else:
                ops.append("INCRBY %s %s %d" % (t, off, val))
        lines.append("BITFIELD bf " + " ".join(ops))
        if r.random() < 0.2:
            lines.append("GET bf")
    failures = run_script("\n".join(lines), redis_server.port, skein_server.port, 2,
                          "bitfield-fuzz")
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("proto", [2, 3])
def test_lcs_and_ranges_random(redis_server, skein_server, proto):
    r = random.Random(99 + proto)
    lines = []
    for _ in range(150):
        alpha = r.choice(["ab", "abc", "acgt", "abcdefghij"])
        a = "".join(r.choice(alpha) for _ in range(r.randint(0, 30)))
        b = "".join(r.choice(alpha) for _ in range(r.randint(0, 30)))
        lines.append('MSET a "%s" b "%s"' % (a, b))
        lines.append("LCS a b")
        lines.append("LCS a b LEN")
        lines.append("LCS a b IDX WITHMATCHLEN MINMATCHLEN %d" % r.randint(-1, 4))
        s, e = rand_range_args(r, len(a))
        lines.append("GETRANGE a %s %s" % (s, e))
        lines.append('SETRANGE b %d "%s"' % (r.randint(0, 40), a[:r.randint(0, 5)]))
        lines.append("GET b")
    failures = run_script("\n".join(lines), redis_server.port, skein_server.port, proto,
                          "lcs-fuzz")
    assert not failures, "\n".join(failures[:10])
