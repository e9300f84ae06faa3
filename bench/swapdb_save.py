# bench/swapdb_save.py PORT N: DEBUG POPULATE N keys (100-byte values) into db 0 and N into
# db 1, start BGSAVE, run SWAPDB 0 1 at once while another connection pings back to back;
# prints how long SWAPDB took to answer, the worst PING and the save's length. Start the
# server yourself (--save '' --enable-debug-command yes, in a scratch --dir).
import sys, time
from pinger import Pinger, conn
port, n = int(sys.argv[1]), int(sys.argv[2])
s = conn(port); f = s.makefile("rb")
def call(*args):
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
    line = f.readline()
    if line[:1] == b"$":
        return f.read(int(line[1:]) + 2)
    return line
assert call("DEBUG", "POPULATE", n, "a", 100) == b"+OK\r\n"
call("SELECT", 1); call("DEBUG", "POPULATE", n, "b", 100); call("SELECT", 0)
pinger = Pinger(port).start(); time.sleep(0.2)
t0 = time.perf_counter(); assert call("BGSAVE").startswith(b"+")
t = time.perf_counter(); assert call("SWAPDB", 0, 1) == b"+OK\r\n"; swap = time.perf_counter() - t
while b"rdb_bgsave_in_progress:1" in call("INFO", "persistence"):
    time.sleep(0.02)
save = time.perf_counter() - t0
worst = pinger.stop()
print(f"{n} keys per db: SWAPDB {swap*1000:.1f} ms, worst PING {worst*1000:.1f} ms, save {save:.2f} s")
