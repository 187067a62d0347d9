//! Property-based search over plans: proptest strategies for fault schedules
//! and workloads, a programmatic search that shrinks what it finds, and the
//! regression files that keep every counterexample.
//!
//! A seed-driven exploration (`rp-sim explore`) answers "does anything go
//! wrong?"; this module answers "what is the *smallest* thing that goes
//! wrong?". It draws [`Plan`](crate::Plan)s from a [`Space`](crate::Space) — which scenario, which fault
//! kinds, how many faults, how long, which workload ranges — runs each
//! through the real simulation, and when a run violates the invariant under
//! test, lets proptest shrink the plan while it keeps failing.
//!
//! Shrinking is shaped so that simpler means what a reader wants:
//!
//! - **fewer faults**: the schedule is a `Vec`, which shrinks by dropping
//!   faults, and it is the first thing shrunk; a workload stall or leader
//!   stall is an `Option`, which shrinks to `None`;
//! - **shorter durations and smaller magnitudes**: every duration, latency
//!   and clock step is an integer range whose low end is the simplest value;
//! - **fewer actors**: actor counts are ranges starting at the fewest, and
//!   fault targets are drawn independently of them (and wrapped by
//!   [`Plan::normalize`](crate::plan::Plan::normalize)), so dropping an actor never drops a fault;
//! - the seed (latency draws, actor RNGs) is never shrunk: changing it
//!   changes everything at once, which is the opposite of simpler.
//!
//! The **size** of a counterexample is [`Plan::size`](crate::plan::Plan::size): faults (nemesis plus
//! workload-injected) + actors.
//!
//! [`search`] runs a [`TestRunner`](proptest::test_runner::TestRunner) with a fixed RNG seed (so a search is
//! reproducible), stops at the first failing case, shrinks it, and reports
//! how many cases it took, the shrunk plan, its size and the wall time to the
//! first counterexample. [`targets()`] lists what the search must find: every
//! broken variant and every documented non-guarantee, each with the
//! invariant that catches it; [`properties()`] lists what it must not find.
//! Both are read from the registry: each family lists its own.
//! [`RegressionFile`] is proptest's failure persistence for these searches
//! (`*.proptest-regressions`, proptest's format).
//!
//! Wall time is measured with `std::time::Instant`, outside the simulation.
//!
//! | file | job |
//! |---|---|
//! | `targets.rs` | what must be found ([`targets()`]) and what must not ([`properties()`]) |
//! | `runner.rs` | running, shrinking and timing one search |
//! | `minimize.rs` | the greedy size pass after shrinking |
//! | `persistence.rs` | the regression files |

mod minimize;
mod persistence;
mod runner;
mod targets;

pub(crate) use crate::fault_space::rng;
pub use minimize::*;
pub use persistence::*;
pub use runner::*;
pub use targets::*;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, FailurePersistence, PersistedSeed, TestRunner};

    use crate::families::lock;

    #[test]
    fn generated_plans_are_valid_and_deterministic() {
        for t in targets() {
            let space = (t.space)();
            let strategy = space.plans();
            let mut a = TestRunner::new_with_rng(Config::default(), rng(3));
            let mut b = TestRunner::new_with_rng(Config::default(), rng(3));
            for _ in 0..50 {
                let p = strategy.new_tree(&mut a).unwrap().current();
                assert_eq!(p, strategy.new_tree(&mut b).unwrap().current(), "{}", t.name);
                p.validate().unwrap_or_else(|e| panic!("{}: {e}\n{p}", t.name));
                assert_eq!(p.clone().normalize(), p);
                assert!(p.schedule.faults.iter().all(|f| space.faults.classes.contains(&f.kind.class())));
            }
        }
    }

    #[test]
    fn shrinking_drops_faults_and_actors_first() {
        let space = lock::targets::client_side(&lock::scenarios::LOCK);
        let strategy = space.plans();
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(9));
        // Find a tree with faults and several clients, then simplify as far
        // as it goes, accepting every step (as if every smaller plan failed).
        let mut tree = loop {
            let t = strategy.new_tree(&mut runner).unwrap();
            let p = t.current();
            if p.schedule.faults.len() >= 2 && p.actors() >= 3 {
                break t;
            }
        };
        let before = tree.current();
        while tree.simplify() {}
        let after = tree.current();
        assert!(after.schedule.faults.is_empty(), "{after}");
        assert_eq!(after.actors(), 1, "{after}");
        assert!(after.size() < before.size());
        let w = after.workload.plan::<lock::LockVariant>().unwrap();
        assert_eq!(w.stall, None);
        assert_eq!(w.ttl_ms, 150);
    }

    #[test]
    fn one_smaller_removes_one_fault_or_actor() {
        let strategy = crate::families::redlock::targets::search_space(
            &crate::families::redlock::scenarios::REDLOCK,
            crate::fault_space::CLIENT_SIDE,
            crate::families::redlock::RedlockSpace::search(),
        )
        .plans();
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(5));
        for _ in 0..30 {
            let p = strategy.new_tree(&mut runner).unwrap().current();
            let smaller = one_smaller(&p);
            // Removing an actor can also drop a fault that now collides
            // with another on the wrapped target: smaller, never larger.
            assert!(smaller.iter().all(|q| q.size() < p.size()), "{p}");
            let one_fault_less = smaller.iter().filter(|q| q.actors() == p.actors()).count();
            assert_eq!(one_fault_less, p.schedule.faults.len(), "{p}");
        }
        let lock = lock::targets::client_side(&lock::scenarios::LOCK).plans();
        for _ in 0..30 {
            let p = lock.new_tree(&mut runner).unwrap().current();
            let expected = p.faults() + usize::from(p.actors() > 1);
            assert_eq!(one_smaller(&p).len(), expected, "{p}");
        }
    }

    #[test]
    fn regression_file_dedups_and_filters() {
        let dir = std::env::temp_dir().join(format!("rp-regressions-{}", std::process::id()));
        let path = dir.join("x.proptest-regressions");
        let mut f = RegressionFile::new(&path, "x");
        let seed: PersistedSeed =
            "cc 0000000000000000000000000000000000000000000000000000000000000001".parse().unwrap();
        f.save_persisted_failure2(None, seed.clone(), &"value");
        f.save_persisted_failure2(None, seed.clone(), &"value");
        assert_eq!(f.seeds(), vec![seed.clone()]);
        assert_eq!(f.clone().save_only().load_persisted_failures2(None), Vec::<PersistedSeed>::new());
        assert_eq!(f.clone().only(&seed).load_persisted_failures2(None), vec![seed]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# x: shrinks to \"value\""), "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
