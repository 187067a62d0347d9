//! The public library operations the Redlock workload calls, one
//! constant each (see [`crate::api::Api`]): what its actors record a call
//! by, its registry rows declare and its checkers find a call by.

use crate::api::Api;

/// `Redlock::connect`.
pub(crate) const REDLOCK_CONNECT: Api = Api::new("Redlock::connect");
/// `Redlock::acquire`.
pub(crate) const REDLOCK_ACQUIRE: Api = Api::new("Redlock::acquire");
/// `Redlock::acquire_with_retry`.
pub(crate) const REDLOCK_ACQUIRE_WITH_RETRY: Api = Api::new("Redlock::acquire_with_retry");
/// `Redlock::extend`.
pub(crate) const REDLOCK_EXTEND: Api = Api::new("Redlock::extend");
/// `Redlock::release`.
pub(crate) const REDLOCK_RELEASE: Api = Api::new("Redlock::release");
/// `NaiveRedlock::connect`.
pub(crate) const NAIVE_REDLOCK_CONNECT: Api = Api::new("NaiveRedlock::connect");
/// `NaiveRedlock::acquire`.
pub(crate) const NAIVE_REDLOCK_ACQUIRE: Api = Api::new("NaiveRedlock::acquire");
/// `NaiveRedlock::release`.
pub(crate) const NAIVE_REDLOCK_RELEASE: Api = Api::new("NaiveRedlock::release");
