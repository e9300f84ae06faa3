#!/usr/bin/env python3
"""A light client for bench/isolation.sh: PINGs back to back on one connection for SECONDS
and prints `count worst_ms p99_ms` of the round trips. Started before a heavy command runs
on another connection of the same server, it shows how long that command stalled it.

Usage: isolation_ping.py PORT SECONDS
"""
import socket
import sys
import time


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ping = b"*1\r\n$4\r\nPING\r\n"
    lat = []
    end = time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        if t0 >= end:
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
