#!/usr/bin/env bash
# AOF: SET throughput and server CPU per SET with `appendonly yes` under
# `appendfsync everysec` and `always`, Skein vs redis-server 7.0.15 in the same run, and
# (Skein) how many writes shared each fsync with `always`.
#
# Each server is pinned to CPU $SERVER_CPU (Skein with $WORKERS workers; its AOF threads
# share that core), redis-benchmark to $BENCH_CPU: SET of 64-byte values over 100,000
# keys from $CLIENTS connections, $N_EVERYSEC / $N_ALWAYS requests. The AOF directory is
# under $DIR (default: a temporary directory; put it on the disk you care about: fsync
# on tmpfs costs nothing). CPU is utime+stime of the server process from /proc/PID/stat.
#
# Usage: bench/aof.sh ; SKEIN=..., WORKERS=1, CLIENTS=50, N_EVERYSEC=200000, N_ALWAYS=20000
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
CLIENTS=${CLIENTS:-50}
N_EVERYSEC=${N_EVERYSEC:-200000}
N_ALWAYS=${N_ALWAYS:-20000}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
OWN_DIR=0
[ -z "${DIR:-}" ] && DIR=$(mktemp -d) && OWN_DIR=1
mkdir -p "$DIR"
trap 'for f in $DIR/*.pid; do [ -f "$f" ] && kill -9 $(cat "$f") 2>/dev/null; done; rm -rf $DIR/run-* $DIR/*.pid; [ $OWN_DIR = 1 ] && rm -rf "$DIR"' EXIT
TICK=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
info() { redis-cli -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }

measure() { # name fsync n cmd...
  local name=$1 fsync=$2 n=$3; shift 3
  local port; port=$(free_port)
  local dir="$DIR/run-$name-$fsync"; rm -rf "$dir"; mkdir -p "$dir"
  taskset -c "$SERVER_CPU" "$@" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" \
    --appendonly yes --appendfsync "$fsync" > "$dir/server.log" 2>&1 &
  local pid=$!
  echo "$pid" > "$DIR/$name.pid"
  wait_ready "$port"
  local w0=0 f0=0 w1=0 f1=0
  if [ "$name" = skein ]; then w0=$(info "$port" skein_aof_writes); f0=$(info "$port" skein_aof_fsyncs); fi
  local c0; c0=$(cpu_ticks "$pid")
  local t0; t0=$(date +%s.%N)
  taskset -c "$BENCH_CPU" redis-benchmark -p "$port" -t set -n "$n" -c "$CLIENTS" -d 64 \
    -r 100000 -q > /dev/null
  local t1; t1=$(date +%s.%N)
  local c1; c1=$(cpu_ticks "$pid")
  if [ "$name" = skein ]; then w1=$(info "$port" skein_aof_writes); f1=$(info "$port" skein_aof_fsyncs); fi
  local size; size=$(du -sb "$dir/appendonlydir" | awk '{print $1}')
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$name" "$fsync" "$n" "$t0" "$t1" "$c0" "$c1" "$TICK" "$w0" "$w1" "$f0" "$f1" "$size" <<'EOF'
import sys
name, fsync, n, t0, t1, c0, c1, tick, w0, w1, f0, f1, size = sys.argv[1:]
n = int(n); secs = float(t1) - float(t0); cpu = (int(c1) - int(c0)) / int(tick)
line = "%s appendfsync=%s sets=%d ops_per_s=%.0f cpu_us_per_set=%.2f aof_bytes=%s" % (
    name, fsync, n, n / secs, cpu * 1e6 / n, size)
fs = int(f1) - int(f0)
if name == "skein":
    line += " aof_writes=%d fsyncs=%d writes_per_fsync=%s" % (
        int(w1) - int(w0), fs, "%.1f" % ((int(w1) - int(w0)) / fs) if fs else "-")
print(line)
EOF
}

for fsync in everysec always; do
  n=$N_EVERYSEC; [ "$fsync" = always ] && n=$N_ALWAYS
  measure redis "$fsync" "$n" redis-server
  measure skein "$fsync" "$n" "$SKEIN" --workers "$WORKERS"
done
