//! What the property search must find in a family, and what it must not.
//!
//! A family lists its [`SearchTarget`]s (its broken variants and the
//! documented non-guarantees of its correct primitives) and its
//! [`PropertySpec`]s (the invariants its correct scenarios claim over a
//! fault space) in its own folder (`families/<family>/targets.rs`); the
//! search reads them through the registry (`crate::search::targets`).
//! The types sit below the families so that a family names them without
//! depending on the search (ADR 0009).

use crate::checker::Invariant;
use crate::space::Space;

/// Whether a target is a broken implementation or a limit of a correct one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A broken variant kept so the harness can be shown to catch it.
    BrokenVariant,
    /// A correct primitive under a fault it documents it cannot survive.
    NonGuarantee,
}

/// Something the search must find.
#[derive(Debug, Clone, Copy)]
pub struct SearchTarget {
    /// Row name (a scenario name, or the non-guarantee's name).
    pub name: &'static str,
    /// Broken variant or non-guarantee.
    pub kind: TargetKind,
    /// The invariant that must catch it.
    pub invariant: &'static Invariant,
    /// What goes wrong, in one line.
    pub what: &'static str,
    /// Where to search.
    pub space: fn() -> Space,
    /// The test asserts the search finds it within this many cases (about
    /// three times the most any of 20 base seeds needed when it was set;
    /// `reports/README.md` has the measured medians).
    pub case_bound: u32,
    /// The test asserts the shrunk plan is at most this size (the largest
    /// any of those 20 base seeds shrank to).
    pub size_bound: usize,
}

/// Something the search must not find: a correct scenario, a space of
/// faults it claims to survive, and the invariant that must hold.
#[derive(Debug, Clone, Copy)]
pub struct PropertySpec {
    /// Name (used for the regression file).
    pub name: &'static str,
    /// The invariant that must hold.
    pub invariant: &'static Invariant,
    /// Where to search.
    pub space: fn() -> Space,
}
