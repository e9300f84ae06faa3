#!/usr/bin/env bash
# Geo commands, Skein vs redis-server 7.0.15. Both servers first get the same POINTS points
# (default 100,000: bench/geo_points.py, seeded, uniform over lon 2..3, lat 48..49, about
# 74 x 111 km, in one sorted set `pts`, a skiplist), then:
#   geosearch_radius  GEOSEARCH pts FROMLONLAT ~2.5 ~48.5 BYRADIUS 2 km COUNT 10 ASC WITHDIST
#                     (about 150 points in range: the 10 nearest, partially sorted)
#   geosearch_box     GEOSEARCH pts FROMLONLAT ~2.5 ~48.5 BYBOX 2 2 km WITHCOORD
#                     (about 50 points, unsorted, with their coordinates)
#   geoadd            GEOADD add ~1 ~2 m:<random>  (new or updated members of one key)
# (~: redis-benchmark's __rand_int__ in the decimals, so each request differs slightly.)
#   bench/geo.sh [requests]             throughput, p50/p99 and CPU seconds per million
#                                       operations, each server pinned to one core and
#                                       redis-benchmark to another (bench/per_core.sh)
#   bench/geo.sh instructions BIN...    instructions per operation under callgrind
#                                       (bench/instructions.sh; absolute paths)
# env as for those scripts, plus POINTS and SEARCH_N (searches: requests / 10 by default,
# 2000 under callgrind); GEOADD gets the full count.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/custom.sh
. bench/custom.sh
custom_mode 200000 "$@"
if [ "$mode" = instructions ]; then
  SEARCH_N=${SEARCH_N:-2000}
else
  SEARCH_N=${SEARCH_N:-$((N / 10))}
fi
PREFILL=$(mktemp)
trap 'rm -f "$PREFILL"' EXIT
python3 bench/geo_points.py "${POINTS:-100000}" > "$PREFILL"
export PREFILL
R=__rand_int__
export TESTS=${TESTS:-"geosearch_radius geosearch_box geoadd"}
export CUSTOM="geosearch_radius $SEARCH_N GEOSEARCH pts FROMLONLAT 2.5$R 48.5$R BYRADIUS 2 km COUNT 10 ASC WITHDIST
geosearch_box $SEARCH_N GEOSEARCH pts FROMLONLAT 2.5$R 48.5$R BYBOX 2 2 km WITHCOORD
geoadd $N GEOADD add 1.$R 2.$R m:$R"
custom_run
