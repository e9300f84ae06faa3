# bench/growth.py PORT KIND N: grows one collection (KIND set, zset, hash or list) to N
# members with pipelined writes of 1,000 members while a second connection pings back to
# back; prints the worst PING round trip and the worst write batch. Used by bench/growth.sh.
import sys, time
from pinger import Pinger, conn
port, kind, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pinger = Pinger(port).start()
s = conn(port); f = s.makefile("rb")
B = 1000; wb = 0.0
for base in range(0, n, B):
    ms = range(base, min(n, base + B))
    if kind == "set":
        args = [b"SADD", b"big"] + [b"m%d" % i for i in ms]
    elif kind == "hash":
        args = [b"HSET", b"big"]
        for i in ms: args += [b"f%d" % i, b"v"]
    elif kind == "list":
        args = [b"RPUSH", b"big"] + [b"m%d" % i for i in ms]
    else:
        args = [b"ZADD", b"big"]
        for i in ms: args += [b"%d" % i, b"m%d" % i]
    cmd = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    t = time.perf_counter(); s.sendall(cmd); f.readline(); wb = max(wb, time.perf_counter() - t)
worst = pinger.stop()
print(f"{kind} {n}: worst PING {worst*1000:.1f} ms, worst batch of {B} {wb*1000:.1f} ms")
