#!/usr/bin/env bash
# Client-side caching (CLIENT TRACKING) cost, Skein vs redis-server 7.0.15, side by side
# in one run. Each server pinned to SERVER_CPUS (default 0), skein-bench to LOAD_CPUS
# (default 1), RESP3, CLIENTS connections, 10:1 GET:SET over KEYS keys:
#   off: no client tracks;
#   on:  every connection tracks (CLIENT TRACKING on is the first command of each one's
#        cycle): each GET remembers its key, each SET invalidates it for the clients that
#        read it (pushes the load generator skips);
#   bcast: every connection tracks in BCAST mode with prefix "k:" (every SET is broadcast
#        to every client).
# Prints skein-bench's Totals line (ops/s) and its server CPU per op for each.
# Usage: bench/tracking.sh [seconds] ; env: SKEIN, BENCH, WORKERS, SERVER_CPUS, LOAD_CPUS,
#        CLIENTS, KEYS
set -euo pipefail
SECS=${1:-5}
SKEIN=${SKEIN:-target/release/skein-server}
BENCH=${BENCH:-target/release/skein-bench}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
CLIENTS=${CLIENTS:-50}
KEYS=${KEYS:-10000}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

start() { # name port cmd...
  local name=$1 port=$2; shift 2
  taskset -c "$SERVER_CPUS" "$@" > "$tmp/$name.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

run() { # name port mode
  local track=()
  case $3 in
    on) track=(--command "CLIENT TRACKING on" --command-ratio 1) ;;
    bcast) track=(--command "CLIENT TRACKING on BCAST PREFIX k:" --command-ratio 1) ;;
  esac
  local ratios=(--command-ratio 1000 --command-ratio 100)
  [ ${#track[@]} -eq 0 ] && ratios=(--command-ratio 10 --command-ratio 1)
  redis-cli -p "$2" flushall >/dev/null
  local out
  out=$(taskset -c "$LOAD_CPUS" "$BENCH" run -p "$2" --resp 3 -c "$CLIENTS" --test-time "$SECS" \
    --warmup 1 --key-maximum "$KEYS" "${track[@]}" --command "GET k:__key__" \
    --command "SET k:__key__ __data__" "${ratios[@]}" 2>&1)
  local ops cpu
  ops=$(echo "$out" | awk '/^Totals/ {print $2}')
  cpu=$(echo "$out" | sed -n 's/.*, \([0-9.]*\) us CPU per op.*/\1/p')
  echo "$1 tracking=$3 ops_per_s=$ops server_us_cpu_per_op=$cpu"
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
start redis "$port_r" redis-server --port "$port_r" --bind 127.0.0.1 --save "" --appendonly no
start skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --save "" --workers "$WORKERS"
for mode in off on bcast; do
  run redis "$port_r" "$mode"
  run skein "$port_s" "$mode"
done
