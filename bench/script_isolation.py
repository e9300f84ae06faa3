#!/usr/bin/env python3
"""Does a running script stall clients of other keys? (issue 17's benchmark.)

One connection runs a CPU-heavy script on one key back to back (a Lua loop of LOOP
iterations, then INCR of its key: tens of milliseconds a run), while LIGHT other
connections each GET other keys back to back, each in its own process. For each light
client: GETs done, p99 and worst round trip, over SECONDS. Run once with the script and
once without (quiet), against the server on PORT.

On Redis every client waits for each script run. On Skein a connection lives on one
worker: the light clients that landed on the script's worker wait for it as on Redis,
those on another worker are not stalled (with 2 workers, about half of them).

Usage: script_isolation.py PORT [SECONDS=5] [LIGHT=4] [LOOP=3000000]
"""
import multiprocessing as mp
import socket
import sys
import time


def conn(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(s, buf):
    while b"\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    line, rest = buf.split(b"\r\n", 1)
    if line[:1] == b"$" and int(line[1:]) >= 0:
        n = int(line[1:])
        while len(rest) < n + 2:
            rest += s.recv(65536)
        rest = rest[n + 2:]
    return rest


def light(port, i, seconds, start, out):
    s = conn(port)
    get = cmd("GET", "light:%d" % i)
    start.wait()
    lat, buf = [], b""
    end = time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        if t0 >= end:
            break
        s.sendall(get)
        buf = read_reply(s, buf)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    out.put((i, len(lat), lat[int(len(lat) * 0.99)] * 1000, lat[-1] * 1000))


def heavy(port, seconds, loop, start, out):
    s = conn(port)
    body = "local i = 0 while i < %d do i = i + 1 end return redis.call('incr', KEYS[1])" % loop
    run = cmd("EVAL", body, 1, "heavy")
    start.wait()
    runs, buf = 0, b""
    t_start = time.perf_counter()
    end = t_start + seconds
    while time.perf_counter() < end:
        s.sendall(run)
        buf = read_reply(s, buf)
        runs += 1
    out.put(("heavy", runs, (time.perf_counter() - t_start) * 1000 / max(runs, 1)))


def measure(port, seconds, nlight, loop, with_script):
    start, out = mp.Barrier(nlight + (2 if with_script else 1)), mp.Queue()
    procs = []
    if with_script:
        # The script's connection first, so the light ones are spread after it.
        procs.append(mp.Process(target=heavy, args=(port, seconds, loop, start, out)))
        procs[-1].start()
        time.sleep(0.2)
    for i in range(nlight):
        procs.append(mp.Process(target=light, args=(port, i, seconds, start, out)))
        procs[-1].start()
    start.wait()
    results = [out.get(timeout=seconds + 60) for _ in procs]
    for p in procs:
        p.join(10)
    return results


def main():
    port = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    nlight = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    loop = int(sys.argv[4]) if len(sys.argv) > 4 else 3000000
    for label, with_script in (("quiet", False), ("script", True)):
        for r in sorted(measure(port, seconds, nlight, loop, with_script), key=str):
            if r[0] == "heavy":
                print("%s heavy runs=%d ms_per_run=%.1f" % (label, r[1], r[2]))
            else:
                print("%s light%d gets=%d p99_ms=%.3f worst_ms=%.3f" % ((label,) + r))


if __name__ == "__main__":
    main()
