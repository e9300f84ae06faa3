#!/usr/bin/env bash
# Idle CPU of an empty server: start it alone (`--port <free> --bind 127.0.0.1 --save ''`),
# wait 5 s, read utime+stime from /proc/PID/stat over $SECONDS_MEASURED s, stop it by PID.
# Prints the ticks (1/CLK_TCK s) and the share of one core.
#
# Usage: bench/idle_cpu.sh NAME BINARY [ARGS...]
#   e.g. bench/idle_cpu.sh skein target/release/skein-server
#        bench/idle_cpu.sh redis /usr/bin/redis-server
set -euo pipefail
name=$1
shift
SECONDS_MEASURED=${SECONDS_MEASURED:-30}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$@" --port "$port" --bind 127.0.0.1 --save '' >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 5
t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
sleep "$SECONDS_MEASURED"
t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
kill "$pid"
wait "$pid" 2>/dev/null || true
trap - EXIT
hz=$(getconf CLK_TCK)
pct=$(python3 -c "print(round(($t1 - $t0) / $hz / $SECONDS_MEASURED * 100, 3))")
echo "$name: $((t1 - t0)) ticks of 1/$hz s over $SECONDS_MEASURED s = $pct% of a core (load: $(cut -d' ' -f1-3 /proc/loadavg))"
