//! No panic on any seed: every scenario over a wide range of fresh seeds.
//!
//! Pinned seeds prove what they prove; a panic (an empty random range, an
//! overflow, an unwrap on an unexpected reply) hides in the seeds nobody
//! pinned. This sweep runs every registered scenario over `RP_SWEEP_SEEDS`
//! seeds (default 200) starting at `RP_SWEEP_START` (default 1 000 000, far
//! from every pinned seed), in this process, and fails on a panic, a set-up
//! error, or a violation of a correct scenario (a false alarm or a real
//! bug: either way, one to look at).
//!
//! `.ci/run` runs it in release mode with more seeds; the full sweep is
//!
//! ```sh
//! RP_SWEEP_SEEDS=3000 cargo test --release -p redis-primitives-sim --test slow -- --ignored --nocapture sweep
//! ```

use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_primitives_sim::replay_command;
use redis_primitives_sim::scenarios::{self, Expect};
use redis_primitives_sim::Servers;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

#[test]
#[ignore = "slow: run in release by .ci/run (see the module docs)"]
fn every_scenario_survives_a_wide_sweep() {
    let seeds = env_u64("RP_SWEEP_SEEDS", 200);
    let start = env_u64("RP_SWEEP_START", 1_000_000);
    let mut servers = Servers::new();
    let mut problems = Vec::new();
    for scenario in scenarios::all() {
        let mut violating = 0;
        for seed in start..start + seeds {
            let run = catch_unwind(AssertUnwindSafe(|| scenario.run(&mut servers, seed)));
            match run {
                Err(_) => problems.push(format!(
                    "{} seed {seed}: panicked; {}",
                    scenario.name,
                    replay_command(scenario.name, seed)
                )),
                Ok(Err(e)) => problems.push(format!("{} seed {seed}: set-up error: {e}", scenario.name)),
                Ok(Ok(o)) if !o.violations.is_empty() => {
                    violating += 1;
                    if scenario.expect == Expect::Clean {
                        problems.push(format!(
                            "{} seed {seed}: {} ; {}",
                            scenario.name,
                            o.violations[0],
                            replay_command(scenario.name, seed)
                        ));
                    }
                }
                Ok(Ok(_)) => {}
            }
            if problems.len() > 20 {
                break;
            }
        }
        println!("{:<24} {seeds} seeds from {start}: {violating} violating ({:?})", scenario.name, scenario.expect);
    }
    assert!(problems.is_empty(), "{} problem(s):\n  {}", problems.len(), problems.join("\n  "));
}
