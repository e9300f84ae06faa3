#!/usr/bin/env bash
# Streams, Skein vs redis-server 7.0.15 side by side in one run, each server pinned to one
# core (SERVER_CPUS, default 0) and the load to another (LOAD_CPUS, default 1):
#   1. XADD of 3-field entries with `*` IDs to one stream (redis-benchmark, 50 clients,
#      bench/per_core.sh with a CUSTOM test) at P=1 and P=16: throughput, p50/p99 and
#      server CPU seconds per million XADDs;
#   2. XREADGROUP COUNT 1 + XACK pairs (bench/stream_driver.py: CONNS connections, each
#      reading its own pre-filled stream through its own group) at P=1 and P=16 pairs:
#      throughput and server CPU seconds per million pairs (the Python driver can be the
#      bottleneck: CPU per pair is the figure that holds);
#   3. resident and allocated bytes per entry for MEM_N entries of 3 fields
#      (bench/coll_memory.sh's `stream` dataset).
# Usage: bench/streams.sh [xadd-requests]   the three parts above
#        bench/streams.sh instructions BIN...   XADD's instructions per operation under
#                                               callgrind (bench/instructions.sh, N XADDs)
# env: SKEIN, WORKERS, SERVER_CPUS, LOAD_CPUS, CONNS (50), ENTRIES (per connection,
#      20000), MEM_N (1000000), PARTS ("xadd group memory"), P (instructions: 16)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/custom.sh
. bench/custom.sh
custom_mode 1000000 "$@"
export TESTS=xadd
export CUSTOM="xadd $N XADD bench:stream * f1 __rand_int__ f2 value-0123456789 f3 12345"
if [ "$mode" = instructions ]; then
  custom_run
  exit 0
fi
export SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
CONNS=${CONNS:-50}
ENTRIES=${ENTRIES:-20000}
MEM_N=${MEM_N:-1000000}
PARTS=${PARTS:-"xadd group memory"}
PY=${PY:-python3}

case " $PARTS " in *" xadd "*)
  echo "=== XADD (redis-benchmark, 50 clients)"
  custom_run;;
esac

case " $PARTS " in *" group "*)
  echo "=== XREADGROUP COUNT 1 + XACK ($CONNS connections, $ENTRIES entries each)"
  tmp=$(mktemp -d)
  pid=
  trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
  port=$((20000 + RANDOM % 10000))
  for server in redis skein; do
    for p in 1 16; do
      if [ "$server" = redis ]; then
        taskset -c "$SERVER_CPUS" redis-server --port "$port" --bind 127.0.0.1 --save "" \
          --appendonly no > "$tmp/server.log" 2>&1 &
      else
        taskset -c "$SERVER_CPUS" "$SKEIN" --port "$port" --bind 127.0.0.1 --save "" \
          --workers "$WORKERS" > "$tmp/server.log" 2>&1 &
      fi
      pid=$!
      for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      taskset -c "$LOAD_CPUS" "$PY" bench/stream_driver.py --port "$port" --fill \
        --conns "$CONNS" --entries "$ENTRIES"
      echo "$server P=$p $(taskset -c "$LOAD_CPUS" "$PY" bench/stream_driver.py --port "$port" \
        --pid "$pid" --conns "$CONNS" --entries "$ENTRIES" --pipeline "$p")" | tee -a "$tmp/results"
      kill "$pid"; wait "$pid" 2>/dev/null || true
      pid=
    done
  done
  echo "--- ratios (skein / redis)"
  awk '{split($5,r,"="); split($6,c,"=");
        if ($1=="redis") {rr[$2]=r[2]; rc[$2]=c[2]} else {sr[$2]=r[2]; sc[$2]=c[2]}}
       END {for (k in rr) printf "XREADGROUP+XACK %s throughput=%.2fx cpu_per_pair=%.2fx\n", k, sr[k]/rr[k], sc[k]/rc[k]}' \
    "$tmp/results" | sort;;
esac

case " $PARTS " in *" memory "*)
  echo "=== memory per entry ($MEM_N entries of 3 fields)"
  DATASETS=stream WORKERS=$WORKERS bench/coll_memory.sh "$MEM_N" "$SKEIN";;
esac
