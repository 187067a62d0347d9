//! The registry's lookups: every scenario `rp-sim scenarios` lists, found
//! by name, and every invariant a checker may name.
//!
//! The rows themselves live in their families (`families/<family>/
//! scenarios.rs`, type `Scenario`); `crate::families::REGISTRY` lists
//! the families. This module only reads them, so it names no family.

use crate::checker::Invariant;
use crate::families::REGISTRY;
pub use crate::scenario::{Expect, Scenario};

/// Every scenario, in the order `rp-sim scenarios` lists them: family by
/// family, in registry order.
pub fn all() -> impl Iterator<Item = &'static Scenario> {
    REGISTRY.iter().flat_map(|family| family.scenarios)
}

/// Every invariant a checker may name: the built-in ones, then those the
/// registry's families declare, each once, in that order.
pub fn invariants() -> Vec<(Invariant, &'static str)> {
    let mut known: Vec<(Invariant, &'static str)> = crate::checker::INVARIANTS.to_vec();
    let families = REGISTRY.iter().flat_map(|family| family.report.invariants);
    for (name, meaning) in families.chain(all().flat_map(|s| s.invariants)) {
        if !known.iter().any(|(n, _)| n == name) {
            known.push((name.clone(), meaning));
        }
    }
    known
}

/// Looks a scenario up by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    all().find(|s| s.name == name)
}

/// Every name, comma-separated (for error messages).
pub fn names() -> String {
    all().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_variants_pin_seeds_and_correct_ones_do_not() {
        for s in all() {
            match s.expect {
                Expect::Clean => {
                    assert!(s.pinned_seeds.is_empty(), "{}: a correct scenario runs the clean seeds", s.name)
                }
                Expect::Violates(&_) => assert!(!s.pinned_seeds.is_empty(), "{}: no pinned seeds", s.name),
            }
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        let rows: Vec<&Scenario> = all().collect();
        for (i, s) in rows.iter().enumerate() {
            assert!(rows[i + 1..].iter().all(|t| t.name != s.name), "{} twice", s.name);
            assert_eq!(find(s.name).map(|f| f.name), Some(s.name));
        }
        assert!(find("nope").is_none());
    }
}
