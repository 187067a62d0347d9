//! [`Name`]: the text inside a typed name that is read back from files
//! ([`crate::Api`] in shard files, [`crate::checker::Invariant`] in
//! violations and baselines). A situation's name is never read back, so
//! `crate::SituationName` is a plain `&'static str` newtype instead.
//!
//! Each of those is a newtype over `Name`, so an invariant can never be
//! passed where an operation is expected, and none is matched by suffix or
//! prefix: they are compared as values. Built in `const` from a literal
//! where a family declares them; owned only when read back from a file (a
//! shard's results), where it compares equal to the constant of that name.

use core::fmt;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A name, borrowed from a literal or owned when read from a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Name(Cow<'static, str>);

impl Name {
    /// The name `text`.
    pub(crate) const fn new(text: &'static str) -> Name {
        Name(Cow::Borrowed(text))
    }

    /// Its text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_read_back_equals_its_constant() {
        const LIVENESS: Name = Name::new("liveness");
        let read: Name = serde_json::from_str(r#""liveness""#).unwrap();
        assert_eq!(read, LIVENESS);
        assert_eq!(serde_json::to_string(&LIVENESS).unwrap(), r#""liveness""#);
        assert_eq!(format!("[{LIVENESS:<10}]"), "[liveness  ]");
    }
}
