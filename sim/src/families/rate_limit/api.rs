//! The public library operations the rate limiters workload calls, one
//! constant each (see [`crate::api::Api`]): what its actors record a call
//! by, its registry rows declare and its checkers find a call by.

use crate::api::Api;

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
