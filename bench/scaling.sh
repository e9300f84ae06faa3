#!/usr/bin/env bash
# Scaling with cores (design.md section 4): servers on cores 0-7, redis-benchmark
# --threads 8 on cores 8-15, 200 clients, 1M keys, 64-byte values, GET/SET at P=1 and
# GET/SET at P=16. Redis 7.0.15 with io-threads 1 and io-threads 8, then Skein with
# 1, 2, 4, 8 workers. Needs a machine with 16 cores.
# Usage: bench/scaling.sh [requests]   (env as bench/per_core.sh)
set -euo pipefail
N=${1:-2000000}
here=$(dirname "$0")
export SERVER_CPUS=${SERVER_CPUS:-0-7} LOAD_CPUS=${LOAD_CPUS:-8-15} CLIENTS=${CLIENTS:-200} BENCH_THREADS=${BENCH_THREADS:-8}
echo "== redis io-threads 1"
SERVERS=redis "$here/per_core.sh" "$N"
echo "== redis io-threads 8 (reads too)"
SERVERS=redis REDIS_ARGS="--io-threads 8 --io-threads-do-reads yes" "$here/per_core.sh" "$N"
for w in ${WORKER_COUNTS:-1 2 4 8}; do
  echo "== skein workers $w"
  SERVERS=skein WORKERS=$w "$here/per_core.sh" "$N"
done
