//! [`Api`]: a public library operation a workload calls, by name: what a
//! workload records with [`crate::Actor::call`], what a scenario declares
//! it exists to call (`Scenario::operations`) and what a checker finds a
//! call by. Text only when printed (the operations table) or serialised.
//!
//! Each family declares its own operations in its folder (`api.rs`); the
//! constants here are the resources several families write through (the
//! fenced and unfenced stores).

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::name::Name;

/// A public library operation an invocation calls (`Lock::extend`): what
/// the operations table counts and what a checker finds a call by. Each is
/// a constant where its family declares its operations; compared as a
/// value, printed and serialised as its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Api(Name);

impl Api {
    /// The operation `Type::method`.
    pub const fn new(name: &'static str) -> Api {
        Api(Name::new(name))
    }

    /// Its name, `Type::method`.
    pub fn name(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// `FencedStore::write`.
pub(crate) const FENCED_STORE_WRITE: Api = Api::new("FencedStore::write");
/// `FencedStore::read`.
pub(crate) const FENCED_STORE_READ: Api = Api::new("FencedStore::read");
/// `UnfencedStore::write`.
pub(crate) const UNFENCED_STORE_WRITE: Api = Api::new("UnfencedStore::write");
/// `UnfencedStore::read`.
pub(crate) const UNFENCED_STORE_READ: Api = Api::new("UnfencedStore::read");
