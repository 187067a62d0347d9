//! A scenario: one row of the registry. Its name, what it does, what it
//! must find, and the family variant that runs it.
//!
//! A scenario's family variant ([`Runner`]), given a pool of real servers
//! and a seed, builds a turmoil simulation (through [`crate::World`]),
//! drives production types through a fault schedule derived from the seed,
//! and returns an [`Outcome`]: the history, its digest, the violations its
//! checkers found, its histograms and the schedule it ran.
//!
//! Each family declares its own rows (`families/<family>/scenarios.rs`);
//! the registry (`crate::families::REGISTRY`) lists the families. This
//! type sits below both, so that a family can name its rows and the search
//! spaces built on them without depending on the registry (ADR 0009).
//!
//! Broken variants (`lock-naive`, `fencing-unfenced`, …) are listed with
//! the invariant they must break ([`Expect::Violates`]): the harness is
//! only trusted if it catches them, and `sim/tests/harness/scenarios.rs`
//! pins seeds that prove it does.

use crate::api::Api;
use crate::checker::Invariant;
use crate::family::Runner;
use crate::outcome::{Outcome, Situation};
use crate::path::Path;

/// What a scenario should find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A correct primitive: no invariant may be violated, on any seed.
    Clean,
    /// A broken variant: it must violate this invariant (on its pinned seeds,
    /// and on most seeds of an exploration).
    Violates(&'static Invariant),
}

/// One entry of the registry.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// The name given to `--scenario`.
    pub name: &'static str,
    /// One line for `rp-sim scenarios`.
    pub description: &'static str,
    /// What it should find.
    pub expect: Expect,
    /// Its family and variant: what runs it ([`crate::Family`]).
    pub(crate) runs: &'static dyn Runner,
    /// The situations it exists to reach (see [`Situation`]).
    pub situations: &'static [Situation],
    /// The public library operations (`Lock::extend`) its workload exists
    /// to call: the pinned seeds must call each (`sim/tests/slow/coverage.rs`),
    /// or the simulation could not find a bug in it. Empty for a broken one.
    pub operations: &'static [Api],
    /// The paths of those operations ([`Path`]: ok, refused, failed) its
    /// workload exists to reach: each row of the promise table is judged
    /// on a path only a run that takes it can show, so the pinned seeds
    /// must take each (`sim/tests/slow/coverage.rs`). Empty for a broken one.
    pub paths: &'static [(Api, Path)],
    /// The library's Lua scripts its histories depend on (their names, as
    /// `redis_primitives::mutation_scripts` lists them): `rp-sim mutants`
    /// judges each script's mutants by these scenarios. Empty for a broken one.
    pub scripts: &'static [&'static str],
    /// Invariants its family judges beyond the built-in ones
    /// (`crate::checker::INVARIANTS`), with their one-line meanings: a
    /// family added through the registry brings its own (see `crate::scenarios::invariants`).
    pub invariants: &'static [(Invariant, &'static str)],
    /// For a broken variant: seeds on which it must show its violation
    /// (`sim/tests/harness/scenarios.rs` runs them; a correct scenario is
    /// held to the clean seeds `0..24` instead). Empty for a correct one.
    pub pinned_seeds: &'static [u64],
}

impl Scenario {
    /// What it must show, in words: `must not violate anything`, or
    /// `broken on purpose: must violate <invariant>`.
    pub fn expectation(&self) -> String {
        match self.expect {
            Expect::Clean => "must not violate anything".to_string(),
            Expect::Violates(inv) => format!("broken on purpose: must violate {inv}"),
        }
    }

    /// A self-contained HTML timeline of one of its runs
    /// ([`crate::Timeline`]); `replay` is the command that reproduces it.
    pub fn timeline(&self, outcome: &Outcome, replay: &str) -> String {
        let digest = outcome.digest.to_string();
        let expectation = self.expectation();
        crate::timeline::Timeline {
            scenario: self.name,
            expectation: &expectation,
            replay,
            nodes: self.nodes(),
            simulated_ms: outcome.simulated_ms(),
            digest: &digest,
            events: &outcome.history,
            violations: &outcome.violations,
            tenures: &self.runs.tenures(&outcome.history),
        }
        .html()
    }

    /// Redis nodes its runs need.
    pub fn nodes(&self) -> u32 {
        self.runs.nodes()
    }
}
