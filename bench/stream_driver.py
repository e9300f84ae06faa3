#!/usr/bin/env python3
"""Consumer-group load for any RESP server: CONNS connections, each with its own stream
(pre-filled with ENTRIES entries of 3 fields, IDs 1000000-0 upward) and its own group, send
pipelined pairs `XREADGROUP GROUP g c COUNT 1 STREAMS s:NNN >` + `XACK s:NNN g <id>` for
the entries in order, PIPELINE pairs at a time. Every reply of a connection has the same
size (same key length, same ID length, same fields), so replies are counted by bytes,
nothing is parsed on the hot path. Prints one line: pairs, seconds, pairs/s and, with
--pid, the server's CPU seconds (utime + stime from /proc) per million pairs.

Standard library only (selectors/epoll in one thread).
Usage: stream_driver.py --port P [--pid PID] [--conns 50] [--entries 20000]
       [--pipeline 16] [--fill]   (--fill only loads the streams and groups)
"""
import argparse
import os
import selectors
import socket
import sys
import time

from pubsub_driver import cpu_ticks, encode  # same directory: one RESP encoder, one /proc reader

BASE = 1000000
FIELDS = [b"f1", b"value-0123456789", b"f2", b"12345", b"f3", b"some text here"]


def key(c):
    return b"s:%03d" % c


def call_all(sock, payload, replies):
    """Send `payload` and read until `replies` replies ended (simple scan: each reply here
    ends its line structure; only used while filling, on short replies)."""
    sock.sendall(payload)
    buf = b""
    while buf.count(b"\r\n") < replies:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk


def fill(port, conns, entries):
    s = socket.create_connection(("127.0.0.1", port))
    for c in range(conns):
        cmds = [encode(b"DEL", key(c))]
        for i in range(entries):
            cmds.append(encode(b"XADD", key(c), b"%d-0" % (BASE + i), *FIELDS))
        cmds.append(encode(b"XGROUP", b"CREATE", key(c), b"g", b"0"))
        call_all(s, b"".join(cmds), len(cmds) + entries)
    s.close()


def pair(c, i):
    k = key(c)
    return (encode(b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"1", b"STREAMS", k, b">")
            + encode(b"XACK", k, b"g", b"%d-0" % (BASE + i)))


def pair_reply_len(port):
    """Bytes of one pair's replies (probed on a stream of its own)."""
    s = socket.create_connection(("127.0.0.1", port))
    probe = 999
    # DEL (1 line), XADD (a bulk: 2), XGROUP CREATE (1).
    call_all(s, encode(b"DEL", key(probe)) + encode(b"XADD", key(probe), b"%d-0" % BASE, *FIELDS)
             + encode(b"XGROUP", b"CREATE", key(probe), b"g", b"0"), 4)
    s.sendall(pair(probe, 0))
    s.settimeout(0.5)
    got = b""
    try:
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    s.settimeout(None)
    n = len(got)
    assert got.endswith(b":1\r\n"), got
    call_all(s, encode(b"DEL", key(probe)), 1)
    s.close()
    return n


def run(port, pid, conns, entries, pipeline):
    size = pair_reply_len(port)
    sel = selectors.DefaultSelector()
    state = {}
    for c in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        state[s] = {"c": c, "next": 0, "pending": 0, "got": 0}
        sel.register(s, selectors.EVENT_READ)

    def send_batch(s, st):
        n = min(pipeline, entries - st["next"])
        if n <= 0:
            return False
        payload = b"".join(pair(st["c"], st["next"] + j) for j in range(n))
        st["next"] += n
        st["pending"] += n * size
        s.setblocking(True)
        s.sendall(payload)
        s.setblocking(False)
        return True

    c0 = cpu_ticks(pid) if pid else 0
    t0 = time.time()
    live = 0
    for s, st in state.items():
        live += send_batch(s, st)
    while live:
        for k, _ in sel.select():
            s = k.fileobj
            st = state[s]
            data = s.recv(1 << 20)
            if not data:
                raise ConnectionError("server closed a connection")
            st["pending"] -= len(data)
            st["got"] += len(data)
            if st["pending"] == 0:
                if not send_batch(s, st):
                    live -= 1
            elif st["pending"] < 0:
                raise AssertionError("more reply bytes than expected: %r" % data[-200:])
    dt = time.time() - t0
    pairs = sum(st["got"] for st in state.values()) // size
    line = "pairs=%d seconds=%.2f pairs_per_s=%.0f" % (pairs, dt, pairs / dt)
    if pid:
        hz = os.sysconf("SC_CLK_TCK")
        line += " cpu_s_per_Mpairs=%.3f" % ((cpu_ticks(pid) - c0) / hz / (pairs / 1e6))
    print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--fill", action="store_true")
    a = ap.parse_args()
    if a.fill:
        fill(a.port, a.conns, a.entries)
    else:
        run(a.port, a.pid, a.conns, a.entries, a.pipeline)


if __name__ == "__main__":
    sys.exit(main())
