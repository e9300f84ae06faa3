#!/usr/bin/env bash
# The many-clients scenario (issue 20: "throughput at 5,000 connections >= 0.9x that at
# 50"), Skein vs redis-server 7.0.15 in one run: skein-bench's `--scenario many-clients`
# (20% SET / 80% GET, 16-byte keys, 512-byte values over 3,000,000 keys, THREADS load
# threads). Each round and server: a fresh server is filled (the scenario's prefill), then
# measured at each connection count of CONNS for TEST_TIME s, the server's CPU per op
# taken from skein-bench's INFO samples over the measured window. Servers alternate within a round; medians over ROUNDS.
# Prints ops/s and server CPU seconds per million ops per step, Skein/Redis per step and
# last/first step per server.
# Usage: bench/many_clients.sh ; env: SKEIN, BENCH (skein-bench), ROUNDS (3), CONNS
#        ("50 5000"), TEST_TIME (10), THREADS (4), SERVERS ("redis skein"), WORKERS (Skein's
#        --workers; default: Skein's own), SERVER_CPUS / LOAD_CPUS (taskset cpu lists; unset:
#        unpinned, as a new user runs it)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
SKEIN=${SKEIN:-target/release/skein-server}
BENCH=${BENCH:-target/release/skein-bench}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-"50 5000"}
TEST_TIME=${TEST_TIME:-10}
THREADS=${THREADS:-4}
SERVERS=${SERVERS:-"redis skein"}
WORKERS=${WORKERS:-}
SERVER_CPUS=${SERVER_CPUS:-}
LOAD_CPUS=${LOAD_CPUS:-}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf $tmp' EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

pin() { local cpus=$1; shift; if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi; }

for round in $(seq "$ROUNDS"); do
  for srv in $SERVERS; do
    port=$(free_port)
    if [ "$srv" = skein ]; then
      cmd=("$SKEIN" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --maxclients 10100
        ${WORKERS:+--workers "$WORKERS"})
    else
      cmd=(redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --appendonly no
        --maxclients 10100)
    fi
    # Not through `pin`: a backgrounded shell function is a subshell, and $! would be its
    # PID, not the server's (taskset execs the server, keeping the PID).
    if [ -n "$SERVER_CPUS" ]; then
      taskset -c "$SERVER_CPUS" "${cmd[@]}" > "$tmp/log" 2>&1 &
    else
      "${cmd[@]}" > "$tmp/log" 2>&1 &
    fi
    pid=$!
    wait_ready "$port"
    # the prefill alone: one short step at the first count
    pin "$LOAD_CPUS" "$BENCH" run --scenario many-clients -p "$port" -t "$THREADS" -q \
      --connections "${CONNS%% *}" --test-time 1 > /dev/null
    for c in $CONNS; do
      echo "round $round: $srv, $c connections" >&2
      pin "$LOAD_CPUS" "$BENCH" run --scenario many-clients -p "$port" -t "$THREADS" -q \
        --no-prefill --connections "$c" --test-time "$TEST_TIME" --json "$tmp/r.json" > /dev/null
      python3 - "$tmp/r.json" "$srv" "$c" "$round" 0 0 0 >> "$tmp/rows" <<'PY'
import json, sys
path, srv, c, rnd, t0, t1, hz = sys.argv[1:]
r = json.load(open(path))["steps"][0]["result"]
ops = r["totals"]["ops_per_sec"]
s = r.get("server") or {}
# server CPU over the measured window (skein-bench samples INFO's used_cpu_*), per op
cpu = (s.get("cpu_user_pct", 0) + s.get("cpu_sys_pct", 0)) / 100
print(srv, c, rnd, ops, cpu / ops * 1e6 if ops else 0)
PY
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  done
done

python3 - "$tmp/rows" "$CONNS" "$SERVERS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
conns, servers = sys.argv[2].split(), sys.argv[3].split()
med = {}
print("round-by-round ops/s:")
for srv, c, rnd, ops, cpm in rows:
    print(f"  round {rnd} {srv:6s} {c:>5s} connections {float(ops):10.0f} ops/s  server CPU {float(cpm):6.2f} s/M ops")
for srv in servers:
    for c in conns:
        sel = [r for r in rows if r[0] == srv and r[1] == c]
        med[srv, c] = (statistics.median(float(r[3]) for r in sel),
                       statistics.median(float(r[4]) for r in sel))
print("\n| | " + " | ".join(f"{s} ops/s" for s in servers) + " | " + " | ".join(f"{s} CPU s/M ops" for s in servers) + " |")
print("|---|" + "---|" * (2 * len(servers)))
for c in conns:
    cells = [f"{med[s, c][0]:,.0f}" for s in servers] + ["%.2f" % med[s, c][1] for s in servers]
    print(f"| {c} connections | " + " | ".join(cells) + " |")
if "redis" in servers and "skein" in servers:
    for c in conns:
        print(f"Skein/Redis at {c}: {med['skein', c][0] / med['redis', c][0]:.2f}x")
for s in servers:
    print(f"{s}: {conns[-1]}/{conns[0]} = {med[s, conns[-1]][0] / med[s, conns[0]][0]:.2f}x")
PY
