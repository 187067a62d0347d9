//! The slow regression checks, `#[ignore]`d in a debug build and run in
//! release by `.ci/run`:
//!
//! ```sh
//! cargo test --release -p redis-primitives-sim --test slow -- --ignored --nocapture
//! ```
//!
//! - `coverage`: the pinned seeds reach every declared situation and call
//!   every public library operation;
//! - `mutants`: every non-equivalent script mutant is killed;
//! - `sweep`: every scenario over fresh seeds without a panic or a false
//!   alarm (`RP_SWEEP_SEEDS=3000` for the full sweep).

mod coverage;
mod mutants;
mod sweep;
