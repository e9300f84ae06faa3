#!/usr/bin/env bash
# Resident memory per collection element, Skein vs redis-server 7.0.15, from /proc (not
# self-reported). Each dataset is loaded with redis-cli --pipe into a fresh server:
#   hash      one hash of N fields   (field:<i> -> value:<i>)
#   set_str   one set of N members   (member:<11 digits>)
#   set_int   one set of N integers
#   zset      one sorted set of N members (member:<11 digits>, score i*1.5)
#   hashes10  N/1 small hashes of 10 fields each (key h:<i>, f0..f9 -> v<j>)
#   list      one list of N elements (element:<i>)
# Usage: bench/coll_memory.sh [N] [skein-binary] ; env: WORKERS, DATASETS
set -euo pipefail
N=${1:-1000000}
SKEIN=${2:-target/release/skein-server}
WORKERS=${WORKERS:-1}
DATASETS=${DATASETS:-"hash set_str set_int zset hashes10 list"}
tmp=$(mktemp -d)
trap 'kill $(cat $tmp/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf $tmp' EXIT

gen() { # dataset -> RESP on stdout
python3 - "$1" "$N" <<'PY'
import sys
kind, n = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
def cmd(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    out.write(b"".join(parts))
B = 100
if kind == "hash":
    for i in range(0, n, B):
        args = ["HSET", "bighash"]
        for j in range(i, min(n, i + B)):
            args += ["field:%d" % j, "value:%d" % j]
        cmd(*args)
elif kind == "set_str":
    for i in range(0, n, B):
        cmd("SADD", "bigset", *["member:%011d" % j for j in range(i, min(n, i + B))])
elif kind == "set_int":
    for i in range(0, n, B):
        cmd("SADD", "bigset", *[str(j * 7) for j in range(i, min(n, i + B))])
elif kind == "zset":
    for i in range(0, n, B):
        args = ["ZADD", "bigzset"]
        for j in range(i, min(n, i + B)):
            args += [repr(j * 1.5), "member:%011d" % j]
        cmd(*args)
elif kind == "hashes10":
    for i in range(n // 10):
        args = ["HSET", "h:%d" % i]
        for j in range(10):
            args += ["f%d" % j, "v%d" % (i + j)]
        cmd(*args)
elif kind == "list":
    for i in range(0, n, B):
        cmd("RPUSH", "biglist", *["element:%d" % j for j in range(i, min(n, i + B))])
PY
}
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
measure() { # name dataset port cmd...
  local name=$1 ds=$2 port=$3; shift 3
  "$@" > "$tmp/$name.log" 2>&1 & echo $! > "$tmp/$name.pid"
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local before; before=$(rss_kb "$pid")
  redis-cli -p "$port" --pipe < "$tmp/$ds.resp" > /dev/null
  sleep 1
  local after; after=$(rss_kb "$pid")
  local enc; enc=$(redis-cli -p "$port" --scan --count 1 | head -1 | xargs -r redis-cli -p "$port" object encoding)
  echo "$name $ds elements=$N encoding=$enc rss_before_kb=$before rss_after_kb=$after bytes_per_element=$(( (after - before) * 1024 / N ))" | tee -a "$tmp/results"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$tmp/$name.pid"
}
for ds in $DATASETS; do
  gen "$ds" > "$tmp/$ds.resp"
  measure redis "$ds" 16379 redis-server --port 16379 --bind 127.0.0.1 --save "" --appendonly no
  measure skein "$ds" 16380 "$SKEIN" --port 16380 --bind 127.0.0.1 --workers "$WORKERS"
  rm -f "$tmp/$ds.resp"
done
echo "--- ratios (skein / redis, bytes per element)"
awk '{split($NF,b,"="); if ($1=="redis") r[$2]=b[2]; else s[$2]=b[2]}
     END {for (k in r) printf "%s %.2fx (redis %d B, skein %d B)\n", k, (r[k]>0? s[k]/r[k] : 0), r[k], s[k]}' "$tmp/results"
