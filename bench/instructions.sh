#!/usr/bin/env bash
# Instructions per operation under valgrind's callgrind: a count that does not depend on
# the machine's other load, unlike CPU time on a shared VM, so small differences between
# two builds (or against redis-server) can be seen.
# For each server binary: start it under callgrind (Skein with --workers 1), zero the
# counters, run redis-benchmark (-n N, -P P, -c 50, random keys), dump the counters per
# thread, and count the busiest thread (Skein's worker, Redis's main thread), less what
# that thread executes idle over the same wall time (measured in an idle window of IDLE_S
# seconds first; under valgrind a second of idle work weighs ~50x what it does natively).
# Usage: bench/instructions.sh BIN [BIN ...]  (a path ending in redis-server is run as
#        Redis) ; env: TESTS ("set get"), N (20000), P (16), IDLE_S (5), CUSTOM (tests
#        of one's own that TESTS may name: see bench/custom.sh), PREFILL (a file of RESP
#        commands each server gets through redis-cli --pipe before anything is counted)
set -euo pipefail
# shellcheck source=bench/custom.sh
. "$(dirname "$0")/custom.sh"
TESTS=${TESTS:-"set get"}
N=${N:-20000}
P=${P:-16}
IDLE_S=${IDLE_S:-5}
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

declare -A idle
per_thread() { # "thread count" for each thread's file of the last dump, then remove them
  local f
  for f in "$tmp"/callgrind.out.*; do
    [ -f "$f" ] || continue
    echo "${f##*-} $(awk '/^(summary|totals):/ {print $2; exit}' "$f")"
    rm -f "$f"
  done
}

for bin in "$@"; do
  # The server runs from the temporary directory: make a relative path absolute.
  case "$bin" in /*) ;; */*) bin="$PWD/$bin" ;; esac
  port=$((30000 + RANDOM % 10000))
  if [[ "$bin" == *redis-server ]]; then
    args=(--port "$port" --bind 127.0.0.1 --save "" --appendonly no)
  else
    args=(--port "$port" --bind 127.0.0.1 --save "" --workers 1)
  fi
  (cd "$tmp" && exec valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/callgrind.out.%p" \
      "$bin" "${args[@]}" > "$tmp/server.log" 2>&1) &
  pid=$!
  for _ in $(seq 1500); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  if [ -n "${PREFILL:-}" ]; then redis-cli -p "$port" --pipe < "$PREFILL" > /dev/null; fi
  callgrind_control -z "$pid" >/dev/null 2>&1
  rm -f "$tmp"/callgrind.out.*
  sleep "$IDLE_S"
  callgrind_control -d "$pid" >/dev/null 2>&1
  idle=()
  while read -r th n; do idle[$th]=$n; done < <(per_thread)
  for t in $TESTS; do
    callgrind_control -z "$pid" >/dev/null 2>&1
    rm -f "$tmp"/callgrind.out.*
    t0=$(date +%s.%N)
    custom_test "$t" "$N"
    redis-benchmark -p "$port" -n "$n" -r 1000000 -c 50 -d 64 -P "$P" -q "${what[@]}" > /dev/null
    t1=$(date +%s.%N)
    callgrind_control -d "$pid" >/dev/null 2>&1
    read -r th ir < <(per_thread | sort -k2,2n | tail -1)
    idle_per_s=$(( ${idle[$th]:-0} / IDLE_S ))
    awk -v b="$bin" -v t="$t" -v ir="$ir" -v idle="$idle_per_s" -v t0="$t0" -v t1="$t1" -v n="$n" -v p="$P" \
      'BEGIN {net = ir - idle * (t1 - t0); printf "%s %s P=%s instructions_per_op=%.0f (idle share %.1f%%)\n", b, toupper(t), p, net / n, 100 * idle * (t1 - t0) / ir}'
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=""
done
