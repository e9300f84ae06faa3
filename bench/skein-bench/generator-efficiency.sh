#!/usr/bin/env bash
# Is skein-bench a bottleneck? Runs the same workload (GET, 50 clients, 64-byte values,
# 100,000 random keys) with redis-benchmark and with skein-bench against one redis-server,
# server pinned to one core and the load generator to another, and prints each tool's
# throughput and its requests per second of its own CPU time (user + sys).
#
# Usage: bench/skein-bench/generator-efficiency.sh [requests] [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-500000}
ROUNDS=${2:-3}
BENCH=${SKEIN_BENCH_BIN:-target/release/skein-bench}
[ -x "$BENCH" ] || cargo build --release -p skein-bench
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DIR=$(mktemp -d)
taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" >"$DIR/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

cpu_of() { # user+sys seconds of a command, from GNU time's output file
  awk '{print $1 + $2}' "$1"
}
printf "%-16s %12s %14s %18s\n" tool "ops/s" "client CPU s" "ops per CPU second"
for r in $(seq "$ROUNDS"); do
  /usr/bin/time -f "%U %S" -o "$DIR/t" taskset -c 1 redis-benchmark -p "$PORT" -t get -n "$N" \
    -c 50 -r 100000 -d 64 -q 2>/dev/null | tr '\r' '\n' | grep -o 'GET: [0-9.]* requests' >"$DIR/rb"
  rps=$(awk '{print $2}' "$DIR/rb"); cpu=$(cpu_of "$DIR/t")
  printf "%-16s %12.0f %14.2f %18.0f\n" redis-benchmark "$rps" "$cpu" "$(awk -v n="$N" -v c="$cpu" 'BEGIN{print n / c}')"
  /usr/bin/time -f "%U %S" -o "$DIR/t" taskset -c 1 "$BENCH" run -p "$PORT" --ratio 0:1 -c 50 \
    -d 64 --key-maximum 99999 --key-width 16 -n $((N / 50)) -q --no-server-stats --json "$DIR/sb.json" >/dev/null
  rps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['totals']['ops_per_sec'])" "$DIR/sb.json")
  cpu=$(cpu_of "$DIR/t")
  printf "%-16s %12.0f %14.2f %18.0f\n" skein-bench "$rps" "$cpu" "$(awk -v n="$N" -v c="$cpu" 'BEGIN{print n / c}')"
done
