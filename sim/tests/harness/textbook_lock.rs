//! The determinism self-check on the textbook-lock example
//! (`sim/examples/textbook_lock.rs`): built as it is, one seed gives one
//! history; built to read the real clock (`std::time::Instant`) for its
//! validity, the self-check (`--twice`: `ExploreOptions::twice`) reports
//! the first event where two runs of a seed part.
//!
//! The example is included here as a module rather than copied: its lock
//! reads time through a `Clock` function its `world` takes (the example's
//! `main` passes the simulation's `tokio::time::Instant::now`), so the test
//! swaps in a real clock without a second copy of the lock or a cfg in the
//! example. Its `main` is unused here.

#[allow(dead_code)]
#[path = "../../examples/textbook_lock.rs"]
mod example;

use redis_primitives_sim::{explore_with, ExploreOptions, Servers, SetupError, Trial};
use tokio::time::Instant;

/// The rule the broken build breaks: time from `std::time`, not the simulation.
fn real_clock() -> Instant {
    Instant::from_std(std::time::Instant::now())
}

#[test]
fn the_self_check_passes_the_example_and_flags_it_reading_real_time() {
    let honest = Trial::new("textbook-lock", |s, seed| example::world(s, seed, false, Instant::now));
    let ex = explore_with(&honest, &mut Servers::new(), ExploreOptions::new(0, 3).twice(true))
        .expect("the example keeps the rules: one history per seed");
    assert_eq!(ex.seeds, 3);

    let broken = Trial::new("textbook-lock-real-clock", |s, seed| example::world(s, seed, false, real_clock));
    match explore_with(&broken, &mut Servers::new(), ExploreOptions::new(0, 3).twice(true)) {
        Err(SetupError::Nondeterministic(d)) => {
            // The first differing event is an acquire's grant: its validity
            // was measured on the real clock.
            let first = d.first.as_deref().unwrap_or_default();
            assert!(first.contains("acquire") && first.contains("valid"), "{d}");
            assert_eq!(d.seed, 0, "{d}");
            assert!(d.to_string().contains("std::time"), "{d}");
        }
        other => panic!("reading std::time::Instant was not flagged: {other:?}"),
    }
}
