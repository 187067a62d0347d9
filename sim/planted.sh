#!/usr/bin/env bash
# Bugs planted by hand in the correct primitives, and whether the harness
# finds them (reports/planted.md).
#
# cargo-mutants (sim/cargo-mutants.sh) measures the harness with one-token
# edits. The bugs people actually write are bigger: a clock started at the
# wrong moment, a check left out, a token parsed the JSON way. Each file in
# sim/planted/ is one such bug as a patch of src/, with two header lines:
#
#   what: <the bug, in a sentence>
#   scenarios: <the correct scenarios that should find it>
#
# and, for a bug in a path only Valkey 9 takes (the native DELIFEQ and
# SET … IFEQ of ADR 0013), a third: `server: valkey`. Those scenarios then
# run on $VALKEY_SERVER (or valkey-server on PATH) instead of redis-server.
#
# A bug in a pure function (a constructor's bound, a conversion) is the
# library's own tests' to find, not a simulated world's (issue 46): its
# patch says so with `tests: <arguments of cargo test>` (for example
# `tests: -p redis-primitives --lib ttl`), and may list no scenario. The
# script runs those tests with the patch applied; a failing test finds it.
#
# For each patch this script applies it, builds rp-sim into target/planted
# (the usual target/ is left alone), runs `rp-sim explore` over seeds
# 0..N-1 of each scenario, and takes the patch back out (also on Ctrl-C or a
# failed build). A bug is found when a seed violates an invariant; the report
# says how many seeds did, which invariants, and the first seed.
#
#   sim/planted.sh                       # every patch, 100 seeds each (76 min for 58 on 2 cores)
#   sim/planted.sh --seeds 20 token-f64  # one patch
#   sim/planted.sh --out reports/planted.md
#
# Exit status 1 when a bug went unfound, 2 on bad usage or a patch that no
# longer applies (the library changed under it: refresh the patch).
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=100 out="" names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=${2:?--seeds needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
case "$seeds" in ''|*[!0-9]*|0) echo "--seeds must be a positive number, not '$seeds'" >&2; exit 2 ;; esac
if [ ${#names[@]} -eq 0 ]; then
  for p in sim/planted/*.patch; do names+=("$(basename "$p" .patch)"); done
fi
for n in "${names[@]}"; do
  [ -f "sim/planted/$n.patch" ] || { echo "no patch sim/planted/$n.patch" >&2; exit 2; }
done
# Two files with the same change would count one bug twice.
dupes=$(for p in sim/planted/*.patch; do printf '%s %s\n' "$(sed -n '/^diff/,$p' "$p" | sha256sum | cut -c1-16)" "$p"; done |
  sort | awk '$1 == last { print prev; print $2 } { last = $1; prev = $2 }' | sort -u)
if [ -n "$dupes" ]; then
  echo "these patches make the same change (keep one):" >&2
  echo "$dupes" >&2
  exit 2
fi
if ! git diff --quiet -- src; then
  echo "src/ has uncommitted changes; commit or stash them first (a patch is applied to src/ and taken out again)" >&2
  exit 2
fi

applied=""
restore() {
  if [ -n "$applied" ]; then
    git apply -R "sim/planted/$applied.patch" || echo "could not take sim/planted/$applied.patch back out of src/: run git checkout -- src" >&2
    applied=""
  fi
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

export CARGO_TARGET_DIR=target/planted
rows=() unfound=0
for n in "${names[@]}"; do
  patch="sim/planted/$n.patch"
  what=$(sed -n 's/^what: //p' "$patch" | head -1)
  scenarios=$(sed -n 's/^scenarios: //p' "$patch" | head -1)
  server=$(sed -n 's/^server: //p' "$patch" | head -1)
  tests=$(sed -n 's/^tests: //p' "$patch" | head -1)
  on=() where=""
  case "$server" in
    ''|redis) ;;
    valkey)
      valkey=${VALKEY_SERVER:-$(command -v valkey-server || true)}
      if [ ! -x "$valkey" ]; then
        echo "$patch needs Valkey 9: set VALKEY_SERVER=/path/to/valkey-server (.ci/run shows how to fetch one)" >&2
        exit 2
      fi
      on=(env REDIS_SERVER="$valkey") where=" on Valkey" ;;
    *) echo "$patch: unknown server '$server' (redis or valkey)" >&2; exit 2 ;;
  esac
  if ! git apply --check "$patch" 2>/dev/null; then
    echo "$patch no longer applies to src/: refresh it" >&2
    exit 2
  fi
  git apply "$patch"
  applied=$n
  if [ -z "$scenarios" ] && [ -z "$tests" ]; then
    echo "$patch names neither scenarios nor tests" >&2
    exit 2
  fi
  if [ -n "$scenarios" ]; then
    echo "== $n: building" >&2
    if ! cargo build --release -q -p redis-primitives-sim --bin rp-sim >&2; then
      echo "$n does not build" >&2
      exit 2
    fi
  fi
  found=0
  if [ -n "$tests" ]; then
    echo "== $n: cargo test $tests" >&2
    # shellcheck disable=SC2086 # the header holds several arguments
    if cargo test -q $tests >"$CARGO_TARGET_DIR/$n.tests.txt" 2>&1; then
      verdict="pass (not found)"
    else
      verdict="fail (found)"
      found=1
    fi
    rows+=("| \`$n\` | $what | library tests: \`cargo test $tests\` | $verdict | — | — |")
    echo "${rows[-1]}" >&2
  fi
  restore
  for s in $scenarios; do
    echo "== $n: $s, seeds 0..$((seeds - 1))" >&2
    log="$CARGO_TARGET_DIR/$n.$s.txt"
    "${on[@]}" "$CARGO_TARGET_DIR/release/rp-sim" explore -s "$s" --seeds "$seeds" --start-seed 0 > "$log" 2>/dev/null || true
    # explore's summary: "<scenario>: N seeds (a..b), K violating; …",
    # then one "  <invariant>: M violations" line per invariant.
    violating=$(sed -n "s/^$s: [0-9]* seeds ([0-9.]*), \([0-9]*\) violating.*/\1/p" "$log" | head -1)
    if [ -z "$violating" ]; then
      echo "$n: no summary line from rp-sim explore -s $s (see $log)" >&2
      exit 2
    fi
    first=$(sed -n 's/^VIOLATION  seed \([0-9]*\)$/\1/p' "$log" | head -1)
    invariants=$(sed -n "/^$s: [0-9]* seeds /,/^wall /p" "$log" | sed -n 's/^  \([a-z0-9-]*\): \([0-9]*\) violations\{0,1\}$/\1 × \2/p' | paste -sd, - | sed 's/,/, /g')
    [ "$violating" -gt 0 ] && found=1
    rows+=("| \`$n\` | $what | \`$s\`$where | $violating / $seeds | ${invariants:-none} | ${first:-—} |")
    echo "${rows[-1]}" >&2
  done
  [ $found -eq 1 ] || { unfound=$((unfound + 1)); echo "$n: NOT FOUND" >&2; }
done

report() {
  echo "# Bugs planted by hand: what the harness finds"
  echo
  echo "Generated by \`sim/planted.sh --seeds $seeds\` on $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD). Each row is one patch of \`sim/planted/\` (a bug of the kind people write, bigger than a one-token mutant: [mutants.md](mutants.md) has those) applied to the correct library, and one correct scenario run over seeds 0..$((seeds - 1)) (or, for a bug in a pure function, the library's own tests named in the patch: a failing test finds it). A seed violates when a checker reports something (the counts are what the checkers report, most of them at most five a seed); the first one replays with the planted build: \`git apply sim/planted/NAME.patch && cargo run --release -p redis-primitives-sim -- replay -s SCENARIO --seed SEED\`, then \`git apply -R\` the patch and rebuild."
  echo
  echo "| bug | what it does | scenario | seeds violating | invariants (violations) | first seed |"
  echo "|---|---|---|---:|---|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "$(( ${#names[@]} - unfound )) of ${#names[@]} bugs found."
}
if [ -n "$out" ]; then report > "$out"; echo "wrote $out" >&2; else report; fi
[ $unfound -eq 0 ]
