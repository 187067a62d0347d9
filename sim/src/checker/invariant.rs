//! [`Invariant`]: the typed name of what a checker judges.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::name::Name;

/// An invariant a checker judges (`mutual-exclusion`): what a
/// [`Violation`](super::Violation) breaks, what a broken scenario must
/// violate and what the property search hunts. A constant where it is
/// declared; compared as a value, printed and serialised as its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Invariant(Name);

impl Invariant {
    /// The invariant named `name` (kebab case).
    pub const fn new(name: &'static str) -> Invariant {
        Invariant(Name::new(name))
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
