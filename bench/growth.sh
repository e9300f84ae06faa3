#!/usr/bin/env bash
# Growth pauses (issue 20, "incremental rehashing"): one client grows a single collection
# to $N members (SADD, ZADD, HSET or RPUSH of 1,000 members a call) while another pings
# back to back; the worst PING round trip shows whether a write that grows the collection's
# index pays for moving all of it at once. Skein with 1 worker (both clients on it) vs
# redis-server 7.0.15, one after the other on fresh servers, unpinned.
#
# Usage: bench/growth.sh [N] ; SKEIN=target/release/skein-server, KINDS="set zset hash list"
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-9000000}
SKEIN=${SKEIN:-target/release/skein-server}
KINDS=${KINDS:-set zset hash list}
here=$(dirname "$0")
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf $tmp' EXIT
for kind in $KINDS; do
  for srv in skein redis; do
    port=$(free_port)
    if [ $srv = skein ]; then
      "$SKEIN" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --workers 1 > "$tmp/log" 2>&1 &
    else
      redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --appendonly no > "$tmp/log" 2>&1 &
    fi
    pid=$!
    wait_ready "$port"
    printf '%-6s ' "$srv"
    python3 "$here/growth.py" "$port" "$kind" "$N"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  done
done
