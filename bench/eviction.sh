#!/bin/sh
# Cache workload at a memory limit, Skein beside redis-server 7.0.15 in one run:
# for allkeys-lru and allkeys-lfu, a skewed (gaussian over the key range) GET:SET load
# of 100-byte values from skein-bench against the same maxmemory, then the hit ratio
# (keyspace_hits / lookups), the keys held at the limit and bytes per key, throughput and
# server CPU per operation (utime+stime from /proc), and resident memory against
# maxmemory (used_memory_rss at the end, and the process's peak, VmHWM). Server on core 0,
# load on core 1.
#   bench/eviction.sh [maxmemory_mb] [seconds] [key_range]
set -e
MB=${1:-32}
SECS=${2:-10}
RANGE=${3:-1000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SKEIN=${SKEIN_BIN:-$ROOT/target/release/skein-server}
BENCH=${BENCH_BIN:-$ROOT/target/release/skein-bench}
PORT=${PORT:-7791}
TCK=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
hwm() { awk '/^VmHWM:/ {print $2 * 1024}' /proc/$1/status; }
info() { redis-cli -p $PORT info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }

printf "%-6s %-12s %9s %9s %11s %10s %12s %10s %8s %8s\n" server policy hit_ratio keys bytes/key ops/s cpu_us/op used_mb rss/max hwm/max
for policy in allkeys-lru allkeys-lfu; do
  for server in redis skein; do
    if [ $server = redis ]; then
      taskset -c 0 redis-server --port $PORT --save "" --appendonly no \
        --maxmemory ${MB}mb --maxmemory-policy $policy >/dev/null 2>&1 &
    else
      taskset -c 0 "$SKEIN" --port $PORT --save "" --workers 1 \
        --maxmemory ${MB}mb --maxmemory-policy $policy >/dev/null 2>&1 &
    fi
    PID=$!
    until redis-cli -p $PORT ping >/dev/null 2>&1; do sleep 0.1; done
    base=$(info memory used_memory)
    t0=$(cpu_ticks $PID)
    taskset -c 1 "$BENCH" run -p $PORT --no-prefill --no-server-stats -t 1 -c 50 \
      --ratio 1:4 -d 100 --key-pattern G:G --key-minimum 1 --key-maximum $RANGE \
      --key-stddev $((RANGE / 8)) --test-time $SECS --distinct-client-seed >/dev/null 2>&1
    t1=$(cpu_ticks $PID)
    hits=$(info stats keyspace_hits); misses=$(info stats keyspace_misses)
    cmds=$(redis-cli -p $PORT info stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print $2}')
    keys=$(redis-cli -p $PORT dbsize)
    used=$(info memory used_memory)
    rss=$(info memory used_memory_rss)
    awk -v s=$server -v p=$policy -v h=$hits -v m=$misses -v k=$keys -v u=$used -v b=$base \
        -v c=$cmds -v secs=$SECS -v t=$((t1 - t0)) -v tck=$TCK -v r=$rss -v w=$(hwm $PID) \
        -v max=$((MB * 1048576)) 'BEGIN {
      printf "%-6s %-12s %9.4f %9d %11.1f %10.0f %12.2f %10.1f %8.3f %8.3f\n", s, p, h / (h + m), k,
        (u - b) / k, c / secs, t / tck * 1e6 / c, u / 1048576, r / max, w / max }'
    kill $PID; wait $PID 2>/dev/null || true
  done
done
