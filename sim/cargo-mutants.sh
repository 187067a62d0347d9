#!/usr/bin/env bash
# The Rust half of the harness's mutation measure (reports/mutants.md).
#
# cargo-mutants mutates the library's Rust code, one mutant at a time, and
# runs the simulation's pinned clean seeds (sim/tests/harness/scenarios.rs,
# seeds 0..24 of every correct scenario of the mutated file's family) as the
# test command: a mutant is killed when a checker reports a violation there,
# or when one seed of those scenarios gives two digests (run twice in-process
# and once by `rp-sim replay`): a change that draws from unseeded randomness.
# The same command runs the library's own checks of what needs no simulated
# world (issue #46 item 5): the `documented_edges` unit tests in src/, and
# tests/library's documented_edges.rs and arguments.rs (constructor edges on
# both sides, against a real server where a connection is needed), so a
# mutant of a bound is still killed now that the simulation no longer probes it.
#
#   cargo install cargo-mutants --locked
#   sim/cargo-mutants.sh              # every group, about 2-3 h on 2 cores
#   sim/cargo-mutants.sh lock         # one group
#   sim/cargo-mutants.sh --recheck lock  # only what lock's last run missed
#   cargo run --release -p redis-primitives-sim --features mutants -- mutants --cargo-mutants target/mutants --out reports/mutants.md
#
# Results go to target/mutants/<group>/mutants.out (cargo-mutants' format).
set -euo pipefail
cd "$(dirname "$0")/.."

# The test command: the simulation's harness (its pinned seeds and the
# determinism check) and the library's unit and integration tests of the
# documented edges, in one `cargo test` over both packages; each binary runs
# only the tests the filters name (libtest filters are substrings).
TEST_PACKAGES=(--test-package redis-primitives-sim --test-package redis-primitives)
TEST_ARGS=(-- --lib --test harness --test library --
  scenarios::correct_scenarios scenarios::same_seed_same_digest documented_edges arguments::)

group() {
  local name=$1 scenarios=$2
  shift 2
  local files=()
  for f in "$@"; do files+=(-f "$f"); done
  echo "== $name: ${*} against ${scenarios}" >&2
  mkdir -p "target/mutants/$name"
  # The baseline is skipped: cargo-mutants would test the mutated package's
  # own tests there, not the simulation's.
  RP_GATE_SCENARIOS="$scenarios" cargo mutants -j 2 -p redis-primitives "${TEST_PACKAGES[@]}" \
    --baseline=skip --timeout 300 --build-timeout 900 "${files[@]}" -o "target/mutants/$name" \
    "${TEST_ARGS[@]}" || true
}

# --recheck GROUP...: re-run only the mutants that group's last run missed
# (or timed out on), into target/mutants/GROUP-recheck; the report takes
# their new outcome over the old one.
if [ "${1:-}" = "--recheck" ]; then
  shift
  for name in "$@"; do
    out="target/mutants/$name/mutants.out"
    [ -f "$out/missed.txt" ] || { echo "no earlier run of $name" >&2; exit 2; }
    # A group already re-checked is re-checked again from its latest run.
    [ -d "target/mutants/$name-recheck" ] && { echo "$name-recheck exists: pass --recheck $name-recheck" >&2; exit 2; }
    res=() files=()
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      # The name without line:column, as a regex that matches it exactly.
      desc=$(printf '%s' "$line" | sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /')
      file=${desc%%: *}
      rest=${desc#*: }
      res+=(--re "^$(printf '%s' "$file" | sed 's/[.[\*^$()+?{|]/\\&/g'):[0-9]+:[0-9]+: $(printf '%s' "$rest" | sed 's/[.[\*^$()+?{|]/\\&/g')\$")
      files+=(-f "$file")
    done < <(cat "$out/missed.txt" "$out/timeout.txt" 2>/dev/null)
    [ ${#res[@]} -gt 0 ] || { echo "$name: nothing to re-run" >&2; continue; }
    base=${name%%-recheck*}
    scen=$(grep -E "^run $base " "$0" | awk '{print $3}')
    echo "== $name-recheck: $((${#res[@]} / 2)) mutants against $scen" >&2
    if [ -n "${RP_MUTANTS_LIST:-}" ]; then
      cargo mutants -p redis-primitives "${files[@]}" "${res[@]}" --list
      continue
    fi
    mkdir -p "target/mutants/$name-recheck"
    RP_GATE_SCENARIOS="$scen" cargo mutants -j 2 -p redis-primitives "${TEST_PACKAGES[@]}" \
      --baseline=skip --timeout 300 --build-timeout 900 "${files[@]}" "${res[@]}" -o "target/mutants/$name-recheck" \
      "${TEST_ARGS[@]}" || true
  done
  exit 0
fi

sel=("$@")
run() { local name=$1; shift; if [ ${#sel[@]} -eq 0 ] || [[ " ${sel[*]} " == *" $name "* ]]; then group "$name" "$@"; fi; }

run lock lock,fencing src/lock.rs src/lease.rs src/guard.rs src/fenced_store.rs \
  src/token.rs src/ttl.rs src/release.rs src/owner.rs src/keys.rs src/retry.rs src/script_source.rs
run election election,election-renew-only 'src/election/*.rs'
run rate-limit rate-limit,rate-limit-counter 'src/rate_limit/*.rs'
# drift.rs: Redlock's allowance, and the usable time of every other lease
# (the lock's scenarios judge that one).
run redlock redlock,lock 'src/redlock/*.rs' src/drift.rs
run acknowledged lock,lock-failover-acknowledged,election-failover-acknowledged src/acknowledgement.rs
run job-queue job-queue src/job_queue.rs
