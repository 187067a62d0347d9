//! The public library operations the workloads call, one constant each:
//! what a workload records with [`crate::Actor::call`], what a scenario
//! declares it exists to call (`Scenario::operations`) and what a checker
//! finds a call by. Text only when printed (the operations table) or
//! serialised.

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
/// `FencedStore::write`.
pub(crate) const FENCED_STORE_WRITE: Api = Api::new("FencedStore::write");
/// `FencedStore::read`.
pub(crate) const FENCED_STORE_READ: Api = Api::new("FencedStore::read");
/// `UnfencedStore::write`.
pub(crate) const UNFENCED_STORE_WRITE: Api = Api::new("UnfencedStore::write");
/// `UnfencedStore::read`.
pub(crate) const UNFENCED_STORE_READ: Api = Api::new("UnfencedStore::read");

/// `SlidingWindowLog::check`.
pub(crate) const LOG_CHECK: Api = Api::new("SlidingWindowLog::check");
/// `SlidingWindowLog::check_at`.
pub(crate) const LOG_CHECK_AT: Api = Api::new("SlidingWindowLog::check_at");
/// `SlidingWindowCounter::check`.
pub(crate) const COUNTER_CHECK: Api = Api::new("SlidingWindowCounter::check");
/// `SlidingWindowCounter::check_at`.
pub(crate) const COUNTER_CHECK_AT: Api = Api::new("SlidingWindowCounter::check_at");
/// `NaiveFixedWindow::check`.
pub(crate) const FIXED_WINDOW_CHECK: Api = Api::new("NaiveFixedWindow::check");
/// `NaiveFixedWindow::check_at`.
pub(crate) const FIXED_WINDOW_CHECK_AT: Api = Api::new("NaiveFixedWindow::check_at");
/// `ClientSideWindow::check`.
pub(crate) const CLIENT_SIDE_CHECK: Api = Api::new("ClientSideWindow::check");
/// `ClientSideWindow::check_at`.
pub(crate) const CLIENT_SIDE_CHECK_AT: Api = Api::new("ClientSideWindow::check_at");
/// `WatchMultiLimiter::check`.
pub(crate) const WATCH_MULTI_CHECK: Api = Api::new("WatchMultiLimiter::check");

/// `Election::run`.
pub(crate) const ELECTION_RUN: Api = Api::new("Election::run");
/// `Election::stop`.
pub(crate) const ELECTION_STOP: Api = Api::new("Election::stop");
/// `NaiveElection::run`.
pub(crate) const NAIVE_ELECTION_RUN: Api = Api::new("NaiveElection::run");
/// `NaiveElection::stop`.
pub(crate) const NAIVE_ELECTION_STOP: Api = Api::new("NaiveElection::stop");
/// `NaiveElection::write`.
pub(crate) const NAIVE_ELECTION_WRITE: Api = Api::new("NaiveElection::write");

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

/// `JobQueue::enqueue`.
pub(crate) const JOB_ENQUEUE: Api = Api::new("JobQueue::enqueue");
/// `JobQueue::claim`.
pub(crate) const JOB_CLAIM: Api = Api::new("JobQueue::claim");
/// `JobQueue::extend`.
pub(crate) const JOB_EXTEND: Api = Api::new("JobQueue::extend");
/// `JobQueue::complete`.
pub(crate) const JOB_COMPLETE: Api = Api::new("JobQueue::complete");
/// `JobQueue::reap`.
pub(crate) const JOB_REAP: Api = Api::new("JobQueue::reap");
/// `JobQueue::state`.
pub(crate) const JOB_STATE: Api = Api::new("JobQueue::state");
