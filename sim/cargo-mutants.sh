#!/usr/bin/env bash
# The Rust half of the harness's mutation measure (reports/mutants.md).
#
# cargo-mutants mutates the library's Rust code, one mutant at a time, and
# runs the simulation's pinned clean seeds (sim/tests/harness/scenarios.rs,
# seeds 0..24 of every correct scenario of the mutated file's family) as the
# test command: a mutant is killed when a checker reports a violation there.
#
#   cargo install cargo-mutants --locked
#   sim/cargo-mutants.sh              # every group, about 1-2 h on 2 cores
#   sim/cargo-mutants.sh lock         # one group
#   cargo run --release -p redis-primitives-sim -- mutants --cargo-mutants target/mutants --out reports/mutants.md
#
# Results go to target/mutants/<group>/mutants.out (cargo-mutants' format).
set -euo pipefail
cd "$(dirname "$0")/.."

group() {
  local name=$1 scenarios=$2
  shift 2
  local files=()
  for f in "$@"; do files+=(-f "$f"); done
  echo "== $name: ${*} against ${scenarios}" >&2
  mkdir -p "target/mutants/$name"
  # The baseline is skipped: cargo-mutants would test the mutated package's
  # own tests there, not the simulation's.
  RP_GATE_SCENARIOS="$scenarios" cargo mutants -j 2 -p redis-primitives --test-package redis-primitives-sim \
    --baseline=skip --timeout 300 --build-timeout 900 "${files[@]}" -o "target/mutants/$name" \
    -- --test harness -- scenarios::correct_scenarios || true
}

sel=("$@")
run() { local name=$1; shift; if [ ${#sel[@]} -eq 0 ] || [[ " ${sel[*]} " == *" $name "* ]]; then group "$name" "$@"; fi; }

run lock lock,fencing src/lock.rs src/lease.rs src/guard.rs src/fenced_store.rs
run election election,election-renew-only 'src/election/*.rs'
run rate-limit rate-limit,rate-limit-counter 'src/rate_limit/*.rs'
run redlock redlock 'src/redlock/*.rs'
