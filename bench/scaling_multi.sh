#!/usr/bin/env bash
# Scaling without a load-generator ceiling: LOADERS redis-benchmark processes run at once
# (each pinned to its own core of LOAD_CPUS, each with CLIENTS/LOADERS clients) and their
# throughputs are summed. Compares:
#   - 8 hand-split redis-server instances, one per core of SERVER_CPUS, one loader each
#   - one redis-server 7.0.15 (io-threads 1) on SERVER_CPUS
#   - one Skein with WORKERS workers on SERVER_CPUS (one port, one keyspace)
# SETUPS picks among them ("split one skein"). CLIENTS need not divide by LOADERS: the
# first CLIENTS % LOADERS loaders get one client more. Keys are drawn from KEYSPACE (-r);
# PREFILL > 0 has each server take that many random SETs (-P 16) before it is measured.
# Needs 16 cores. Usage: bench/scaling_multi.sh [requests-per-loader]
set -euo pipefail
N=${1:-500000}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-8}
SERVER_CPUS=${SERVER_CPUS:-0-7}
LOAD_FIRST=${LOAD_FIRST:-8}
LOADERS=${LOADERS:-8}
CLIENTS=${CLIENTS:-200}
TESTS=${TESTS:-"set get"}
PIPELINES=${PIPELINES:-"1 16"}
SETUPS=${SETUPS:-"split one skein"}
KEYSPACE=${KEYSPACE:-1000000}
PREFILL=${PREFILL:-0}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

wait_port() {
  for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && break; sleep 0.1; done
  if [ "$PREFILL" -gt 0 ]; then
    redis-benchmark -p "$1" -t set -n "$PREFILL" -r "$KEYSPACE" -d 64 -c 50 -P 16 -q > /dev/null
  fi
}

# load PORTS... : one loader per port in the list (ports may repeat), summed rps
load() {
  local t=$1 p=$2; shift 2
  local i=0 loaders=()
  for port in "$@"; do
    taskset -c $((LOAD_FIRST + i)) redis-benchmark -p "$port" -t "$t" -n "$N" -r "$KEYSPACE" \
      -c $((CLIENTS / LOADERS + (i < CLIENTS % LOADERS))) -d 64 -P "$p" --csv > "$tmp/l$i.csv" 2>/dev/null &
    loaders+=($!)
    i=$((i + 1))
  done
  wait "${loaders[@]}"
  cat "$tmp"/l*.csv | grep -v '^"test"' | tr -d '"' | awk -F, '{s += $2} END {printf "%.0f", s}'
  rm -f "$tmp"/l*.csv
}

report() { # label
  local label=$1; shift
  for p in $PIPELINES; do
    for t in $TESTS; do
      echo "$label $(echo "$t" | tr a-z A-Z) P=$p rps=$(load "$t" "$p" "$@")"
    done
  done
}

case " $SETUPS " in *" split "*)
# 8 hand-split instances
ports=()
for i in $(seq 0 $((LOADERS - 1))); do
  port=$((30000 + i))
  taskset -c "$i" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no > /dev/null 2>&1 &
  pids+=($!)
  ports+=("$port")
done
for port in "${ports[@]}"; do wait_port "$port"; done
report "redis-x$LOADERS-split" "${ports[@]}"
for p in "${pids[@]}"; do kill "$p"; done; pids=()
;; esac

case " $SETUPS " in *" one "*)
taskset -c "$SERVER_CPUS" redis-server --port 30100 --bind 127.0.0.1 --save "" --appendonly no > /dev/null 2>&1 &
pids+=($!); wait_port 30100
report "redis-one" $(for _ in $(seq "$LOADERS"); do echo 30100; done)
kill "${pids[@]}"; pids=()
;; esac

case " $SETUPS " in *" skein "*)
taskset -c "$SERVER_CPUS" "$SKEIN" --port 30200 --bind 127.0.0.1 --save "" --workers "$WORKERS" > /dev/null 2>&1 &
pids+=($!); wait_port 30200
report "skein-w$WORKERS" $(for _ in $(seq "$LOADERS"); do echo 30200; done)
;; esac
