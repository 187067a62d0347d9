//! The harness measured by mutation, as a regression check: every
//! generated mutant of the library's Lua scripts is killed by the pinned
//! seeds of the correct scenarios, or listed as equivalent with its reason
//! (`sim/src/mutants.rs`, `reports/mutants.md`).
//!
//! A new script line, operator or equivalent-list edit that leaves a mutant
//! alive fails here, with the mutant named. `.ci/run` runs it in release:
//!
//! ```sh
//! cargo test --release -p redis-primitives-sim --test slow -- --ignored --nocapture mutants
//! ```

/// The seeds each mutant must survive to count as a survivor: within the
/// pinned clean seeds of `tests/harness/scenarios.rs` (0..24).
const SEEDS: &str = "12";

#[test]
#[ignore = "slow in a debug build: .ci/run runs it in release"]
fn every_non_equivalent_script_mutant_is_killed_by_the_pinned_seeds() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rp-sim"))
        .args(["mutants", "--seeds", SEEDS])
        .output()
        .expect("rp-sim runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let survivors: Vec<&str> =
        stderr.lines().chain(stdout.lines()).filter(|l| l.contains("SURVIVED") || l.contains(": error:")).collect();
    println!("{}", stdout.lines().find(|l| l.contains("Kill rate")).unwrap_or("(no summary)"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "mutants survived or were not judged:\n  {}\n{stderr}",
        survivors.join("\n  ")
    );
}
