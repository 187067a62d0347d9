//! [`Operation`]: how a family's own operation type enters the history.
//!
//! The history's [`Op`](super::Op) holds what every family shares (writes
//! and reads of a resource, faults, situations, error replies, notes). What
//! one family does (a lock's acquire, an election's role change, a job
//! claim) is that family's own enum, implementing [`Operation`], recorded
//! as `Op::Family` and read back by its checkers as the same typed value
//! with [`Op::family`](super::Op::family). There is no text form to parse:
//! the value is kept, shared behind an `Arc`, and turned into JSON only for
//! the digest and the files.
//!
//! A user's own primitive does the same: an enum deriving `Serialize`,
//! `Debug` and `PartialEq`, with `Display` for the timeline and
//! [`Operation::verb`] for its short name.

use core::any::Any;
use core::fmt;
use std::sync::Arc;

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// A family's operation type: what its actors record and its checkers
/// read. `Display` is its timeline line; the JSON its serde form gives is
/// what the digest hashes.
pub trait Operation: fmt::Debug + fmt::Display + PartialEq + Serialize + Send + Sync + 'static {
    /// A short kebab-case verb for timelines (`acquire`, `job-claim`).
    fn verb(&self) -> &'static str;
}

/// The object-safe face of an [`Operation`], so the history holds every
/// family's operations in one list.
trait Erased: fmt::Debug + fmt::Display + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn verb(&self) -> &'static str;
    fn json(&self) -> serde_json::Result<Box<RawValue>>;
    fn same(&self, other: &dyn Erased) -> bool;
}

impl<T: Operation> Erased for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn verb(&self) -> &'static str {
        Operation::verb(self)
    }

    fn json(&self) -> serde_json::Result<Box<RawValue>> {
        // Text, not a `serde_json::Value`: a `Value`'s map sorts its keys,
        // and the digest hashes fields in declaration order.
        RawValue::from_string(serde_json::to_string(self)?)
    }

    fn same(&self, other: &dyn Erased) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// One family operation, typed, as the history holds it (cheap to clone).
#[derive(Clone)]
pub struct FamilyOp(Arc<dyn Erased>);

impl FamilyOp {
    /// Wraps `op`.
    pub fn new<T: Operation>(op: T) -> FamilyOp {
        FamilyOp(Arc::new(op))
    }

    /// The operation as `T`, if it is one.
    pub fn get<T: Operation>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }

    /// Its short verb.
    pub fn verb(&self) -> &'static str {
        self.0.verb()
    }
}

impl PartialEq for FamilyOp {
    fn eq(&self, other: &FamilyOp) -> bool {
        self.0.same(other.0.as_ref())
    }
}

impl Eq for FamilyOp {}

impl fmt::Debug for FamilyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for FamilyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for FamilyOp {
    /// The operation's own JSON, with nothing around it: a family enum's
    /// variant reads `{"Acquire": {...}}`, as it did when the variant was
    /// the history's own.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.json().map_err(S::Error::custom)?.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    enum Door {
        Open { by: String },
        Shut,
    }

    impl fmt::Display for Door {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Door::Open { by } => write!(f, "open by {by}"),
                Door::Shut => write!(f, "shut"),
            }
        }
    }

    impl Operation for Door {
        fn verb(&self) -> &'static str {
            "door"
        }
    }

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Window;

    impl fmt::Display for Window {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "window")
        }
    }

    impl Operation for Window {
        fn verb(&self) -> &'static str {
            "window"
        }
    }

    #[test]
    fn an_operation_comes_back_typed_and_serialises_as_itself() {
        let op = FamilyOp::new(Door::Open { by: "c1".into() });
        assert_eq!(op.get::<Door>(), Some(&Door::Open { by: "c1".into() }));
        assert_eq!(op.get::<Window>(), None);
        assert_eq!(serde_json::to_string(&op).unwrap(), r#"{"Open":{"by":"c1"}}"#);
        assert_eq!(op.to_string(), "open by c1");
        assert_eq!(op.verb(), "door");
    }

    #[test]
    fn equal_only_to_the_same_value_of_the_same_type() {
        let a = FamilyOp::new(Door::Shut);
        assert_eq!(a, FamilyOp::new(Door::Shut));
        assert_ne!(a, FamilyOp::new(Door::Open { by: "x".into() }));
        assert_ne!(a, FamilyOp::new(Window));
    }
}
