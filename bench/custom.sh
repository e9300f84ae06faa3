# Sourced by bench/per_core.sh and bench/instructions.sh: tests of one's own for
# redis-benchmark, given in CUSTOM, one a line: "name requests [options] COMMAND args..."
# (redis-benchmark options such as -r, then the command, with __rand_int__ where wanted).
# custom_test NAME DEFAULT_N sets `what` (the redis-benchmark arguments that pick the test:
# `-t NAME` unless CUSTOM defines NAME) and `n` (its request count).
declare -A custom=()
while IFS= read -r line; do
  [ -n "$line" ] && custom["${line%% *}"]="${line#* }"
done <<< "${CUSTOM:-}"

custom_test() {
  what=(-t "$1")
  n=$2
  if [ -n "${custom[$1]:-}" ]; then
    read -r -a what <<< "${custom[$1]}"
    n=${what[0]}
    what=("${what[@]:1}")
  fi
}

# For scripts that run their CUSTOM tests either way (bench/hll.sh, bench/geo.sh):
# custom_mode DEFAULT_N ARGS... reads `instructions BIN...` (mode=instructions, N from the
# environment or 20000, bins=(BIN...)) or `[requests]` (mode=throughput, N=requests or
# DEFAULT_N); custom_run then runs bench/instructions.sh on the binaries or
# bench/per_core.sh with N requests (TESTS and CUSTOM exported by the caller).
custom_mode() {
  local default=$1
  shift
  if [ "${1:-}" = instructions ]; then
    mode=instructions
    shift
    N=${N:-20000}
    bins=("$@")
  else
    mode=throughput
    N=${1:-$default}
    bins=()
  fi
}

custom_run() {
  if [ "$mode" = instructions ]; then
    bench/instructions.sh "${bins[@]}"
  else
    bench/per_core.sh "$N"
  fi
}
