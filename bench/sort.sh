#!/usr/bin/env bash
# SORT throughput and server CPU per operation, Skein vs redis-server 7.0.15, side by side
# in one run: each server pinned to one core (SERVER_CPUS, default 0), redis-benchmark to
# another (LOAD_CPUS, default 1), as bench/per_core.sh does. The data: a 100-element list of
# numbers `ln`, a 100-element list of words `lw`, a weight `w_<e>` (string) and a value
# `v_<e>` (string) and `h_<e>` (hash, field f) for every element.
# Cases: SORT ln; SORT lw ALPHA; SORT ln BY w_* GET v_*; SORT lw BY v_* ALPHA GET # GET
# h_*->f; SORT ln BY w_* LIMIT 0 10 (Redis's partial quicksort). (Skein holds the whole
# database for the BY/GET cases: see ARCHITECTURE.md.)
# Usage: bench/sort.sh [requests] ; env: SKEIN, WORKERS (1), SERVER_CPUS, LOAD_CPUS,
#        CLIENTS (50), PIPELINES ("1 16")
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
HZ=$(getconf CLK_TCK)
tmp=$(mktemp -d)
rpid="" spid=""
cleanup() { for p in $rpid $spid; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start() { # name port cmd...
  local name=$1 port=$2; shift 2
  taskset -c "$SERVER_CPUS" "$@" > "$tmp/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$pid"
}

load() { # port
  {
    printf 'RPUSH ln'; for i in $(seq 100); do printf ' %d' $(( (i * 7919) % 1000 )); done; echo
    printf 'RPUSH lw'; for i in $(seq 100); do printf ' word%03d' $(( (i * 37) % 100 )); done; echo
    for i in $(seq 100); do
      n=$(( (i * 7919) % 1000 )); w=$(printf 'word%03d' $(( (i * 37) % 100 )))
      echo "SET w_$n $(( (i * 104729) % 997 )).5"
      echo "SET v_$n value-$n"
      echo "SET v_$w v$(( (i * 13) % 100 ))-$w"
      echo "HSET h_$w f $i"
    done
  } | redis-cli -p "$1" > /dev/null
}

CASES=(
  "numeric|SORT ln"
  "alpha|SORT lw ALPHA"
  "by+get|SORT ln BY w_* GET v_*"
  "alpha_by+get2|SORT lw BY v_* ALPHA GET # GET h_*->f"
  "by+limit|SORT ln BY w_* LIMIT 0 10"
)

run() { # name pid port case pipeline
  local name=$1 pid=$2 port=$3 label=${4%%|*} cmd=${4#*|} p=$5
  local c0; c0=$(cpu_ticks "$pid")
  local line
  # shellcheck disable=SC2086
  line=$(taskset -c "$LOAD_CPUS" redis-benchmark -p "$port" -n "$N" -c "$CLIENTS" -P "$p" --csv $cmd | tail -1)
  local c1; c1=$(cpu_ticks "$pid")
  echo "$line" | tr -d '"' | awk -F, -v n="$name" -v p="$p" -v t="$label" -v dc="$((c1 - c0))" -v hz="$HZ" -v N="$N" \
    '{printf "%s %s P=%s rps=%.0f p50_ms=%s p99_ms=%s cpu_us_per_op=%.2f\n", n, t, p, $2, $5, $7, dc / hz / N * 1e6}'
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
rpid=$(start redis "$port_r" redis-server --port "$port_r" --bind 127.0.0.1 --save "" --appendonly no)
spid=$(start skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --workers "$WORKERS")
load "$port_r"; load "$port_s"
for port in "$port_r" "$port_s"; do
  [ "$(redis-cli -p "$port" SORT ln BY w_* GET v_* | md5sum)" = "$(redis-cli -p "$port_r" SORT ln BY w_* GET v_* | md5sum)" ] ||
    { echo "replies differ" >&2; exit 1; }
done
for p in $PIPELINES; do
  for c in "${CASES[@]}"; do
    run redis "$rpid" "$port_r" "$c" "$p" | tee -a "$tmp/results"
    run skein "$spid" "$port_s" "$c" "$p" | tee -a "$tmp/results"
  done
done
echo "--- ratios (skein / redis)"
awk '{k=$2" "$3; split($4,a,"="); split($7,c,"=");
      if ($1=="redis") {r[k]=a[2]; rc[k]=c[2]} else {s[k]=a[2]; sc[k]=c[2]}}
     END {for (k in r) printf "%s throughput=%.2fx cpu_per_op=%.2fx\n", k, s[k]/r[k], (rc[k]>0? sc[k]/rc[k] : 0)}' "$tmp/results" | sort
