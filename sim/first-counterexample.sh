#!/usr/bin/env bash
# How long a user waits for the first counterexample of each broken variant:
# `rp-sim explore --fail-fast` from STARTS fresh start seeds, the whole
# process timed (its redis-servers started, the plan drawn, the violating
# seed run and printed). Prints one Markdown row per broken variant: the
# median and the range of the wall times, and the seeds it took.
#
#   sim/first-counterexample.sh [STARTS] [-- rp-sim options]
#
# Needs a release build (cargo build --release -p redis-primitives-sim), or
# RP_SIM=/path/to/rp-sim for another one (an older commit, side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
starts=${1:-9}
shift $(( $# < 1 ? $# : 1 ))
[ "${1:-}" = "--" ] && shift
bin=${RP_SIM:-target/release/rp-sim}  # RP_SIM=/path/to/rp-sim measures another build
[ -x "$bin" ] || { echo "build first: cargo build --release -p redis-primitives-sim" >&2; exit 2; }
broken=$("$bin" scenarios | awk '/^Broken variants/ {on=1; next} on && NF == 0 {exit} on {print $1}')
echo "| broken variant | wall to the first counterexample: median (min–max) | seeds run: median (min–max) |"
echo "|---|---:|---:|"
for s in $broken; do
  walls=(); counts=()
  for i in $(seq 1 "$starts"); do
    start=$(( 11000000 + 1000 * i ))
    t0=$(date +%s%N)
    out=$("$bin" "$@" explore -s "$s" --fail-fast --seeds 1000 --start-seed "$start" --json 2>/dev/null || true)
    t1=$(date +%s%N)
    first=$(printf '%s' "$out" | python3 -c 'import json,sys; v=json.load(sys.stdin)["violations"]; print(v[0]["seed"] if v else -1)')
    [ "$first" -ge 0 ] || { echo "$s: no counterexample in 1000 seeds from $start" >&2; exit 1; }
    walls+=($(( (t1 - t0) / 1000000 ))); counts+=($(( first - start + 1 )))
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%s (%s–%s)", a[int((NR+1)/2)], a[1], a[NR]}'; }
  echo "| \`$s\` | $(med "${walls[@]}") ms | $(med "${counts[@]}") |"
done
