#!/usr/bin/env bash
# RDB persistence, Skein vs redis-server 7.0.15 in the same run: BGSAVE of N keys (time,
# peak memory during the save against before it, p99 of a concurrent GET/SET load during
# the save against the same load without a save), the same BGSAVE under a full-speed SET
# load (peak memory, and the longest any SET waited, against the same load without a
# save), and the time to load the file at start-up (from the start until PING answers
# PONG, not -LOADING).
#
# Each server is pinned to CPU $SERVER_CPU (Skein with $WORKERS workers: its BGSAVE thread
# shares that core, as Redis's forked child does), the load generator (skein-bench) to
# $BENCH_CPU: an open loop at $RATE requests/s, 1:1 SET:GET of 64-byte values over the N
# keys, for the p99; a closed loop of SETs from $FULL_CLIENTS connections for the
# full-speed load. Memory (bench/mem_sampler.py, every 20 ms): the proportional set size
# (PSS) of the server and its children, so pages a forked child shares with Redis count
# once; the server's own peak RSS (VmHWM, reset before each save with clear_refs when
# allowed); and the child's private (copied-on-write) pages.
#
# Usage: bench/persistence.sh [N] ; SKEIN=..., WORKERS=1, RATE=5000, FULL_CLIENTS=20,
# SERVERS="redis skein" (which to measure), SKEIN_ARGS="" (more skein-server arguments)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-1000000}
SKEIN=${SKEIN:-target/release/skein-server}
BENCH=${BENCH:-target/release/skein-bench}
WORKERS=${WORKERS:-1}
RATE=${RATE:-5000}
FULL_CLIENTS=${FULL_CLIENTS:-20}
SERVERS=${SERVERS:-redis skein}
SKEIN_ARGS=${SKEIN_ARGS:-}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
tmp=$(mktemp -d)
trap 'for f in $tmp/*.pid; do [ -f "$f" ] && kill -9 $(cat "$f") 2>/dev/null || true; done; rm -rf $tmp' EXIT

python3 "$(dirname "$0")/set_keys.py" "$N" > "$tmp/load.resp"

SAMPLER="python3 $(dirname "$0")/mem_sampler.py"
mem_now() { $SAMPLER "$1"; } # pid: "pss_kb rss_kb"
now() { date +%s.%N; }
field() { redis-cli -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }
stop() { # pid: kill -9, until it has exited (its port free again; a zombie counts)
  kill -9 "$1" 2>/dev/null || true
  while [ -n "$(ps -o stat= -p "$1" | grep -v Z || true)" ]; do sleep 0.05; done
}
start() { # name port dir cmd... ; prints the pid
  local name=$1 port=$2 dir=$3; shift 3
  taskset -c "$SERVER_CPU" "$@" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" \
    > "$dir/$name.log" 2>&1 &
  echo $! > "$tmp/$name.pid"
  echo $!
}
bgsave() { # port pid: BGSAVE, until it ends; prints "seconds peak_pss_kb peak_hwm_kb child_private_kb"
  local port=$1 pid=$2 t0 spid
  echo 5 > "/proc/$pid/clear_refs" 2>/dev/null || true
  rm -f "$tmp/peaks" "$tmp/peaks.ready"
  $SAMPLER "$pid" "$tmp/peaks" & spid=$!
  while [ ! -e "$tmp/peaks.ready" ]; do sleep 0.01; done
  t0=$(now)
  redis-cli -p "$port" bgsave > /dev/null
  while [ "$(field "$port" rdb_bgsave_in_progress)" = "1" ]; do sleep 0.02; done
  local secs; secs=$(echo "$(now) - $t0" | bc)
  kill -TERM "$spid"; wait "$spid" || true
  read -r pss _ hwm private < "$tmp/peaks"
  echo "$secs $pss $hwm $private"
}
under_load() { # port seconds json full|rate [bgsave-after-seconds pid]: run a load, maybe a
  # BGSAVE in it; prints "p99_ms max_ms" of the load
  local port=$1 secs=$2 json=$3 kind=$4 load
  if [ "$kind" = full ]; then
    load=(-c "$FULL_CLIENTS" --ratio 1:0)
  else
    load=(-c 10 --rate "$RATE" --ratio 1:1)
  fi
  taskset -c "$BENCH_CPU" "$BENCH" run -p "$port" -q --no-server-stats -t 1 "${load[@]}" \
    -d 64 --key-maximum $((N - 1)) --key-width 15 --test-time "$secs" --json "$json" > /dev/null &
  local bpid=$!
  if [ $# -ge 6 ]; then
    sleep "$5"
    bgsave "$port" "$6" > "$json.save"
  fi
  wait "$bpid"
  python3 -c 'import json,sys; l = json.load(open(sys.argv[1]))["totals"]["latency"]; print(l["p99_ms"], l["max_ms"])' "$json"
}

measure() { # name port cmd...
  local name=$1 port=$2; shift 2
  local dir="$tmp/$name"; mkdir -p "$dir"
  local pid; pid=$(start "$name" "$port" "$dir" "$@")
  wait_ready "$port" 6000 # (60 s: a big file loading)
  redis-cli -p "$port" --pipe < "$tmp/load.resp" > /dev/null
  sleep 1
  local keys; keys=$(redis-cli -p "$port" dbsize)
  local pss rss rss_before
  read -r pss rss < <(mem_now "$pid")
  rss_before=$rss
  # 1. BGSAVE alone.
  read -r save_s save_pss save_hwm _ < <(bgsave "$port" "$pid")
  local r1 r2; r1=$(ratio "$save_pss" "$pss"); r2=$(ratio "$save_hwm" "$rss")
  local secs; secs=$(python3 -c "import math; print(max(2, math.ceil($save_s) + 1))")
  # 2. The GET/SET load alone, then with a BGSAVE; 3. the same for SETs at full speed.
  read -r p99_base _ p99_save _ rate_save_s r3 r4 _ _ < <(phase "$port" "$pid" "$secs" "$name" rate)
  read -r fp99_base max_base fp99_save max_save full_save_s r5 r6 full_private sets \
    < <(phase "$port" "$pid" "$secs" "$name" full)
  local size; size=$(stat -c %s "$dir/dump.rdb")
  stop "$pid"
  # 4. Start-up load of the file.
  local t0; t0=$(now)
  pid=$(start "$name" "$port" "$dir" "$@")
  wait_ready "$port" 6000 # (60 s: a big file loading)
  local startup; startup=$(echo "$(now) - $t0" | bc)
  local logged; logged=$(grep -o 'DB loaded from disk: [0-9.]* seconds' "$dir/$name.log" | awk '{print $5}')
  local keys2; keys2=$(redis-cli -p "$port" dbsize)
  stop "$pid"
  printf '%s keys=%s rss_before_kb=%s rdb_bytes=%s\n' "$name" "$keys" "$rss_before" "$size"
  printf '  bgsave alone: %.3f s, peak/before pss=%.3f rss=%.3f\n' "$save_s" "$r1" "$r2"
  printf '  bgsave under %s req/s GET/SET: %.3f s, peak/before pss=%.3f rss=%.3f; p99 ms no save=%s during save=%s\n' \
    "$RATE" "$rate_save_s" "$r3" "$r4" "$p99_base" "$p99_save"
  printf '  bgsave under full-speed SETs (%s conns, %s SETs): %.3f s, peak/before pss=%.3f rss=%.3f, child private %s kB; SET p99/max ms no save=%s/%s during save=%s/%s\n' \
    "$FULL_CLIENTS" "$sets" "$full_save_s" "$r5" "$r6" "$full_private" "$fp99_base" "$max_base" "$fp99_save" "$max_save"
  printf '  start-up: ready (PONG) after %.3f s, log "DB loaded from disk" %s s, keys %s\n' \
    "$startup" "$logged" "$keys2"
}

ratio() { echo "$1 / $2" | bc -l; }

phase() { # port pid seconds name rate|full: the load alone, then with a BGSAVE 0.5 s in;
  # prints "p99_ms max_ms (alone) p99_ms max_ms (with the save) save_s peak/before_pss
  # peak/before_rss child_private_kb requests"
  local port=$1 pid=$2 secs=$3 json=$tmp/$4.$5 base during pss rss
  base=$(under_load "$port" "$secs" "$json.base.json" "$5")
  read -r pss rss < <(mem_now "$pid")
  during=$(under_load "$port" "$secs" "$json.save.json" "$5" 0.5 "$pid")
  read -r save_s peak_pss hwm private < "$json.save.json.save"
  echo "$base $during $save_s $(ratio "$peak_pss" "$pss") $(ratio "$hwm" "$rss") $private" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["ops"])' "$json.save.json")"
}

for s in $SERVERS; do
  case $s in
    redis) measure redis "$(free_port)" redis-server --appendonly no ;;
    # shellcheck disable=SC2086 # SKEIN_ARGS: several words
    skein) measure skein "$(free_port)" "$SKEIN" --workers "$WORKERS" $SKEIN_ARGS ;;
  esac
done
