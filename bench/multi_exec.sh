#!/usr/bin/env bash
# MULTI / SET x3 / EXEC transactions, Skein vs redis-server 7.0.15, side by side in one run.
# Each server pinned to SERVER_CPUS (default 0), the load (bench/txload.py, which only
# counts reply bytes) to LOAD_CPUS (default 1). Prints transactions/s and server CPU
# seconds per million transactions for each, and the Skein/Redis ratios.
# Usage: bench/multi_exec.sh [seconds] ; env: SKEIN, WORKERS, SERVER_CPUS, LOAD_CPUS,
#        PROCS, CONNS, BATCH
set -euo pipefail
SECS=${1:-10}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
PROCS=${PROCS:-2}
CONNS=${CONNS:-4}
BATCH=${BATCH:-50}
HZ=$(getconf CLK_TCK)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}" ${rpid:-} ${spid:-}; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }

start() { # name port cmd...
  local name=$1 port=$2; shift 2
  taskset -c "$SERVER_CPUS" "$@" > "$tmp/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$pid"
}

measure() { # name pid port
  local c0 c1 out
  c0=$(cpu_ticks "$2")
  out=$(taskset -c "$LOAD_CPUS" python3 "$here/txload.py" "$3" --procs "$PROCS" --conns "$CONNS" \
    --batch "$BATCH" --seconds "$SECS")
  c1=$(cpu_ticks "$2")
  local tx rate
  tx=$(echo "$out" | sed 's/.*tx=\([0-9]*\).*/\1/')
  rate=$(echo "$out" | sed 's/.*tx_per_s=\([0-9]*\).*/\1/')
  awk -v n="$1" -v tx="$tx" -v r="$rate" -v dc="$((c1 - c0))" -v hz="$HZ" \
    'BEGIN {printf "%s MULTI/3xSET/EXEC tx_per_s=%d cpu_s_per_Mtx=%.3f\n", n, r, dc / hz / (tx / 1e6)}'
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
rpid=$(start redis "$port_r" redis-server --port "$port_r" --bind 127.0.0.1 --save "" --appendonly no)
spid=$(start skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --save "" --workers "$WORKERS")
r=$(measure redis "$rpid" "$port_r"); echo "$r"
s=$(measure skein "$spid" "$port_s"); echo "$s"
val() { echo "$1" | sed "s/.*$2=\([0-9.]*\).*/\1/"; }
awk -v a="$(val "$s" tx_per_s)" -v b="$(val "$r" tx_per_s)" -v c="$(val "$s" cpu_s_per_Mtx)" -v d="$(val "$r" cpu_s_per_Mtx)" \
  'BEGIN {printf "ratio skein/redis: throughput %.2fx, cpu per tx %.2fx\n", a / b, c / d}'
