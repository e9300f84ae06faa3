#!/usr/bin/env bash
# RDB persistence, Skein vs redis-server 7.0.15 in the same run: BGSAVE of N keys (time,
# peak memory during the save against before it, p99 of a concurrent GET/SET load during
# the save against the same load without a save) and the time to load the file at start-up.
#
# Each server is pinned to CPU $SERVER_CPU (Skein with $WORKERS workers: its BGSAVE thread
# shares that core, as Redis's forked child does), the load generator (skein-bench, open
# loop at $RATE requests/s, 1:1 SET:GET of 64-byte values over the N keys) to $BENCH_CPU.
# Memory is the proportional set size (PSS, /proc/PID/smaps_rollup) of the server and its
# children, sampled every 20 ms: pages a forked child shares with Redis count once.
#
# Usage: bench/persistence.sh [N] ; SKEIN=..., WORKERS=1, RATE=5000
set -euo pipefail
N=${1:-1000000}
SKEIN=${SKEIN:-target/release/skein-server}
BENCH=${BENCH:-target/release/skein-bench}
WORKERS=${WORKERS:-1}
RATE=${RATE:-5000}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
tmp=$(mktemp -d)
trap 'for f in $tmp/*.pid; do [ -f "$f" ] && kill -9 $(cat "$f") 2>/dev/null; done; rm -rf $tmp' EXIT

python3 "$(dirname "$0")/set_keys.py" "$N" > "$tmp/load.resp"

pss_kb() { # PSS of a process and its children, in kB
  local total=0 p
  for p in $1 $(pgrep -P "$1" || true); do
    total=$((total + $(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null || echo 0)))
  done
  echo $total
}
now() { date +%s.%N; }
field() { redis-cli -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }
wait_ready() { # port: until the server answers (and is not loading)
  for _ in $(seq 6000); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.01
  done
  return 1
}
start() { # name port dir cmd... ; prints the pid
  local name=$1 port=$2 dir=$3; shift 3
  taskset -c "$SERVER_CPU" "$@" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" \
    > "$dir/$name.log" 2>&1 &
  echo $! > "$tmp/$name.pid"
  echo $!
}
wait_save() { # port pid: until the BGSAVE ends; prints "seconds peak_pss_kb"
  local port=$1 pid=$2 t0 peak=0 cur
  t0=$(now)
  while [ "$(field "$port" rdb_bgsave_in_progress)" = "1" ]; do
    cur=$(pss_kb "$pid"); [ "$cur" -gt "$peak" ] && peak=$cur
    sleep 0.02
  done
  echo "$(echo "$(now) - $t0" | bc) $peak"
}
load_p99() { # port seconds json [bgsave-after-seconds pid]: run the load, maybe BGSAVE in it
  local port=$1 secs=$2 json=$3
  taskset -c "$BENCH_CPU" "$BENCH" run -p "$port" -q --no-server-stats -t 1 -c 10 \
    --rate "$RATE" --ratio 1:1 -d 64 --key-maximum $((N - 1)) --key-width 15 --test-time "$secs" \
    --json "$json" > /dev/null &
  local bpid=$!
  if [ $# -ge 5 ]; then
    sleep "$4"
    redis-cli -p "$port" bgsave > /dev/null
    wait_save "$port" "$5" > "$json.save"
  fi
  wait "$bpid"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["latency"]["p99_ms"])' "$json"
}

measure() { # name port cmd...
  local name=$1 port=$2; shift 2
  local dir="$tmp/$name"; mkdir -p "$dir"
  local pid; pid=$(start "$name" "$port" "$dir" "$@")
  wait_ready "$port"
  redis-cli -p "$port" --pipe < "$tmp/load.resp" > /dev/null
  sleep 1
  local keys; keys=$(redis-cli -p "$port" dbsize)
  local before; before=$(pss_kb "$pid")
  # 1. BGSAVE alone.
  redis-cli -p "$port" bgsave > /dev/null
  read -r save_s save_peak < <(wait_save "$port" "$pid")
  local secs; secs=$(python3 -c "import math; print(max(2, math.ceil($save_s) + 1))")
  # 2. The load alone, then the same load with a BGSAVE started 0.5 s in.
  local p99_base p99_save
  p99_base=$(load_p99 "$port" "$secs" "$tmp/$name.base.json")
  before=$(pss_kb "$pid")
  p99_save=$(load_p99 "$port" "$secs" "$tmp/$name.save.json" 0.5 "$pid")
  read -r load_save_s load_save_peak < "$tmp/$name.save.json.save"
  local size; size=$(stat -c %s "$dir/dump.rdb")
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  # 3. Start-up load of the file.
  local t0; t0=$(now)
  pid=$(start "$name" "$port" "$dir" "$@")
  wait_ready "$port"
  local startup; startup=$(echo "$(now) - $t0" | bc)
  local logged; logged=$(grep -o 'DB loaded from disk: [0-9.]* seconds' "$dir/$name.log" | awk '{print $5}')
  local keys2; keys2=$(redis-cli -p "$port" dbsize)
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  printf '%s keys=%s rdb_bytes=%s bgsave_s=%.3f peak_pss_ratio=%.3f bgsave_under_load_s=%.3f peak_pss_ratio_under_load=%.3f p99_ms_no_save=%s p99_ms_during_save=%s startup_ready_s=%.3f db_loaded_s=%s keys_after_load=%s\n' \
    "$name" "$keys" "$size" "$save_s" "$(echo "$save_peak / $before" | bc -l)" \
    "$load_save_s" "$(echo "$load_save_peak / $before" | bc -l)" "$p99_base" "$p99_save" \
    "$startup" "$logged" "$keys2"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
measure redis "$(free_port)" redis-server --appendonly no
measure skein "$(free_port)" "$SKEIN" --workers "$WORKERS"
