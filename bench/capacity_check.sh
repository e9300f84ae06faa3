#!/usr/bin/env bash
# Does `skein-bench capacity` find the server's limit? Against redis-server 7.0.15 and Skein
# in the same run: first a closed-loop sweep of client counts driven by hand with
# `skein-bench run` (the operators' method: keep the points whose p99 meets the QoS, take
# the highest throughput), then `skein-bench capacity --qos` on the same server; prints both
# answers and their ratio (target: within 10%), and whose answer capacity gave (the open
# loop's, or the closed-loop sweep's when the generator limited the open loop).
#
# Usage: bench/capacity_check.sh            env: QOS ('p99<1ms'), T (seconds per point, 3),
#        CLIENTS ("1 2 4 8 16 32 64"), SERVER_CPU (1), LOAD_CPU (0), WORKERS (1),
#        SERVERS ("redis skein"), KEEP (a folder to keep every run's JSON and capacity's
#        full output in; default: a temporary folder, removed)
set -euo pipefail
cd "$(dirname "$0")/.."
QOS=${QOS:-'p99<1ms'}
T=${T:-3}
CLIENTS=${CLIENTS:-"1 2 4 8 16 32 64"}
SERVER_CPU=${SERVER_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
WORKERS=${WORKERS:-1}
SERVERS=${SERVERS:-"redis skein"}
cargo build --release -q -p skein-server -p skein-bench
BENCH=target/release/skein-bench
OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; [ -n "${KEEP:-}" ] || rm -rf "$OUT"; }
trap cleanup EXIT
limit_ms=$(python3 -c "import re,sys; m=re.match(r'p?(\w+)<([\d.]+)(us|ms|s)', sys.argv[1]); v=float(m.group(2)); print(v/1000 if m.group(3)=='us' else v*1000 if m.group(3)=='s' else v)" "$QOS")
metric=$(python3 -c "import sys; print({'avg':'avg_ms','p50':'p50_ms','p90':'p90_ms','p99':'p99_ms','p999':'p999_ms','max':'max_ms'}[sys.argv[1].split('<')[0]])" "$QOS")

start_server() { # kind port
  if [ "$1" = redis ]; then
    taskset -c "$SERVER_CPU" redis-server --port "$2" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$OUT" >/dev/null &
  else
    taskset -c "$SERVER_CPU" target/release/skein-server --port "$2" --bind 127.0.0.1 \
      --workers "$WORKERS" --save "" --dir "$OUT" >/dev/null &
  fi
  PIDS+=($!)
  for _ in $(seq 50); do redis-cli -p "$2" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server $1 did not start" >&2; exit 1
}

printf "%-7s %14s %16s %14s %7s  %s\n" server "hand sweep" "capacity" "closed/open" ratio "source: label or verdict"
for kind in $SERVERS; do
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
  start_server "$kind" "$port"
  best=0; best_c=0
  for c in $CLIENTS; do
    taskset -c "$LOAD_CPU" $BENCH run -p "$port" -c "$c" --test-time "$T" --warmup 1 -q \
      --json "$OUT/run-$kind-$c.json" >/dev/null
    read -r ops lat < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['totals']; print(r['ops_per_sec'], r['latency'][sys.argv[2]])" "$OUT/run-$kind-$c.json" "$metric")
    echo "  $kind: $c clients: $ops ops/s, $metric $lat ms" >&2
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) and float(sys.argv[3]) > float(sys.argv[4]) else 1)" "$lat" "$limit_ms" "$ops" "$best"; then
      best=$ops; best_c=$c
    fi
  done
  # The same dimension as the hand sweep: connections only, up to the largest count tried.
  taskset -c "$LOAD_CPU" $BENCH capacity -p "$port" --qos "$QOS" --test-time "$T" --warmup 1 -q \
    --max-pipeline 1 --max-clients "${CLIENTS##* }" \
    --json "$OUT/cap-$kind.json" > "$OUT/cap-$kind.txt" || true
  python3 - "$OUT/cap-$kind.json" "$kind" "$best" "$best_c" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); kind, best, c = sys.argv[2], float(sys.argv[3]), sys.argv[4]
cap = r["sustainable_ops_per_sec"]
ratio = cap / best if best else float("nan")
print("%-7s %8.0f (c=%s) %16.0f %7.0f/%-7.0f %6.2f  %s: %s" % (
    kind, best, c, cap, r["closed_loop_ops_per_sec"], r["open_loop_ops_per_sec"], ratio,
    r["capacity_source"], r["not_confirmed"] or r["verdict"]))
PY
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
done
