#!/usr/bin/env bash
# Resident memory per collection element, Skein vs redis-server 7.0.15, from /proc (not
# self-reported). Each dataset is loaded with redis-cli --pipe into a fresh server:
#   hash      one hash of N fields   (field:<i> -> value:<i>)
#   set_str   one set of N members   (member:<11 digits>)
#   set_int   one set of N integers
#   zset      one sorted set of N members (member:<11 digits>, score i*1.5)
#   hashes10  N small hashes of 10 fields each (key h:<i>, f0..f9 -> v<j>; 10N elements)
#   list      one list of N elements (element:<i>)
#   stream    one stream of N entries of 3 fields (XADD * f1 value:<i> f2 <i> f3 <text>)
# Reported per element: the growth of resident memory (RSS, from /proc) and of allocated
# memory (INFO used_memory, the allocator's figure on both servers), and the RSS after.
# Usage: bench/coll_memory.sh [N] [skein-binary] ; env: WORKERS, DATASETS, SETTLE_S
set -euo pipefail
N=${1:-1000000}
SKEIN=${2:-target/release/skein-server}
WORKERS=${WORKERS:-1}
DATASETS=${DATASETS:-"hash set_str set_int zset hashes10 list"}
# Seconds to wait after loading, so both allocators have returned freed pages.
SETTLE_S=${SETTLE_S:-12}
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
    for i in range(n):
        args = ["HSET", "h:%d" % i]
        for j in range(10):
            args += ["f%d" % j, "v%d" % (i + j)]
        cmd(*args)
elif kind == "stream":
    for i in range(n):
        cmd("XADD", "bigstream", "*", "f1", "value:%d" % i, "f2", i, "f3", "some text here")
elif kind == "list":
    for i in range(0, n, B):
        cmd("RPUSH", "biglist", *["element:%d" % j for j in range(i, min(n, i + B))])
PY
}
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
used() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
measure() { # name dataset port cmd...
  local name=$1 ds=$2 port=$3; shift 3
  "$@" > "$tmp/$name.log" 2>&1 & echo $! > "$tmp/$name.pid"
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local before; before=$(rss_kb "$pid")
  local used0; used0=$(used "$port")
  redis-cli -p "$port" --pipe < "$tmp/$ds.resp" > /dev/null
  sleep "$SETTLE_S"
  local after; after=$(rss_kb "$pid")
  local used1; used1=$(used "$port")
  local key
  case $ds in hashes10) key=h:0;; hash) key=bighash;; set_*) key=bigset;; zset) key=bigzset;; stream) key=bigstream;; *) key=biglist;; esac
  local enc; enc=$(redis-cli -p "$port" object encoding "$key")
  local n=$N; [ "$ds" = hashes10 ] && n=$((N * 10))
  echo "$name $ds elements=$n encoding=$enc rss_after_kb=$after used_per_element=$(( (used1 - used0) / n )) rss_per_element=$(( (after - before) * 1024 / n ))" | tee -a "$tmp/results"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$tmp/$name.pid"
}
for ds in $DATASETS; do
  gen "$ds" > "$tmp/$ds.resp"
  measure redis "$ds" 16379 redis-server --port 16379 --bind 127.0.0.1 --save "" --appendonly no
  measure skein "$ds" 16380 "$SKEIN" --port 16380 --bind 127.0.0.1 --save "" --workers "$WORKERS"
  rm -f "$tmp/$ds.resp"
done
echo "--- ratios (skein / redis)"
awk '{split($5,r,"="); split($6,u,"="); split($7,p,"=");
      if ($1=="redis") {rr[$2]=r[2]; ru[$2]=u[2]; rp[$2]=p[2]} else {sr[$2]=r[2]; su[$2]=u[2]; sp[$2]=p[2]}}
     END {for (k in rr) printf "%s allocated/element %.2fx (redis %d B, skein %d B)  rss-growth/element %.2fx (redis %d B, skein %d B)  rss after %.2fx\n",
          k, su[k]/ru[k], ru[k], su[k], sp[k]/rp[k], rp[k], sp[k], sr[k]/rr[k]}' "$tmp/results"
