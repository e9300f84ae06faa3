#!/usr/bin/env bash
# Per-core efficiency, Skein vs redis-server 7.0.15, side by side in one run.
# Each server is pinned to one core (SERVER_CPUS, default 0), redis-benchmark to another
# (LOAD_CPUS, default 1). Skein runs with WORKERS workers (default 1).
# Prints throughput, p50/p99 latency and server CPU seconds per million operations, and
# Skein/Redis ratios.
# Usage: bench/per_core.sh [requests] ; env: SKEIN, WORKERS, SERVER_CPUS, LOAD_CPUS,
#        CLIENTS, PIPELINES ("1 16"), TESTS ("set get"), BENCH_THREADS, REDIS_ARGS,
#        SERVERS ("redis skein": which to run), CUSTOM (tests of one's own that TESTS
#        may name: see bench/custom.sh), PREFILL (a file of RESP commands each server
#        gets through redis-cli --pipe once started)
set -euo pipefail
N=${1:-2000000}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"set get"}
BENCH_THREADS=${BENCH_THREADS:-}
REDIS_ARGS=${REDIS_ARGS:-}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
HZ=$(getconf CLK_TCK)
# shellcheck source=bench/custom.sh
. "$(dirname "$0")/custom.sh"
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
  for _ in $(seq 100); do "$REDIS_CLI" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  if [ -n "${PREFILL:-}" ]; then "$REDIS_CLI" -p "$port" --pipe < "$PREFILL" > /dev/null; fi
  echo "$pid"
}

run() { # name pid port test pipeline
  local name=$1 pid=$2 port=$3 t=$4 p=$5
  local extra=() what n
  [ -n "$BENCH_THREADS" ] && extra=(--threads "$BENCH_THREADS")
  custom_test "$t" "$N"
  local c0; c0=$(cpu_ticks "$pid")
  local line
  line=$(taskset -c "$LOAD_CPUS" "$REDIS_BENCHMARK" -p "$port" -n "$n" -r 1000000 \
    -c "$CLIENTS" -d 64 -P "$p" --csv "${extra[@]}" "${what[@]}" | tail -1)
  local c1; c1=$(cpu_ticks "$pid")
  # "test","rps","avg","min","p50","p95","p99","max"
  echo "$line" | tr -d '"' | awk -F, -v n="$name" -v p="$p" -v t="$t" -v dc="$((c1 - c0))" -v hz="$HZ" -v N="$n" \
    '{printf "%s %s P=%s rps=%.0f p50_ms=%s p99_ms=%s cpu_s_per_Mops=%.3f\n", n, toupper(t), p, $2, $5, $7, dc / hz / (N / 1e6)}'
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
# shellcheck disable=SC2086
SERVERS=${SERVERS:-"redis skein"}
case " $SERVERS " in *" redis "*)
  rpid=$(start redis "$port_r" "$REDIS_SERVER" --port "$port_r" --bind 127.0.0.1 --save "" --appendonly no $REDIS_ARGS);;
esac
case " $SERVERS " in *" skein "*)
  spid=$(start skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --save "" --workers "$WORKERS");;
esac
for p in $PIPELINES; do
  for t in $TESTS; do
    for s in $SERVERS; do
      if [ "$s" = redis ]; then run redis "$rpid" "$port_r" "$t" "$p"; else run skein "$spid" "$port_s" "$t" "$p"; fi | tee -a "$tmp/results"
    done
  done
done
[ "$SERVERS" = "redis skein" ] || exit 0
echo "--- ratios (skein / redis)"
awk '{k=$2" "$3; split($4,a,"="); split($7,c,"="); split($6,l,"=");
      if ($1=="redis") {r[k]=a[2]; rc[k]=c[2]; rl[k]=l[2]} else {s[k]=a[2]; sc[k]=c[2]; sl[k]=l[2]}}
     END {for (k in r) printf "%s throughput=%.2fx cpu_per_op=%.2fx p99=%.2fx\n", k, s[k]/r[k], (rc[k]>0? sc[k]/rc[k] : 0), (rl[k]>0? sl[k]/rl[k] : 0)}' "$tmp/results" | sort
