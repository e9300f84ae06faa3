#!/usr/bin/env bash
# Where the server's CPU per GET goes, by symbol (kernel and user space), at two client
# counts: the server pinned to cpu 0 (Skein with --workers 1), redis-benchmark GET on cpu 1,
# `perf record -F 5000 -p` over N GETs of 64-byte values (after 100,000 SETs over 100,000
# keys) at each count; prints samples per 1,000 GETs by DSO, then the symbols whose
# samples grew most from the first count to the second. Needs perf and 2+ cpus.
# Usage: bench/perf_symbols.sh [N] ; env: SERVER (a skein-server or redis-server binary;
#        default target/release/skein-server), COUNTS ("50 5000"), TOP (30)
set -euo pipefail
N=${1:-300000}
SERVER=${SERVER:-target/release/skein-server}
COUNTS=${COUNTS:-"50 5000"}
TOP=${TOP:-30}
tmp=$(mktemp -d)
sp=
trap '[ -n "$sp" ] && kill -9 $sp 2>/dev/null; rm -rf $tmp' EXIT
ulimit -n 20000
extra=()
[[ $(basename "$SERVER") == skein* ]] && extra=(--workers 1)
for c in $COUNTS; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  taskset -c 0 "$SERVER" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --maxclients 10100 "${extra[@]}" > /dev/null 2>&1 &
  sp=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
  redis-benchmark -p "$port" -t set -n 100000 -r 100000 -d 64 -c 50 -q > /dev/null
  perf record -F 5000 -p "$sp" -o "$tmp/perf.$c" 2> /dev/null &
  pp=$!
  sleep 0.3
  echo "$c clients: $(taskset -c 1 redis-benchmark -p "$port" -n "$N" -c "$c" -r 100000 -d 64 -t get -q 2>&1 | tr '\r' '\n' | grep -a 'requests per second' | tail -1)"
  kill -INT $pp; wait $pp 2>/dev/null || true
  kill "$sp"; wait "$sp" 2>/dev/null || true; sp=
  perf report -i "$tmp/perf.$c" --no-children --sort dso --stdio -F sample,dso 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | awk -v n="$N" '{printf "  %-30s %.1f samples/1k GETs\n", $2, $1*1000/n}' | head -5
  perf report -i "$tmp/perf.$c" --no-children --sort sym --stdio -F sample,sym 2>/dev/null \
    | grep -v '^#' | grep '\[' | awk -v n="$N" '{print $3, $1*1000/n}' > "$tmp/sym.$c"
done
set -- $COUNTS
python3 - "$tmp/sym.$1" "$tmp/sym.$2" "$1" "$2" "$TOP" <<'PY'
import sys
def load(p):
    d = {}
    for line in open(p):
        name, v = line.rsplit(None, 1)
        d[name] = d.get(name, 0) + float(v)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"all samples per 1k GETs: {sum(a.values()):.1f} at {sys.argv[3]}, {sum(b.values()):.1f} at {sys.argv[4]}")
print(f"{'symbol':60s} {sys.argv[3]:>7s} {sys.argv[4]:>7s} {'growth':>7s}")
rows = sorted(set(a) | set(b), key=lambda k: -(b.get(k, 0) - a.get(k, 0)))
for k in rows[: int(sys.argv[5])] + ["..."] + rows[-5:]:
    if k == "...":
        print("...")
        continue
    print(f"{k[:60]:60s} {a.get(k, 0):7.2f} {b.get(k, 0):7.2f} {b.get(k, 0) - a.get(k, 0):+7.2f}")
PY
