#!/usr/bin/env python3
"""Pub/sub fan-out load for any RESP server: SUBSCRIBERS connections subscribe to one
channel, PUBLISHERS connections publish MESSAGES fixed-size messages each (pipelined in
batches), and the driver counts the bytes each subscriber receives (every message has
the same encoding, so bytes / message size = messages; nothing is parsed on the hot path).

Publishers stay at most WINDOW messages ahead of the slowest possible delivery (total
bytes delivered so far), so no subscriber's output buffer grows toward the pubsub output
limits. Prints one line: delivered messages, seconds, messages/s and, with --pid, the
server's CPU seconds (utime + stime from /proc) per million delivered messages.

Standard library only (selectors/epoll in one thread), so it runs wherever python3 does.
"""
import argparse
import os
import selectors
import socket
import sys
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def read_exact(sock, n):
    got = b""
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        if not chunk:
            raise ConnectionError("server closed the connection")
        got += chunk
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--subscribers", type=int, default=1000)
    ap.add_argument("--publishers", type=int, default=4)
    ap.add_argument("--messages", type=int, default=2000, help="per publisher")
    ap.add_argument("--payload", type=int, default=32)
    ap.add_argument("--batch", type=int, default=20, help="PUBLISH commands per pipeline")
    ap.add_argument("--window", type=int, default=400, help="messages in flight")
    ap.add_argument("--pid", type=int, default=0, help="server pid, for CPU seconds")
    ap.add_argument("--name", default="server")
    ap.add_argument("--deadline", type=float, default=600)
    o = ap.parse_args()

    channel = b"bench:fanout"
    confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(channel), channel)
    subs = []
    for _ in range(o.subscribers):
        s = socket.create_connection(("127.0.0.1", o.port))
        s.sendall(encode(b"SUBSCRIBE", channel))
        if read_exact(s, len(confirm)) != confirm:
            sys.exit("unexpected SUBSCRIBE reply")
        s.setblocking(False)
        subs.append(s)

    def payload(pub, seq):
        head = b"%d:%d:" % (pub, seq)
        return head + b"x" * (o.payload - len(head))

    msg_size = len(b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                   % (len(channel), channel, o.payload, payload(0, 0)))
    reply = b":%d\r\n" % o.subscribers
    pubs = [socket.create_connection(("127.0.0.1", o.port)) for _ in range(o.publishers)]
    for p in pubs:
        p.setblocking(False)

    sel = selectors.DefaultSelector()
    for s in subs:
        sel.register(s, selectors.EVENT_READ, None)
    for i, p in enumerate(pubs):
        sel.register(p, selectors.EVENT_READ, i)

    total_msgs = o.publishers * o.messages
    expected = total_msgs * o.subscribers * msg_size
    sent = [0] * o.publishers  # PUBLISH commands sent by each publisher
    waiting = [0] * o.publishers  # reply bytes still expected by each publisher
    replies = [b""] * o.publishers
    delivered = 0
    sent_total = 0
    c0 = cpu_ticks(o.pid) if o.pid else 0
    t0 = time.perf_counter()
    deadline = t0 + o.deadline
    while delivered < expected:
        done_msgs = delivered // (msg_size * o.subscribers)
        for i, p in enumerate(pubs):
            if waiting[i] or sent[i] >= o.messages or sent_total - done_msgs >= o.window:
                continue
            n = min(o.batch, o.messages - sent[i])
            p.sendall(b"".join(encode(b"PUBLISH", channel, payload(i, sent[i] + k))
                               for k in range(n)))
            sent[i] += n
            sent_total += n
            waiting[i] = n * len(reply)
        if time.perf_counter() > deadline:
            sys.exit("deadline passed: %d of %d bytes delivered" % (delivered, expected))
        for key, _ in sel.select(timeout=1.0):
            sock = key.fileobj
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                sys.exit("server closed a connection")
            if key.data is None:
                delivered += len(data)
            else:
                i = key.data
                waiting[i] -= len(data)
                replies[i] = (replies[i] + data)[-len(reply):]
                if replies[i] != reply[-len(replies[i]):]:
                    sys.exit("unexpected PUBLISH reply %r" % replies[i])
    elapsed = time.perf_counter() - t0
    c1 = cpu_ticks(o.pid) if o.pid else 0
    # Anything beyond the expected bytes would be a duplicate.
    time.sleep(0.2)
    extra = 0
    for s in subs:
        try:
            extra += len(s.recv(1 << 20))
        except BlockingIOError:
            pass
    if delivered != expected or extra:
        sys.exit("delivered %d bytes, expected %d" % (delivered + extra, expected))
    msgs = total_msgs * o.subscribers
    cpu_s = (c1 - c0) / os.sysconf("SC_CLK_TCK")
    print("%s delivered=%d seconds=%.3f msgs_per_s=%.0f server_cpu_s=%.2f cpu_s_per_M=%.3f"
          % (o.name, msgs, elapsed, msgs / elapsed, cpu_s, cpu_s / (msgs / 1e6)))
    for s in subs + pubs:
        s.close()


if __name__ == "__main__":
    main()
