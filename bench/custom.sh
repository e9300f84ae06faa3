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
