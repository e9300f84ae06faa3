#!/usr/bin/env bash
# SORT, Skein vs redis-server 7.0.15. Both servers first get the same data: a 100-element
# list of numbers `ln`, a 100-element list of words `lw`, and for every element a weight
# `w_<e>` and a value `v_<e>` (strings) and a hash `h_<e>` (field f). Then:
#   numeric        SORT ln
#   alpha          SORT lw ALPHA
#   by_get         SORT ln BY w_* GET v_*
#   alpha_by_get2  SORT lw BY v_* ALPHA GET # GET h_*->f
#   by_limit       SORT ln BY w_* LIMIT 0 10   (Redis's partial quicksort)
# (Skein holds the whole database for the BY/GET cases: see ARCHITECTURE.md.)
#   bench/sort.sh [requests]             throughput, p50/p99 and CPU seconds per million
#                                        operations, each server pinned to one core and
#                                        redis-benchmark to another (bench/per_core.sh)
#   bench/sort.sh instructions BIN...    instructions per operation under callgrind
#                                        (bench/instructions.sh; absolute paths)
# env as for those scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/custom.sh
. bench/custom.sh
custom_mode 100000 "$@"
PREFILL=$(mktemp)
trap 'rm -f "$PREFILL"' EXIT
python3 - > "$PREFILL" <<'PY'
import sys

def cmd(*args):
    args = [str(a).encode() for a in args]
    sys.stdout.buffer.write(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))

nums = [(i * 7919) % 1000 for i in range(1, 101)]
words = ["word%03d" % ((i * 37) % 100) for i in range(1, 101)]
cmd("RPUSH", "ln", *nums)
cmd("RPUSH", "lw", *words)
for i, (n, w) in enumerate(zip(nums, words), 1):
    cmd("SET", "w_%d" % n, "%d.5" % ((i * 104729) % 997))
    cmd("SET", "v_%d" % n, "value-%d" % n)
    cmd("SET", "v_" + w, "v%d-%s" % ((i * 13) % 100, w))
    cmd("HSET", "h_" + w, "f", i)
PY
export PREFILL
export TESTS=${TESTS:-"numeric alpha by_get alpha_by_get2 by_limit"}
export CUSTOM="numeric $N SORT ln
alpha $N SORT lw ALPHA
by_get $N SORT ln BY w_* GET v_*
alpha_by_get2 $N SORT lw BY v_* ALPHA GET # GET h_*->f
by_limit $N SORT ln BY w_* LIMIT 0 10"
custom_run
