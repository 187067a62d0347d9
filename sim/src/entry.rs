//! A family's entry in the registry: everything the shared modules read
//! about a family, in one value.
//!
//! Each family folder defines one `ENTRY`; `crate::families::REGISTRY`
//! lists them, one line per family. The registry's lookups
//! (`crate::scenarios`, `crate::search::targets`, the report) iterate
//! over the entries, so no shared module names a family (ADR 0009).

use crate::family::ReportPart;
use crate::scenario::Scenario;
use crate::target::{PropertySpec, SearchTarget};

/// One family, as the registry sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FamilyEntry {
    /// Its scenarios, in the order `rp-sim scenarios` lists them.
    pub scenarios: &'static [Scenario],
    /// What it adds to `rp-sim report`: invariants, histogram meanings,
    /// its own section.
    pub report: ReportPart,
    /// What the search must find in it.
    pub targets: &'static [SearchTarget],
    /// What the search must not find in it.
    pub properties: &'static [PropertySpec],
}
