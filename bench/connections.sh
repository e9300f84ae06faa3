#!/usr/bin/env bash
# Thousands of connections (issue 20), Skein vs redis-server 7.0.15 side by side in one run.
# As a new user runs it: unpinned, default settings, redis-benchmark beside the servers.
#  1. GET throughput and server CPU seconds per million GETs at CLIENTS connections (default
#     "50 5000"), for Redis, Skein with default workers and Skein with 1 worker, alternated,
#     ROUNDS times (default 3); medians, and ratios Skein/Redis and 5000/50.
#  2. Syscalls per GET (strace -c -f on the server during a STRACE_N-request run, 50 clients).
#  3. Resident memory per idle connection (IDLE connections, default 5000, each said PING
#     once; bench/idle_conns.py), after 1 s and after 5 s idle.
# STRACE_N=0 or IDLE=0 skips step 2 or 3.
# Usage: bench/connections.sh [requests] ; env: SKEIN, ROUNDS, CLIENTS, IDLE, STRACE_N,
#        PIN (set to "0 1": servers on the first cpu list, redis-benchmark on the second),
#        BENCH_THREADS (redis-benchmark --threads, for the throughput runs),
#        CONN_SERVERS (which of "redis skein skein-w1" the throughput runs load)
set -euo pipefail
N=${1:-300000}
SKEIN=${SKEIN:-target/release/skein-server}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-"50 5000"}
IDLE=${IDLE:-5000}
STRACE_N=${STRACE_N:-20000}
PIN=${PIN:-}
BENCH_THREADS=${BENCH_THREADS:-}
threads=()
[ -n "$BENCH_THREADS" ] && threads=(--threads "$BENCH_THREADS")
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}
HZ=$(getconf CLK_TCK)
here=$(dirname "$0")
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
# redis-benchmark and both servers need a descriptor per connection.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

srv_pin=(); load_pin=()
if [ -n "$PIN" ]; then
  read -r a b <<< "$PIN"; srv_pin=(taskset -c "$a"); load_pin=(taskset -c "$b")
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

declare -A PID PORT
start() { # name port cmd...
  local name=$1 port=$2; shift 2
  "${srv_pin[@]}" "$@" > "$tmp/$name.log" 2>&1 &
  PID[$name]=$!; PORT[$name]=$port
  pids+=("$!")
  for _ in $(seq 100); do "$REDIS_CLI" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  # Values to GET: 64-byte values under key:000000000000..key:000000099999.
  "$REDIS_BENCHMARK" -p "$port" -t set -n 100000 -r 100000 -d 64 -c 50 -q > /dev/null
}

base=$((20000 + RANDOM % 10000))
start redis "$base" "$REDIS_SERVER" --port "$base" --bind 127.0.0.1 --save "" --appendonly no
start skein "$((base + 1))" "$SKEIN" --port "$((base + 1))" --bind 127.0.0.1 --save ""
start skein-w1 "$((base + 2))" "$SKEIN" --port "$((base + 2))" --bind 127.0.0.1 --save "" --workers 1
SERVERS=${CONN_SERVERS:-"redis skein skein-w1"}
echo "# skein default workers: $("$REDIS_CLI" -p "$((base + 1))" config get workers | tail -1) (0 = cores: $(nproc))"

echo "--- GET throughput (rps) and server CPU s per million GETs, $ROUNDS rounds, $([ -n "$PIN" ] && echo "pinned $PIN" || echo unpinned)${BENCH_THREADS:+, redis-benchmark --threads $BENCH_THREADS}"
for r in $(seq "$ROUNDS"); do
  for c in $CLIENTS; do
    for s in $SERVERS; do
      c0=$(cpu_ticks "${PID[$s]}")
      line=$("${load_pin[@]}" "$REDIS_BENCHMARK" -p "${PORT[$s]}" -t get -n "$N" -r 100000 -d 64 -c "$c" "${threads[@]}" --csv | tail -1)
      c1=$(cpu_ticks "${PID[$s]}")
      echo "$line" | tr -d '"' | awk -F, -v s="$s" -v c="$c" -v r="$r" -v dc="$((c1 - c0))" -v hz="$HZ" -v n="$N" \
        '{printf "round=%s %s c=%s rps=%.0f cpu_s_per_Mops=%.2f\n", r, s, c, $2, dc / hz / (n / 1e6)}'
    done
  done
done | tee "$tmp/rates"
awk '{split($4,a,"="); split($5,b,"="); k=$2" "$3; rps[k]=rps[k]" "a[2]; cpu[k]=cpu[k]" "b[2]}
     function med(s,   n, v, i, j, t) { n = split(s, v, " ");
       for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
       return v[int((n + 1) / 2)] }
     END { for (k in rps) printf "%s median_rps=%.0f median_cpu_s_per_Mops=%.2f\n", k, med(rps[k]), med(cpu[k]) }' \
  "$tmp/rates" | sort > "$tmp/medians"
echo "--- medians"
cat "$tmp/medians"
echo "--- ratios"
awk '{split($3,a,"="); split($4,b,"="); r[$1" "$2]=a[2]; c[$1" "$2]=b[2]; srv[$1]=1}
     END { n = split("'"$CLIENTS"'", cl, " "); lo = cl[1]; hi = cl[n];
       for (i = 1; i <= n && r["redis c=" cl[i]] > 0; i++) { k = "c=" cl[i];
         printf "c=%s skein/redis rps=%.2fx cpu_per_op=%.2fx | skein-w1/redis rps=%.2fx cpu_per_op=%.2fx\n", cl[i],
           r["skein " k] / r["redis " k], c["skein " k] / c["redis " k], r["skein-w1 " k] / r["redis " k], c["skein-w1 " k] / c["redis " k] }
       if (n > 1) { printf "c=%s/c=%s rps:", hi, lo
         for (s in srv) if (r[s " c=" lo] > 0) printf " %s=%.2fx", s, r[s " c=" hi] / r[s " c=" lo]
         printf "\n" } }' "$tmp/medians"

[ "$STRACE_N" -gt 0 ] && echo "--- syscalls per GET (strace -c -f, $STRACE_N GETs, 50 clients)"
[ "$STRACE_N" -gt 0 ] && for s in $SERVERS; do
  strace -c -f -p "${PID[$s]}" -o "$tmp/strace.$s" 2>/dev/null & st=$!
  sleep 1
  "$REDIS_BENCHMARK" -p "${PORT[$s]}" -t get -n "$STRACE_N" -r 100000 -d 64 -c 50 -q > /dev/null
  kill -INT "$st"; wait "$st" 2>/dev/null || true
  # Columns: % time, seconds, usecs/call, calls, [errors], syscall.
  awk -v s="$s" -v n="$STRACE_N" '$NF ~ /^(read|write|epoll_wait|futex|writev|recvfrom|sendto|epoll_ctl)$/ { c[$NF] = $4 + 0 }
       $NF == "total" { tot = $4 }
       END { printf "%s total=%.2f", s, tot / n; for (k in c) printf " %s=%.2f", k, c[k] / n; printf "\n" }' "$tmp/strace.$s"
done

[ "$IDLE" -gt 0 ] || exit 0
echo "--- resident memory per idle connection ($IDLE connections, each said PING once)"
for s in $SERVERS; do
  printf "%s " "$s"; python3 "$here/idle_conns.py" "${PORT[$s]}" "${PID[$s]}" "$IDLE" 1 5
done
