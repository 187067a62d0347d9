//! The public library operations the lock workload calls, one constant
//! each (see [`crate::api::Api`]): what its actors record a call by, its
//! registry rows declare and its checkers find a call by. The fenced
//! stores' operations, which the election writes through too, stay in
//! `crate::api`.

use crate::api::Api;

/// `Lock::acquire`.
pub(crate) const LOCK_ACQUIRE: Api = Api::new("Lock::acquire");
/// `Lock::release`.
pub(crate) const LOCK_RELEASE: Api = Api::new("Lock::release");
/// `Lock::extend`.
pub(crate) const LOCK_EXTEND: Api = Api::new("Lock::extend");
/// `Lock::with_lock`.
pub(crate) const LOCK_WITH_LOCK: Api = Api::new("Lock::with_lock");
/// `Lock::with_lock_guarded`.
pub(crate) const LOCK_WITH_LOCK_GUARDED: Api = Api::new("Lock::with_lock_guarded");
/// `Lock::keep_alive`.
pub(crate) const LOCK_KEEP_ALIVE: Api = Api::new("Lock::keep_alive");
/// `Lock::current_token`.
pub(crate) const LOCK_CURRENT_TOKEN: Api = Api::new("Lock::current_token");
/// `Lock::remaining_ttl`.
pub(crate) const LOCK_REMAINING_TTL: Api = Api::new("Lock::remaining_ttl");
/// `NaiveLock::acquire`.
pub(crate) const NAIVE_LOCK_ACQUIRE: Api = Api::new("NaiveLock::acquire");
/// `NaiveLock::release`.
pub(crate) const NAIVE_LOCK_RELEASE: Api = Api::new("NaiveLock::release");
/// `Retry::run`.
pub(crate) const RETRY_RUN: Api = Api::new("Retry::run");
