#!/usr/bin/env bash
# Resident memory per key, Skein vs redis-server 7.0.15, measured from /proc (not
# self-reported): N keys of 15 bytes with 64-byte values, loaded with redis-cli --pipe.
# Usage: bench/memory.sh [N] [skein-binary]
set -euo pipefail
N=${1:-1000000}
SKEIN=${2:-target/release/skein-server}
WORKERS=${WORKERS:-1}
tmp=$(mktemp -d)
trap 'kill $(cat $tmp/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf $tmp' EXIT
python3 "$(dirname "$0")/set_keys.py" "$N" > "$tmp/load.resp"
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
measure() { # name port cmd...
  local name=$1 port=$2; shift 2
  "$@" > "$tmp/$name.log" 2>&1 & echo $! > "$tmp/$name.pid"
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local before; before=$(rss_kb "$pid")
  redis-cli -p "$port" --pipe < "$tmp/load.resp" > /dev/null
  sleep 1
  local after; after=$(rss_kb "$pid")
  local keys; keys=$(redis-cli -p "$port" dbsize)
  echo "$name keys=$keys rss_before_kb=$before rss_after_kb=$after bytes_per_key=$(( (after - before) * 1024 / keys ))"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
measure redis 16379 redis-server --port 16379 --bind 127.0.0.1 --save "" --appendonly no
measure skein 16380 "$SKEIN" --port 16380 --bind 127.0.0.1 --save "" --workers "$WORKERS"
