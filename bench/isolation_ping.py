#!/usr/bin/env python3
"""A light client for bench/isolation.sh: PINGs back to back on one connection until
SIGTERM (or for SECONDS when given) and prints `count worst_ms p99_ms` of the round trips
(a PING in flight when the signal comes is finished first). Running while a heavy command
runs on another connection of the same server, it shows how long that command stalled it.

Usage: isolation_ping.py PORT [SECONDS]
"""
import signal
import socket
import sys
import time

stopped = False


def stop(_signum, _frame):
    global stopped
    stopped = True


def main():
    port = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else float("inf")
    signal.signal(signal.SIGTERM, stop)
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ping = b"*1\r\n$4\r\nPING\r\n"
    lat = []
    end = time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        if t0 >= end or stopped:
            break
        s.sendall(ping)
        got = b""
        while not got.endswith(b"\r\n"):
            chunk = s.recv(64)
            if not chunk:
                raise SystemExit("connection closed")
            got += chunk
        lat.append(time.perf_counter() - t0)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print("%d %.3f %.3f" % (len(lat), lat[-1] * 1000, p99 * 1000))


if __name__ == "__main__":
    main()
