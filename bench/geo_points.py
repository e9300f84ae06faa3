"""Seeded geo points for the benchmarks, as RESP GEOADD commands (for redis-cli --pipe):
N points (argv[1], default 100,000) uniform over lon 2..3, lat 48..49 (about 74 x 111
km), 500 per command, into the sorted set `pts`."""
import random
import sys


def cmd(*a):
    return "*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a)


def main():
    r = random.Random(1)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    out = []
    for i in range(0, n, 500):
        args = ["GEOADD", "pts"]
        for j in range(i, min(n, i + 500)):
            args += ["%.6f" % r.uniform(2, 3), "%.6f" % r.uniform(48, 49), "p%d" % j]
        out.append(cmd(*args))
    sys.stdout.write("".join(out))


main()
