#!/bin/sh
# The seed's shape, scaled down (issue 21: "a 6 GB maxmemory filled with 64-byte values
# from 100,000,000 possible keys"): each server gets the same maxmemory (allkeys-lru) and
# redis-benchmark SETs 64-byte values to random keys drawn from 100,000,000 (`-r`), FILL
# times as many SETs as Redis's keys fit at the limit, so both are filled past the limit
# and evicting. Then: keys held, keys per GiB of maxmemory, used_memory and RSS against
# maxmemory (and the process's peak RSS, VmHWM), evicted keys. Redis 7.0.15 and Skein in
# one run; server on core 0, redis-benchmark on core 1.
#   bench/keys_per_gb.sh [maxmemory_mb] [fill]     (defaults: 256, 3)
set -e
MB=${1:-256}
FILL=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SKEIN=${SKEIN_BIN:-$ROOT/target/release/skein-server}
PORT=${PORT:-7792}
RANGE=100000000
# Redis needs about 100 bytes per key here; SETs enough to pass its limit FILL times.
N=$((MB * 1048576 / 100 * FILL))

info() { redis-cli -p $PORT info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }
hwm() { awk '/^VmHWM:/ {print $2 * 1024}' /proc/$1/status; }

printf "%-6s %10s %12s %10s %11s %10s %10s %10s\n" server keys keys/GiB bytes/key used/max rss/max hwm/max evicted
for server in redis skein; do
  if [ $server = redis ]; then
    taskset -c 0 redis-server --port $PORT --save "" --appendonly no \
      --maxmemory ${MB}mb --maxmemory-policy allkeys-lru >/dev/null 2>&1 &
  else
    taskset -c 0 "$SKEIN" --port $PORT --save "" --workers 1 \
      --maxmemory ${MB}mb --maxmemory-policy allkeys-lru >/dev/null 2>&1 &
  fi
  PID=$!
  until redis-cli -p $PORT ping >/dev/null 2>&1; do sleep 0.1; done
  base=$(info memory used_memory)
  taskset -c 1 redis-benchmark -p $PORT -t set -d 64 -r $RANGE -n $N -P 16 -c 50 -q \
    >/dev/null 2>&1
  keys=$(redis-cli -p $PORT dbsize)
  used=$(info memory used_memory)
  rss=$(info memory used_memory_rss)
  evicted=$(info stats evicted_keys)
  awk -v s=$server -v k=$keys -v u=$used -v b=$base -v r=$rss -v h=$(hwm $PID) \
      -v m=$((MB * 1048576)) -v e=$evicted 'BEGIN {
    printf "%-6s %10d %12.0f %10.1f %11.3f %10.3f %10.3f %10d\n", s, k, k / (m / 1073741824),
      (u - b) / k, u / m, r / m, h / m, e }'
  kill $PID; wait $PID 2>/dev/null || true
done
