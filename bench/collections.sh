#!/usr/bin/env bash
# The collection tests of redis-benchmark, Skein vs redis-server 7.0.15, each server pinned
# to one core and the load to another (see bench/per_core.sh, which this runs).
# Usage: bench/collections.sh [requests] ; env as for per_core.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export TESTS=${TESTS:-"lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100 lrange_600 mset"}
exec bench/per_core.sh "$@"
