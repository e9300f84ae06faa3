#!/usr/bin/env bash
# Geo commands, Skein vs redis-server 7.0.15 side by side in one run, each server pinned to
# one core (SERVER_CPUS, default 0) and redis-benchmark to another (LOAD_CPUS, default 1),
# as bench/per_core.sh does for the built-in tests.
# Both servers first get the same POINTS points (default 100,000, seeded, uniform over
# lon 2..3, lat 48..49: about 74 x 111 km), in one sorted set `pts` (a skiplist). Then,
# for each pipeline depth:
#   GEOSEARCH_RADIUS  GEOSEARCH pts FROMLONLAT ~2.5 ~48.5 BYRADIUS 2 km COUNT 10 ASC WITHDIST
#                     (about 150 points in range: the 10 nearest, partially sorted)
#   GEOSEARCH_BOX     GEOSEARCH pts FROMLONLAT ~2.5 ~48.5 BYBOX 2 2 km WITHCOORD
#                     (about 50 points, unsorted, with coordinates)
#   GEOADD            GEOADD add ~1.x ~2.x m:<random>  (new or updated members of one key)
# (~: redis-benchmark's __rand_int__ in the decimals, so each request differs slightly.)
# Prints throughput, p50/p99 and server CPU seconds per million operations, and ratios.
# Usage: bench/geo.sh [requests] ; env: SKEIN, WORKERS (1), SERVER_CPUS, LOAD_CPUS,
#        CLIENTS (50), PIPELINES ("1 16"), POINTS (100000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
SKEIN=${SKEIN:-target/release/skein-server}
WORKERS=${WORKERS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
POINTS=${POINTS:-100000}
HZ=$(getconf CLK_TCK)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }

start() { # name port cmd...
  local name=$1 port=$2; shift 2
  taskset -c "$SERVER_CPUS" "$@" > "$tmp/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$pid"
}

# The points, as GEOADD commands in RESP for redis-cli --pipe (same seed for both).
python3 - "$POINTS" > "$tmp/points.resp" <<'EOF'
import random, sys
r = random.Random(1)
n = int(sys.argv[1])
def cmd(*a):
    return "*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a)
out = []
for i in range(0, n, 500):
    args = ["GEOADD", "pts"]
    for j in range(i, min(n, i + 500)):
        args += ["%.6f" % r.uniform(2, 3), "%.6f" % r.uniform(48, 49), "p%d" % j]
    out.append(cmd(*args))
sys.stdout.write("".join(out))
EOF

declare -A TEST=(
  [GEOSEARCH_RADIUS]="GEOSEARCH pts FROMLONLAT 2.5__rand_int__ 48.5__rand_int__ BYRADIUS 2 km COUNT 10 ASC WITHDIST"
  [GEOSEARCH_BOX]="GEOSEARCH pts FROMLONLAT 2.5__rand_int__ 48.5__rand_int__ BYBOX 2 2 km WITHCOORD"
  [GEOADD]="GEOADD add 1.__rand_int__ 2.__rand_int__ m:__rand_int__"
)
ORDER="GEOSEARCH_RADIUS GEOSEARCH_BOX GEOADD"

run() { # name pid port test pipeline
  local name=$1 pid=$2 port=$3 t=$4 p=$5
  local c0; c0=$(cpu_ticks "$pid")
  local line
  # shellcheck disable=SC2086
  line=$(taskset -c "$LOAD_CPUS" redis-benchmark -p "$port" -n "$N" -r 1000000 -c "$CLIENTS" \
    -P "$p" --csv ${TEST[$t]} | tail -1)
  local c1; c1=$(cpu_ticks "$pid")
  echo "$line" | tr -d '"' | awk -F, -v n="$name" -v p="$p" -v t="$t" -v dc="$((c1 - c0))" -v hz="$HZ" -v N="$N" \
    '{printf "%s %s P=%s rps=%.0f p50_ms=%s p99_ms=%s cpu_s_per_Mops=%.3f\n", n, t, p, $2, $5, $7, dc / hz / (N / 1e6)}'
}

port_r=$((20000 + RANDOM % 10000)); port_s=$((port_r + 1))
rpid=$(start redis "$port_r" redis-server --port "$port_r" --bind 127.0.0.1 --save "" --appendonly no)
spid=$(start skein "$port_s" "$SKEIN" --port "$port_s" --bind 127.0.0.1 --workers "$WORKERS")
for port in "$port_r" "$port_s"; do
  redis-cli -p "$port" --pipe < "$tmp/points.resp" > /dev/null
  [ "$(redis-cli -p "$port" zcard pts)" = "$POINTS" ] || { echo "loading points failed" >&2; exit 1; }
done
# Same answers from both before timing anything.
probe="GEOSEARCH pts FROMLONLAT 2.5 48.5 BYRADIUS 2 km COUNT 10 ASC WITHDIST"
# shellcheck disable=SC2086
[ "$(redis-cli -p "$port_r" $probe)" = "$(redis-cli -p "$port_s" $probe)" ] || { echo "replies differ" >&2; exit 1; }
for p in $PIPELINES; do
  for t in $ORDER; do
    run redis "$rpid" "$port_r" "$t" "$p" | tee -a "$tmp/results"
    run skein "$spid" "$port_s" "$t" "$p" | tee -a "$tmp/results"
  done
done
echo "--- ratios (skein / redis)"
awk '{k=$2" "$3; split($4,a,"="); split($7,c,"="); split($6,l,"=");
      if ($1=="redis") {r[k]=a[2]; rc[k]=c[2]; rl[k]=l[2]} else {s[k]=a[2]; sc[k]=c[2]; sl[k]=l[2]}}
     END {for (k in r) printf "%s throughput=%.2fx cpu_per_op=%.2fx p99=%.2fx\n", k, s[k]/r[k], (rc[k]>0? sc[k]/rc[k] : 0), (rl[k]>0? sl[k]/rl[k] : 0)}' "$tmp/results" | sort
