#!/usr/bin/env bash
# What a replica costs its master, Skein vs redis-server 7.0.15 in one run: SETs from
# redis-benchmark (N requests, 50 clients, pipeline P, 100-byte values over 100,000 keys)
# against a master alone, then with a redis-server 7.0.15 replica attached (the same
# replica for both masters, so only the master differs); the master's CPU per op from its
# INFO (used_cpu_sys + used_cpu_user); the replica must end with the master's dataset
# (DEBUG DIGEST). Prints ops/s and CPU seconds per million SETs for each, and the time the
# full sync of the preloaded keys took.
# Usage: bench/replication.sh ; env: SKEIN, N (1000000), P (16), KEYS (1000000 preloaded),
#        ROUNDS (2), WORKERS (Skein's --workers; default: Skein's own)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
SKEIN=${SKEIN:-target/release/skein-server}
N=${N:-1000000}
P=${P:-16}
KEYS=${KEYS:-1000000}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

cpu() { redis-cli -p "$1" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.3f", s}'; }

# bench PORT: SET throughput and the master's CPU seconds per million SETs.
bench() {
  local port=$1 c0 c1 rps
  c0=$(cpu "$port")
  rps=$(redis-benchmark -p "$port" -t set -n "$N" -c 50 -P "$P" -d 100 -r 100000 -q \
    | tr '\r' '\n' | awk '/requests per second/ {print $2}' | tail -1)
  c1=$(cpu "$port")
  python3 -c "print('%s ops/s, %.2f CPU s/M' % ('$rps', ($c1 - $c0) / $N * 1e6))"
}

for round in $(seq "$ROUNDS"); do
  for srv in redis skein; do
    mport=$(free_port)
    rport=$(free_port)
    mkdir -p "$tmp/m" "$tmp/r"
    if [ "$srv" = skein ]; then
      "$SKEIN" --port "$mport" --bind 127.0.0.1 --dir "$tmp/m" --save '' \
        --enable-debug-command yes ${WORKERS:+--workers "$WORKERS"} > "$tmp/m.log" 2>&1 &
    else
      redis-server --port "$mport" --bind 127.0.0.1 --dir "$tmp/m" --save '' \
        --appendonly no --enable-debug-command yes --repl-diskless-sync-delay 0 \
        > "$tmp/m.log" 2>&1 &
    fi
    mpid=$!
    pids+=("$mpid")
    wait_ready "$mport"
    redis-cli -p "$mport" debug populate "$KEYS" key 100 > /dev/null
    alone=$(bench "$mport")
    t0=$(date +%s.%N)
    redis-server --port "$rport" --bind 127.0.0.1 --dir "$tmp/r" --save '' --appendonly no \
      --enable-debug-command yes --replicaof 127.0.0.1 "$mport" > "$tmp/r.log" 2>&1 &
    rpid=$!
    pids+=("$rpid")
    wait_ready "$rport"
    until redis-cli -p "$rport" info replication | grep -q 'master_link_status:up'; do
      sleep 0.05
    done
    sync=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
    with=$(bench "$mport")
    # The replica ends with the master's data.
    for _ in $(seq 600); do
      [ "$(redis-cli -p "$rport" debug digest)" = "$(redis-cli -p "$mport" debug digest)" ] && break
      sleep 0.1
    done
    same=$([ "$(redis-cli -p "$rport" debug digest)" = "$(redis-cli -p "$mport" debug digest)" ] \
      && echo yes || echo NO)
    echo "round $round $srv: alone $alone | with a replica $with | full sync of $KEYS keys ${sync}s | replica identical: $same"
    kill "$rpid" "$mpid"
    wait "$rpid" "$mpid" 2>/dev/null || true
    rm -rf "$tmp/m" "$tmp/r"
  done
done
