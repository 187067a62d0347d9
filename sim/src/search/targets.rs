//! What the search must find ([`targets()`]: every broken variant and
//! documented non-guarantee) and must not find ([`properties()`]), read
//! from the registry: each family lists its own (`families/<family>/
//! targets.rs`), so this module names no family.

use crate::families::REGISTRY;
pub use crate::target::{PropertySpec, SearchTarget, TargetKind};

/// Every broken variant and every documented non-guarantee, with the
/// invariant that must catch it, family by family in registry order (one
/// row each in `rp-sim report`'s mutation table;
/// `proptests/tests/search/violations.rs` searches each).
pub fn targets() -> impl Iterator<Item = &'static SearchTarget> {
    REGISTRY.iter().flat_map(|family| family.targets)
}

/// Looks a search target up by name.
pub fn target(name: &str) -> Option<&'static SearchTarget> {
    targets().find(|t| t.name == name)
}

/// What the search must not find: an invariant over a fault space a
/// correct scenario claims to survive (`proptests/tests/search/
/// properties.rs` checks each).
pub fn properties() -> impl Iterator<Item = &'static PropertySpec> {
    REGISTRY.iter().flat_map(|family| family.properties)
}

/// Looks a property up by name.
pub fn property(name: &str) -> Option<&'static PropertySpec> {
    properties().find(|p| p.name == name)
}
