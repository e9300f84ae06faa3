#!/usr/bin/env bash
# GET/SET over TLS, Skein vs redis-server 7.0.15 with the same TLS options, side by side:
# each server pinned to SERVER_CPUS on a TLS-only port, redis-benchmark --tls on
# LOAD_CPUS. Prints ops/s and server CPU seconds per million ops, and Skein/Redis.
# Usage: bench/tls.sh [requests] ; env: SKEIN, CERTS (a folder with ca.crt, server.crt,
#        server.key; made with openssl in a temporary folder when unset), SERVER_CPUS (0),
#        LOAD_CPUS (1), WORKERS (1), BENCH_THREADS, PIPELINES ("1 16"), TESTS ("set get")
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-200000}
SKEIN=${SKEIN:-target/release/skein-server}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
WORKERS=${WORKERS:-1}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"set get"}
HZ=$(getconf CLK_TCK)
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf $tmp' EXIT
if [ -z "${CERTS:-}" ]; then
  CERTS=$tmp/certs
  mkdir -p "$CERTS"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ca -keyout "$CERTS/ca.key" \
    -out "$CERTS/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$CERTS/server.key" \
    -out "$tmp/server.csr" 2>/dev/null
  openssl x509 -req -in "$tmp/server.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" \
    -CAcreateserial -days 2 -out "$CERTS/server.crt" 2>/dev/null
fi
tls=(--port 0 --tls-port)
opts=(--tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key"
  --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients no --bind 127.0.0.1 --save ''
  --dir "$tmp")
extra=()
[ -n "${BENCH_THREADS:-}" ] && extra=(--threads "$BENCH_THREADS")
for srv in redis skein; do
  port=$(free_port)
  if [ "$srv" = skein ]; then
    taskset -c "$SERVER_CPUS" "$SKEIN" "${tls[@]}" "$port" "${opts[@]}" --workers "$WORKERS" \
      > "$tmp/log" 2>&1 &
  else
    taskset -c "$SERVER_CPUS" redis-server "${tls[@]}" "$port" "${opts[@]}" --appendonly no \
      > "$tmp/log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do
    redis-cli --tls --cacert "$CERTS/ca.crt" -p "$port" ping > /dev/null 2>&1 && break
    sleep 0.1
  done
  for p in $PIPELINES; do
    for t in $TESTS; do
      c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
      line=$(taskset -c "$LOAD_CPUS" redis-benchmark --tls --cacert "$CERTS/ca.crt" -p "$port" \
        -n "$N" -r 1000000 -c 50 -d 64 -P "$p" -t "$t" --csv "${extra[@]}" | tail -1)
      c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
      echo "$line" | tr -d '"' | awk -F, -v s="$srv" -v t="$t" -v p="$p" -v dc=$((c1 - c0)) \
        -v hz="$HZ" -v n="$N" '{printf "%s %s P=%s rps=%.0f cpu_s_per_Mops=%.2f\n", s, toupper(t), p, $2, dc / hz / (n / 1e6)}' \
        | tee -a "$tmp/rows"
    done
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
awk '{r[$1" "$2" "$3]=$4; c[$1" "$2" "$3]=$5} END {
  for (k in r) if (k ~ /^skein/) { b = k; sub(/^skein/, "redis", b)
    split(r[k], a, "="); split(r[b], d, "="); split(c[k], e, "="); split(c[b], f, "=")
    if (d[2] > 0 && f[2] > 0) printf "%s: Skein/Redis %.2fx ops/s, %.2fx CPU per op\n", substr(k, 7), a[2] / d[2], e[2] / f[2] } }' "$tmp/rows"
