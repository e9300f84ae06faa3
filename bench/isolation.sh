#!/usr/bin/env bash
# Isolation (issue 20): does a heavy command stall the other clients? Skein vs
# redis-server 7.0.15 in the same run.
#
# 1. noisy-neighbor: skein-bench's scenario (4x25 clients 1:1 SET:GET of 100 B on db 0,
#    alone, then beside a ZINTERSTORE loop over two $ZSET-member sorted sets on db 1):
#    db 0's throughput and p99 with the neighbor against alone. Skein with 2 workers, and
#    again with `offload-threshold 0` (skein-inline: no background pool), and both with
#    1 worker (skein-1w*: every db 0 client on the neighbor's worker);
#    servers and load generator unpinned on this 2-core machine, as the issue states it.
# 2. single huge keys, the light client on the same worker (Skein with 1 worker, so the
#    PING connection and the heavy one share it; Redis has one thread): the worst PING
#    round trip of a client pinging back to back while another connection runs
#    DEL of a $BIG-member set, ZUNIONSTORE of two $HUGE-member sorted sets, LRANGE 0 -1 of a
#    $HUGE-element list (from 0.5 s before the command to 0.5 s after its reply); and the
#    same client's worst round trip over $PING_SECONDS s with nothing else running.
#
# Usage: bench/isolation.sh [neighbor|keys|all] ; SKEIN=..., BENCH=..., TEST_TIME=10,
#        ZSET=100000, BIG=10000000, HUGE=1000000, PING_SECONDS=4
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WHAT=${1:-all}
SKEIN=${SKEIN:-target/release/skein-server}
BENCH=${BENCH:-target/release/skein-bench}
TEST_TIME=${TEST_TIME:-10}
ZSET=${ZSET:-100000}
BIG=${BIG:-10000000}
HUGE=${HUGE:-1000000}
PING_SECONDS=${PING_SECONDS:-4}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'for f in $tmp/*.pid; do [ -f "$f" ] && kill -9 $(cat "$f") 2>/dev/null; done; rm -rf $tmp' EXIT

start() { # name port args... : starts the server, records its pid
  local name=$1 port=$2; shift 2
  if [ "$name" = skein ]; then
    "$SKEIN" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save "" "$@" > "$tmp/$name.log" 2>&1 &
  else
    redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --save "" --appendonly no \
      "$@" > "$tmp/$name.log" 2>&1 &
  fi
  echo $! > "$tmp/$name.pid"
  wait_ready "$port"
}
stop() { kill "$(cat "$tmp/$1.pid")" 2>/dev/null || true; wait "$(cat "$tmp/$1.pid")" 2>/dev/null || true; rm -f "$tmp/$1.pid"; }

neighbor() { # name: the noisy-neighbor scenario against a fresh server
  local name=$1 port; port=$(free_port)
  case $name in
    skein) start skein "$port" --workers 2 ;;
    # the same without the pool: the neighbor's worker runs ZINTERSTORE itself
    skein-inline) start skein "$port" --workers 2 --offload-threshold 0 ;;
    # one worker: every db 0 client shares the neighbor's worker
    skein-1w) start skein "$port" --workers 1 ;;
    skein-1w-inline) start skein "$port" --workers 1 --offload-threshold 0 ;;
    redis) start redis "$port" ;;
  esac
  name=${name%%-*}
  "$BENCH" run --scenario noisy-neighbor -p "$port" --test-time "$TEST_TIME" --zset-size "$ZSET" \
    --json "$tmp/$name-neighbor.json" > "$tmp/$name-neighbor.txt"
  stop "$name"
  python3 - "$1" "$tmp/$name-neighbor.json" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
a, w = j["alone"]["totals"], j["with_neighbor"]["totals"]
print("%-15s db0 alone %8.0f ops/s p99 %6.3f p99.9 %7.3f ms | with neighbor %8.0f ops/s "
      "p99 %7.3f p99.9 %8.3f ms | throughput x%.3f p99 x%.2f | ZINTERSTORE calls %d" % (
          name, a["ops_per_sec"], a["latency"]["p99_ms"], a["latency"]["p999_ms"],
          w["ops_per_sec"], w["latency"]["p99_ms"], w["latency"]["p999_ms"],
          j["throughput_ratio"], j["p99_ratio"], j["neighbor_zinterstore_calls"]))
EOF
}

fill() { # port cmd key count [member-prefix]: COUNT elements through Lua in chunks
  local port=$1 cmd=$2 key=$3 n=$4 lo=1 hi
  local body
  case $cmd in
    sadd) body="redis.call('SADD', KEYS[1], i)" ;;
    rpush) body="redis.call('RPUSH', KEYS[1], i)" ;;
    zadd) body="redis.call('ZADD', KEYS[1], i, ARGV[3] .. i)" ;;
  esac
  while [ "$lo" -le "$n" ]; do
    hi=$((lo + 99999)); [ "$hi" -gt "$n" ] && hi=$n
    redis-cli -p "$port" eval "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do $body end" \
      1 "$key" "$lo" "$hi" "${5:-m}" > /dev/null
    lo=$((hi + 1))
  done
}

heavy() { # name port label command...: worst PING while the command runs
  local name=$1 port=$2 label=$3; shift 3
  python3 "$here/isolation_ping.py" "$port" > "$tmp/ping" &
  local pinger=$!
  sleep 0.5
  local t0 t1
  t0=$(date +%s.%N)
  redis-cli -p "$port" "$@" > /dev/null
  t1=$(date +%s.%N)
  sleep 0.5
  kill -TERM "$pinger"
  wait "$pinger"
  read -r count worst p99 < "$tmp/ping"
  printf '%-6s %-34s command %8.1f ms | PING worst %8.3f ms p99 %7.3f ms (%d pings)\n' \
    "$name" "$label" "$(echo "($t1 - $t0) * 1000" | bc)" "$worst" "$p99" "$count"
}

keys() { # name: the single-huge-key cases against a fresh server
  local name=$1 port; port=$(free_port)
  if [ "$name" = skein ]; then start skein "$port" --workers 1; else start redis "$port"; fi
  python3 "$here/isolation_ping.py" "$port" "$PING_SECONDS" > "$tmp/ping"
  read -r count worst p99 < "$tmp/ping"
  printf '%-6s %-34s                  | PING worst %8.3f ms p99 %7.3f ms (%d pings)\n' \
    "$name" "(nothing else running)" "$worst" "$p99" "$count"
  fill "$port" sadd bigset "$BIG"
  heavy "$name" "$port" "DEL of a $BIG-member set" del bigset
  fill "$port" zadd z1 "$HUGE" a
  fill "$port" zadd z2 "$HUGE" b
  heavy "$name" "$port" "ZUNIONSTORE of two $HUGE-member zsets" zunionstore zdst 2 z1 z2
  fill "$port" rpush list "$HUGE"
  heavy "$name" "$port" "LRANGE 0 -1 of a $HUGE-element list" lrange list 0 -1
  stop "$name"
}

echo "# $(date -u +%FT%TZ) $(git -C "$here" rev-parse --short HEAD 2>/dev/null || true) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$WHAT" = neighbor ] || [ "$WHAT" = all ]; then
  echo "## noisy-neighbor: skein-bench run --scenario noisy-neighbor --test-time $TEST_TIME --zset-size $ZSET"
  neighbor redis
  neighbor skein
  neighbor skein-inline
  neighbor skein-1w
  neighbor skein-1w-inline
fi
if [ "$WHAT" = keys ] || [ "$WHAT" = all ]; then
  echo "## single huge keys (Skein: --workers 1), worst round trip of a client PINGing back to back"
  keys redis
  keys skein
fi
