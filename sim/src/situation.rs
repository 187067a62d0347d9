//! [`Situation`] and its [`SituationName`]: what a run exists to reach.
//!
//! Below the history, the world and the outcome, which all name them: an
//! actor reaches a situation, the history records it, an outcome collects
//! it, a registry row declares it.

use core::fmt;

use serde::Serialize;

/// The typed name of a [`Situation`] (`lease-expired-while-paused`): a
/// constant where its family declares it, recorded by an actor
/// ([`crate::Actor::reached`]) or the analysis (`Outcome::reach`) and
/// compared as a value, never by prefix or suffix. Never read back from a
/// file (coverage is written by name), so it is a plain `Copy` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SituationName(&'static str);

impl SituationName {
    /// The situation named `name` (kebab case).
    pub const fn new(name: &'static str) -> SituationName {
        SituationName(name)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for SituationName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.0)
    }
}

/// A situation a scenario exists to reach: a "sometimes" assertion
/// (Antithesis), declared in the registry and counted per run.
///
/// Safety checkers say nothing was violated; situations say the run got
/// somewhere worth checking (a lease expired under a paused holder, a stale
/// write arrived after a newer one). A scenario whose seeds silently stopped
/// reaching one would still pass its checkers: `explore` warns about every
/// declared situation no seed reached, and `sim/tests/slow/coverage.rs` fails
/// when the pinned seeds stop reaching one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// Its name, as recorded in the history.
    pub name: SituationName,
    /// What it means, in one line.
    pub meaning: &'static str,
}
