"""DBSIZE and INFO beside a long command (issue 20): the worst round trip of a client
asking DBSIZE (in the long command's database) or INFO back to back for SECONDS while
another connection loops SUNIONSTORE over two MEMBERS-member sets in db 1.
With COMMAND KEYS, a third connection loops KEYS * in db 1 (a few keys: inline, and it
meets the shards the SUNIONSTORE holds) and the timed client asks PING (on the same
worker when the server runs one).
Usage: python3 bench/counts_stall.py PORT COMMAND [MEMBERS] [SECONDS]
(COMMAND: DBSIZE, INFO or KEYS). Prints: command, calls, worst ms, heavy calls, heavy worst
ms (and KEYS calls, worst ms).
"""
import socket
import sys
import threading
import time


def conn(port):
    return socket.create_connection(("127.0.0.1", port))


def call(s, *args):
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    s.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
    data = b""
    # Bulk replies (INFO) are read to their end: header line, then the announced length.
    while b"\r\n" not in data:
        data += s.recv(65536)
    if data.startswith(b"$"):
        n = int(data[1:data.index(b"\r\n")])
        need = data.index(b"\r\n") + 2 + n + 2
        while len(data) < need:
            data += s.recv(65536)
    return data


def main():
    port, what = int(sys.argv[1]), sys.argv[2].upper()
    members = int(sys.argv[3]) if len(sys.argv) > 3 else 500000
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 5
    heavy = conn(port)
    call(heavy, "SELECT", 1)
    for name, base in (("s1", 0), ("s2", members // 2)):
        call(heavy, "DEL", name)
        for b in range(0, members, 50000):
            call(heavy, "SADD", name, *("m%d" % (base + i) for i in range(b, min(members, b + 50000))))
    stop = threading.Event()
    heavy_stats = [0, 0.0]

    def loop():
        while not stop.is_set():
            t = time.perf_counter()
            call(heavy, "SUNIONSTORE", "dst", "s1", "s2")
            heavy_stats[0] += 1
            heavy_stats[1] = max(heavy_stats[1], time.perf_counter() - t)

    walk_stats = [0, 0.0]

    def walk():
        walker = conn(port)
        call(walker, "SELECT", 1)
        while not stop.is_set():
            t = time.perf_counter()
            call(walker, "KEYS", "*")
            walk_stats[0] += 1
            walk_stats[1] = max(walk_stats[1], time.perf_counter() - t)

    threads = [threading.Thread(target=loop)]
    if what == "KEYS":
        threads.append(threading.Thread(target=walk))
    for th in threads:
        th.start()
    time.sleep(0.5)
    light = conn(port)
    call(light, "SELECT", 1 if what == "DBSIZE" else 0)
    timed = "PING" if what == "KEYS" else what
    worst, n, t0 = 0.0, 0, time.time()
    while time.time() - t0 < seconds:
        t = time.perf_counter()
        call(light, timed)
        worst = max(worst, time.perf_counter() - t)
        n += 1
    stop.set()
    for th in threads:
        th.join()
    call(heavy, "DEL", "s1", "s2", "dst")
    walked = " keys_calls=%d keys_worst_ms=%.1f" % (walk_stats[0], walk_stats[1] * 1000)
    print("%s calls=%d worst_ms=%.1f heavy_calls=%d heavy_worst_ms=%.1f%s"
          % (timed, n, worst * 1000, heavy_stats[0], heavy_stats[1] * 1000,
             walked if what == "KEYS" else ""))


main()
