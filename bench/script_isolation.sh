#!/usr/bin/env bash
# A script on one key against plain GETs of other keys (issue 17): redis-server 7.0.15
# and Skein (2 workers) in one run, unpinned on this 2-core machine. See
# bench/script_isolation.py for what is measured.
# Usage: bench/script_isolation.sh [SECONDS=5] [LIGHT=4] [LOOP=3000000] ; SKEIN=...
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
SKEIN=${SKEIN:-target/release/skein-server}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
for name in redis skein; do
  port=$(free_port)
  if [ "$name" = redis ]; then
    redis-server --port "$port" --bind 127.0.0.1 --save "" --busy-reply-threshold 60000 > "$tmp/$name.log" 2>&1 &
  else
    "$SKEIN" --port "$port" --bind 127.0.0.1 --save "" --workers 2 --busy-reply-threshold 60000 > "$tmp/$name.log" 2>&1 &
  fi
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  python3 bench/script_isolation.py "$port" "$@" | sed "s/^/$name /"
  kill "${pids[-1]}"
done
