#!/usr/bin/env bash
# DBSIZE and INFO beside a long SUNIONSTORE (bench/counts_stall.py), Skein (2 workers,
# default offload) and redis-server 7.0.15 in the same run, unpinned. WHAT=KEYS: worst
# PING beside a KEYS * loop that meets the SUNIONSTORE's shards (use WORKERS=1, so the
# KEYS and PING connections share the one worker).
# Usage: bench/counts_stall.sh [members] [seconds] ; env SKEIN, WORKERS (2), WHAT
# ("DBSIZE INFO")
set -euo pipefail
MEMBERS=${1:-500000}
SECONDS_EACH=${2:-5}
SKEIN=$(realpath "${SKEIN:-target/release/skein-server}")
here=$(dirname "$0")
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
base=$((20000 + RANDOM % 10000))
(cd "$tmp" && exec redis-server --port "$base" --bind 127.0.0.1 --save "" --appendonly no > redis.log 2>&1) &
pids+=($!)
(cd "$tmp" && exec "$SKEIN" --port $((base + 1)) --bind 127.0.0.1 --save "" --workers "${WORKERS:-2}" > skein.log 2>&1) &
pids+=($!)
for port in "$base" $((base + 1)); do
  for _ in $(seq 100); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done
done
for what in ${WHAT:-DBSIZE INFO}; do
  printf "redis "; python3 "$here/counts_stall.py" "$base" "$what" "$MEMBERS" "$SECONDS_EACH"
  printf "skein "; python3 "$here/counts_stall.py" $((base + 1)) "$what" "$MEMBERS" "$SECONDS_EACH"
done
