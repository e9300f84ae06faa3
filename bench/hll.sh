#!/usr/bin/env bash
# HyperLogLog, Skein vs redis-server 7.0.15: PFADD of random elements (10^6 distinct)
# into 10 keys (hll:000000000000 .. hll:000000000009, dense after their first few
# thousand adds), then PFCOUNT of those 10 keys in one command (their union, computed on
# every call: there is no cache for several keys).
#   bench/hll.sh [PFADD requests]        throughput, p50/p99 and CPU seconds per million
#                                        operations, each server pinned to one core and
#                                        redis-benchmark to another (bench/per_core.sh)
#   bench/hll.sh instructions BIN...     instructions per operation under callgrind
#                                        (bench/instructions.sh; N PFADDs, default 20000)
# env as for those scripts, plus PFCOUNT_N (PFCOUNT requests: 20000, 2000 under callgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/custom.sh
. bench/custom.sh
custom_mode 1000000 "$@"
[ "$mode" = instructions ] && PFCOUNT_N=${PFCOUNT_N:-2000}
R=__rand_int__
keys=""
for i in 0 1 2 3 4 5 6 7 8 9; do keys="$keys hll:00000000000$i"; done
export TESTS=${TESTS:-"pfadd pfcount10"}
export CUSTOM="pfadd $N -r 10 PFADD hll:$R e:$R$R$R$R$R$R
pfcount10 ${PFCOUNT_N:-20000} PFCOUNT$keys"
custom_run
