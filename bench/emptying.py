# bench/emptying.py PORT N: a sorted set of N members (ZADDs of 1,000) is emptied by
# ZREMRANGEBYRANK big 0 999 calls while another connection pings back to back; prints the
# worst PING, the worst batch, and the time of the batch that emptied (and so deleted) it.
# Start the server yourself (Skein with --workers 1 to share the pinger's worker).
import sys, time
from pinger import Pinger, conn
port, n = int(sys.argv[1]), int(sys.argv[2])
s = conn(port); f = s.makefile("rb")
def call(args):
    cmd = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(cmd); return f.readline()
for base in range(0, n, 1000):
    args = [b"ZADD", b"big"]
    for i in range(base, min(n, base + 1000)): args += [b"%d" % i, b"m%d" % i]
    call(args)
pinger = Pinger(port).start(); time.sleep(0.2)
wb = 0.0; last = 0.0
while True:
    t = time.perf_counter(); r = call([b"ZREMRANGEBYRANK", b"big", b"0", b"999"]); d = time.perf_counter() - t
    if r.strip() != b":1000": break
    wb = max(wb, d); last = d
time.sleep(0.3); worst = pinger.stop()
print(f"emptying {n}: worst PING {worst*1000:.1f} ms, worst batch {wb*1000:.1f} ms, the emptying batch {last*1000:.1f} ms")
