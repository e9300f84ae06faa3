#!/usr/bin/env bash
# Pub/sub fan-out, Skein vs redis-server 7.0.15, side by side in one run.
# SUBSCRIBERS connections subscribe to one channel; PUBLISHERS connections publish
# MESSAGES messages each (PAYLOAD bytes, pipelined by BATCH) through bench/pubsub_driver.py.
# Each server is pinned to SERVER_CPUS (default 0), the driver to LOAD_CPUS (default 1);
# Skein runs with WORKERS workers (default 1). Runs alternate Redis, Skein, ROUNDS times.
# Prints messages delivered per second and server CPU seconds per million delivered
# messages for each, then Skein/Redis ratios (of the medians).
# Usage: bench/pubsub.sh [messages per publisher] ; env: SKEIN, WORKERS, SERVER_CPUS,
#        LOAD_CPUS, SUBSCRIBERS, PUBLISHERS, PAYLOAD, BATCH, WINDOW, ROUNDS, PYTHON
set -euo pipefail
MESSAGES=${1:-2000}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
PUBLISHERS=${PUBLISHERS:-4}
PAYLOAD=${PAYLOAD:-32}
BATCH=${BATCH:-20}
WINDOW=${WINDOW:-400}
ROUNDS=${ROUNDS:-3}
PYTHON=${PYTHON:-python3}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
DRIVER=$(dirname "$0")/pubsub_driver.py
ulimit -n 16384 2>/dev/null || true
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

start() { # pid-variable name port cmd... (not in a subshell: cleanup must see the pid)
  local var=$1 name=$2 port=$3; shift 3
  taskset -c "$SERVER_CPUS" "$@" > "$tmp/$name.log" 2>&1 &
  pids+=("$!")
  printf -v "$var" '%s' "$!"
  for _ in $(seq 100); do "$REDIS_CLI" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
start rpid redis "$port_r" "$REDIS_SERVER" --port "$port_r" --bind 127.0.0.1 --save "" \
  --appendonly no --maxclients 10000
start spid skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --save "" --workers "$WORKERS"
echo "subscribers=$SUBSCRIBERS publishers=$PUBLISHERS messages/publisher=$MESSAGES payload=$PAYLOAD batch=$BATCH window=$WINDOW skein_workers=$WORKERS server_cpus=$SERVER_CPUS load_cpus=$LOAD_CPUS"
for _ in $(seq "$ROUNDS"); do
  for s in redis skein; do
    if [ "$s" = redis ]; then port=$port_r pid=$rpid; else port=$port_s pid=$spid; fi
    taskset -c "$LOAD_CPUS" "$PYTHON" "$DRIVER" --port "$port" --pid "$pid" --name "$s" \
      --subscribers "$SUBSCRIBERS" --publishers "$PUBLISHERS" --messages "$MESSAGES" \
      --payload "$PAYLOAD" --batch "$BATCH" --window "$WINDOW" | tee -a "$tmp/results"
  done
done
echo "--- medians and ratios (skein / redis)"
"$PYTHON" - "$tmp/results" <<'PY'
import statistics, sys
rate, cpu = {}, {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rate.setdefault(line.split()[0], []).append(float(f["msgs_per_s"]))
    cpu.setdefault(line.split()[0], []).append(float(f["cpu_s_per_M"]))
m = {k: (statistics.median(rate[k]), statistics.median(cpu[k])) for k in rate}
for k in ("redis", "skein"):
    print("%s msgs_per_s=%.0f cpu_s_per_M=%.3f" % (k, m[k][0], m[k][1]))
print("ratios: throughput=%.2fx cpu_per_msg=%.2fx" % (m["skein"][0] / m["redis"][0], m["skein"][1] / m["redis"][1]))
PY
