#!/usr/bin/env python3
"""Closed-loop load of MULTI / SET / SET / SET / EXEC transactions, pipelined in batches.

Every transaction's reply is the same bytes, so the driver only counts bytes: it costs
little CPU, and the server, not Python, sets the pace. Prints transactions per second.

Usage: txload.py PORT [--procs N] [--conns N] [--batch N] [--seconds S]
"""
import argparse
import multiprocessing as mp
import random
import socket
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


REPLY = b"+OK\r\n" + b"+QUEUED\r\n" * 3 + b"*3\r\n" + b"+OK\r\n" * 3


def blobs(batch, count=16):
    value = b"x" * 64
    out = []
    for _ in range(count):
        parts = []
        for _ in range(batch):
            ks = ["acct:%d" % random.randrange(100000) for _ in range(3)]
            parts.append(encode("MULTI"))
            parts.extend(encode("SET", k, value) for k in ks)
            parts.append(encode("EXEC"))
        out.append(b"".join(parts))
    return out


def worker(port, conns, batch, seconds, result):
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
    data = blobs(batch)
    want = len(REPLY) * batch
    done = 0
    deadline = time.time() + seconds
    i = 0
    for s in socks:
        s.sendall(data[i % len(data)])
        i += 1
    while time.time() < deadline:
        for s in socks:
            got = 0
            while got < want:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise SystemExit("server closed the connection")
                got += len(chunk)
            done += batch
            s.sendall(data[i % len(data)])
            i += 1
    result.put(done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(a.port, a.conns, a.batch, a.seconds, q))
          for _ in range(a.procs)]
    t0 = time.time()
    for p in ps:
        p.start()
    total = sum(q.get() for _ in ps)
    for p in ps:
        p.join()
    print("tx=%d tx_per_s=%.0f" % (total, total / (time.time() - t0)))


if __name__ == "__main__":
    main()
