#!/usr/bin/env python3
"""Resident memory per idle connection: open N connections to a server, each says PING
once (so it has read and replied, as a real client's connection has), then stays idle.
Prints the server's RSS growth per connection after SETTLE_FAST seconds and again after
SETTLE_SLOW seconds (past Redis's 2-second idle query-buffer resize in clientsCron).
Usage: idle_conns.py PORT PID N [SETTLE_FAST SETTLE_SLOW]"""
import socket
import sys
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def main():
    port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    fast = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    slow = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
    time.sleep(0.5)
    r0 = rss_kb(pid)
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PING\r\n")
        socks.append(s)
    for s in socks:
        got = b""
        while not got.endswith(b"\r\n"):
            got += s.recv(64)
    time.sleep(fast)
    r1 = rss_kb(pid)
    time.sleep(max(0.0, slow - fast))
    r2 = rss_kb(pid)
    print("bytes_per_conn_%gs=%.0f bytes_per_conn_%gs=%.0f" % (
        fast, (r1 - r0) * 1024 / n, slow, (r2 - r0) * 1024 / n))
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
