#!/usr/bin/env bash
# Lua scripting, Skein vs redis-server 7.0.15, each server pinned to one core and the
# load to another (bench/per_core.sh runs it): EVALSHA of a two-command script
# (INCR + EXPIRE of its declared key), FCALL of a function doing the same, and the
# script reaching its key undeclared (the key passed in ARGV, 0 KEYS: Skein holds the
# whole database for it). The first tests load both scripts (SCRIPT LOAD, 1 request
# each); the function's library is loaded as each server starts (PREFILL: its code needs
# a newline, which a CUSTOM line cannot carry).
# Usage: bench/scripting.sh [requests] ; env as for per_core.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
# No spaces in the bodies: CUSTOM splits its lines into words.
declared="redis.call('INCR',KEYS[1])return(redis.call('EXPIRE',KEYS[1],100))"
undeclared="redis.call('INCR',ARGV[1])return(redis.call('EXPIRE',ARGV[1],100))"
sha() { printf '%s' "$1" | sha1sum | cut -d' ' -f1; }
library="#!lua name=bench
redis.register_function('incr_expire', function(keys, args) redis.call('INCR', keys[1]) return redis.call('EXPIRE', keys[1], 100) end)"
prefill=$(mktemp)
trap 'rm -f "$prefill"' EXIT
# FUNCTION LOAD REPLACE <library> as one RESP command.
printf '*4\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$7\r\nREPLACE\r\n$%d\r\n%s\r\n' \
  "${#library}" "$library" > "$prefill"
export PREFILL="$prefill"
export TESTS=${TESTS:-"load_declared load_undeclared evalsha_incr_expire fcall_incr_expire evalsha_undeclared"}
export CUSTOM="load_declared 1 SCRIPT LOAD $declared
load_undeclared 1 SCRIPT LOAD $undeclared
evalsha_incr_expire $N EVALSHA $(sha "$declared") 1 key:__rand_int__
fcall_incr_expire $N FCALL incr_expire 1 key:__rand_int__
evalsha_undeclared $N EVALSHA $(sha "$undeclared") 0 key:__rand_int__"
bench/per_core.sh "$N"
