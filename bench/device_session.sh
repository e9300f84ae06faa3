#!/usr/bin/env bash
# One prepared run on the lent 16-core device (see docs/benchmarks.md "Reproducing on the
# device" for the .devbox folder it needs), each part time-boxed:
#   1. the collection tests of redis-benchmark per core: server on core 0, redis-benchmark
#      --threads 4 on cores 8-11 (so that at P=1 the generator is not the limit), P=1 and 16;
#   2. GET at 50 and 5,000 clients: servers on cores 0-7 (Redis uses one), redis-benchmark
#      --threads 8 on cores 8-15; Skein with 8 workers (its default there) and with 1;
#   3. scaling with 8 loaders (bench/scaling_multi.sh);
#   4. the many-clients scenario at 50 and 5,000 connections (bench/many_clients.sh):
#      servers on cores 0-3 (Skein 4 workers), skein-bench with 12 threads on cores 4-15,
#      so that at 5,000 connections the server, not the generator, is the limit.
# Usage (on the device, .devbox carried): bench/device_session.sh [outdir]
# env: CORE_SERVER, CORE_LOAD, CORE_THREADS, CONN_PIN, CONN_THREADS, MC_SERVER, MC_LOAD,
#      MC_THREADS, MC_WORKERS (the cpu lists and counts above), MC_ROUNDS (2), MC_TIME (8),
#      COLL_N (200000), LRANGE_N (40000), CONN_N (400000), SCALE_N (250000), PARTS ("1 2 3 4")
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
export LD_LIBRARY_PATH=$PWD/.devbox/lib PATH=$PWD/.devbox:$PATH SKEIN=$PWD/.devbox/skein-server BENCH=$PWD/.devbox/skein-bench
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PARTS=${PARTS:-"1 2 3 4"}
{ date -u; uname -a; nproc; grep -m1 'model name' /proc/cpuinfo; "$SKEIN" --version 2>/dev/null | head -1; redis-server --version; } 2>&1 | tee "$out/machine.txt"

for part in $PARTS; do
  case $part in
    1)
      echo "=== 1. collections per core (P=1 and P=16)"
      SERVER_CPUS=${CORE_SERVER:-0} LOAD_CPUS=${CORE_LOAD:-8-11} BENCH_THREADS=${CORE_THREADS:-4} TESTS="lpush rpush lpop rpop sadd hset spop zadd zpopmin mset" \
        timeout 200 bench/per_core.sh "${COLL_N:-200000}" 2>&1 | tee "$out/collections.txt"
      SERVER_CPUS=${CORE_SERVER:-0} LOAD_CPUS=${CORE_LOAD:-8-11} BENCH_THREADS=${CORE_THREADS:-4} TESTS="lrange_100 lrange_600" \
        timeout 100 bench/per_core.sh "${LRANGE_N:-40000}" 2>&1 | tee "$out/lrange.txt"
      ;;
    2)
      echo "=== 2. GET at 50 and 5,000 clients"
      PIN=${CONN_PIN:-"0-7 8-15"} BENCH_THREADS=${CONN_THREADS:-8} ROUNDS=2 STRACE_N=0 IDLE=0 \
        timeout 150 bench/connections.sh "${CONN_N:-400000}" 2>&1 | tee "$out/connections.txt"
      ;;
    3)
      echo "=== 3. scaling, 8 loaders"
      timeout 150 bench/scaling_multi.sh "${SCALE_N:-250000}" 2>&1 | tee "$out/scaling.txt"
      ;;
    4)
      echo "=== 4. many-clients scenario, 50 and 5,000 connections"
      SERVER_CPUS=${MC_SERVER:-0-3} WORKERS=${MC_WORKERS:-4} LOAD_CPUS=${MC_LOAD:-4-15} \
        THREADS=${MC_THREADS:-12} ROUNDS=${MC_ROUNDS:-2} TEST_TIME=${MC_TIME:-8} \
        timeout 240 bench/many_clients.sh 2>&1 | tee "$out/many_clients.txt"
      ;;
  esac
done
