//! Key naming: one hash tag per primitive instance.
//!
//! Every key that one script touches carries the same `{name}` hash tag
//! (`lock:{orders}` and `lock:{orders}:fence`), so each script addresses a
//! single slot and runs unchanged on Redis Cluster. The prefix is
//! configurable; names are validated so a caller cannot break the tag.

use crate::error::{Error, Result};

/// A validated key prefix (no braces, not empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix(String);

impl Prefix {
    /// Validates a prefix such as `"lock"` or `"myapp:lock"`.
    pub fn new(prefix: impl Into<String>) -> Result<Prefix> {
        let prefix = prefix.into();
        if prefix.is_empty() {
            return Err(Error::invalid("prefix", "must not be empty"));
        }
        if prefix.contains(['{', '}']) {
            return Err(Error::invalid(
                "prefix",
                format!("{prefix:?} contains '{{' or '}}', which would break the hash tag"),
            ));
        }
        Ok(Prefix(prefix))
    }

    /// The prefix text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `prefix:{name}` after validating `name`.
    pub fn key(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        Ok(concat(&[&self.0, ":{", name, "}"]))
    }
}

/// `parts` joined, in one allocation of the exact size. `format!` starts
/// from an empty string when the text begins with an argument and grows it
/// two or three times, on the hot path of every primitive (the speed issue,
/// item 4).
pub(crate) fn concat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        s.push_str(part);
    }
    s
}

/// Checks that `name` is usable inside a hash tag.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("name", "must not be empty"));
    }
    if name.contains(['{', '}']) {
        return Err(Error::invalid("name", format!("{name:?} contains '{{' or '}}', which would break the hash tag")));
    }
    Ok(())
}

/// Both sides of every documented edge: neither a prefix nor a name may be
/// empty or hold a brace, refused with `InvalidInput`; a key reads
/// `prefix:{name}` (moved here from the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn no_brace_and_no_empty_text_in_a_prefix_or_a_name() {
        for (prefix, name) in [("lock", "orders"), ("a:b:", "x:9"), ("z", "0"), (":", ":")] {
            assert_eq!(Prefix::new(prefix).unwrap().as_str(), prefix);
            assert_eq!(Prefix::new(prefix).unwrap().key(name).unwrap(), format!("{prefix}:{{{name}}}"));
            assert!(validate_name(name).is_ok());
        }
        for bad in ["", "{", "}", "a{b", "ab}", "{x}", "x}y{"] {
            let r = Prefix::new(bad);
            assert!(matches!(r, Err(Error::InvalidInput { what: "prefix", .. })), "prefix {bad:?}: {r:?}");
            let r = Prefix::new("lock").unwrap().key(bad);
            assert!(matches!(r, Err(Error::InvalidInput { what: "name", .. })), "name {bad:?}: {r:?}");
            assert!(matches!(validate_name(bad), Err(Error::InvalidInput { what: "name", .. })));
        }
    }

    #[test]
    fn concat_joins_in_order() {
        assert_eq!(concat(&["a", "", ":{", "b", "}"]), "a:{b}");
        assert_eq!(concat(&[]), "");
    }
}
