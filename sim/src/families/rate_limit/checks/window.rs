//! `rate-limit`: admissions in any window `(now − W, now]` of server time
//! never exceed what the limiter promises.
//!
//! Windows are measured on the *server's* clock (the time Redis decided), not
//! on the client's, because that is the clock the limiter reads; the history
//! carries it as `server_ms`. When a decision has no server time the checker
//! falls back to its completion time.
//!
//! The exact sliding-window log promises `limit` per window. The sliding-window
//! counter approximates the previous window's share and may overshoot by a
//! documented amount, so its scenario checks against that bound with
//! [`Allowance::UpTo`] and the overshoot is reported as a figure either way.
//! Decisions whose outcome is unknown (`Info`) are not counted: a checker that
//! counted them could convict a correct limiter.

use std::collections::BTreeMap;

use super::super::op::{Admission, RateLimitOp};
use crate::checker::{completed, Violation};
use crate::families::rate_limit::invariants::RATE_LIMIT;
use crate::history::{Event, EventKind, Millis};

/// What the limiter promises per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allowance {
    /// Never more than the configured limit.
    Exact,
    /// Never more than this many admissions per window (limit + documented
    /// overshoot of an approximate limiter).
    UpTo(u64),
}

/// Per-key measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyReport {
    /// Configured limit.
    pub limit: u64,
    /// Window length (ms).
    pub window_ms: u64,
    /// Definite admissions.
    pub admitted: u64,
    /// Definite denials.
    pub denied: u64,
    /// Decisions with unknown outcome.
    pub unknown: u64,
    /// Most admissions found in one window.
    pub worst_window: u64,
    /// Server time at which that window ended.
    pub worst_at: Millis,
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Windows {
    /// Per limiter key.
    pub keys: BTreeMap<String, KeyReport>,
    /// Windows over the allowance.
    pub violations: Vec<Violation>,
}

/// Checks every limiter key in `events` against `allowance`.
pub(crate) fn check(events: &[Event], allowance: Allowance) -> Windows {
    let mut keys: BTreeMap<String, (KeyReport, Vec<Millis>)> = BTreeMap::new();
    for c in completed(events) {
        let Some(RateLimitOp::RateLimit { key, limit, window_ms, admission, server_ms, .. }) = c.done.op.family()
        else {
            continue;
        };
        let (r, ts) = keys.entry(key.clone()).or_insert_with(|| {
            (
                KeyReport {
                    limit: *limit,
                    window_ms: *window_ms,
                    admitted: 0,
                    denied: 0,
                    unknown: 0,
                    worst_window: 0,
                    worst_at: 0,
                },
                Vec::new(),
            )
        });
        match (c.done.kind, admission) {
            (EventKind::Ok, Some(Admission::Admitted)) => {
                r.admitted += 1;
                ts.push(server_ms.unwrap_or(c.done.time));
            }
            (EventKind::Ok, Some(Admission::Denied { .. })) | (EventKind::Fail, _) => r.denied += 1,
            _ => r.unknown += 1,
        }
    }
    let mut report = Windows::default();
    for (key, (mut r, mut ts)) in keys {
        ts.sort_unstable();
        let allowed = match allowance {
            Allowance::Exact => r.limit,
            Allowance::UpTo(n) => n,
        };
        let mut lo = 0;
        for hi in 0..ts.len() {
            // Window (ts[hi] − W, ts[hi]]: drop admissions at or before ts[hi] − W.
            while ts[hi] - ts[lo] >= r.window_ms {
                lo += 1;
            }
            let n = (hi - lo + 1) as u64;
            if n > r.worst_window {
                r.worst_window = n;
                r.worst_at = ts[hi];
            }
        }
        // One violation per key, for its worst window: the count that matters.
        if r.worst_window > allowed {
            report.violations.push(Violation::new(
                RATE_LIMIT,
                Some(r.worst_at),
                format!(
                    "{key}: {} admissions in the window ({}ms, {}ms] of server time, against a limit of {} per {}ms{}",
                    r.worst_window,
                    r.worst_at.saturating_sub(r.window_ms),
                    r.worst_at,
                    r.limit,
                    r.window_ms,
                    if allowed != r.limit { format!(" (allowed up to {allowed})") } else { String::new() }
                ),
            ));
        }
        report.keys.insert(key, r);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn decide(h: &History, t: u64, admitted: bool) {
        let op = |a| RateLimitOp::RateLimit {
            key: "k".into(),
            limit: 5,
            window_ms: 1000,
            admission: a,
            server_ms: Some(t),
            count: None,
            remaining: None,
            pinned_ms: None,
            accessors: None,
        };
        let id = h.invoke_at(t, "c", op(None));
        let a = if admitted { Admission::Admitted } else { Admission::Denied { retry_after_ms: None } };
        h.ok(id, "c", op(Some(a)));
    }

    #[test]
    fn sliding_log_boundary_burst_passes() {
        // Reference case 18: 5 at +900..904 admitted, 5 at +1000..1004 denied,
        // then 5 more once the first five leave the window at +1900.
        let h = History::new();
        for i in 0..5 {
            decide(&h, 900 + i, true);
        }
        for i in 0..5 {
            decide(&h, 1000 + i, false);
        }
        for i in 0..5 {
            decide(&h, 1900 + i, true);
        }
        let r = check(&h.events(), Allowance::Exact);
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.keys["k"].worst_window, 5);
        assert_eq!(r.keys["k"].denied, 5);
    }

    #[test]
    fn fixed_window_boundary_burst_fails() {
        // Reference case 16: 10 admitted inside 104ms against 5 per 1000ms.
        let h = History::new();
        for i in 0..5 {
            decide(&h, 900 + i, true);
            decide(&h, 1000 + i, true);
        }
        let r = check(&h.events(), Allowance::Exact);
        assert_eq!(r.violations.len(), 1);
        assert!(r.violations[0].detail.contains("10 admissions"), "{:?}", r.violations);
        assert_eq!(r.keys["k"].worst_window - r.keys["k"].limit, 5);
        // An approximate limiter allowed 10 per window passes the same history.
        assert_eq!(check(&h.events(), Allowance::UpTo(10)).violations, vec![]);
    }

    #[test]
    fn unknown_outcomes_are_not_counted() {
        let h = History::new();
        for i in 0..5 {
            decide(&h, i, true);
        }
        let op = RateLimitOp::RateLimit {
            key: "k".into(),
            limit: 5,
            window_ms: 1000,
            admission: None,
            server_ms: None,
            count: None,
            remaining: None,
            pinned_ms: None,
            accessors: None,
        };
        let id = h.invoke_at(10, "c", op.clone());
        h.info(id, "c", op);
        let r = check(&h.events(), Allowance::Exact);
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.keys["k"].unknown, 1);
    }
}
