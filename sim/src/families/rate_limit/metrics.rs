//! The rate limiters' histograms: how many admissions each window of
//! server time held, as a count and as a share of the key's limit. The
//! limiters' own measurements, so `crate::stats` (which every family
//! shares) knows nothing of admissions.

use std::collections::BTreeMap;

use super::op::{Admission, RateLimitOp};
use crate::history::{Event, EventKind};
use crate::stats::{Histograms, Metric, Unit};

/// The largest number of admissions seen in any window ending at an
/// admission, one sample per admission (requests).
pub(super) const ADMISSIONS: Metric = Metric::new("admissions-per-window", Unit::Requests);
/// [`ADMISSIONS`] as a percentage of the key's limit (%): above 100, the
/// limit was exceeded. Comparable across keys with different limits.
pub(super) const WINDOW_FILL: Metric = Metric::new("window-fill", Unit::PercentOfLimit);

/// What each of the family's histograms measures (for the report).
pub(super) const METRICS: &[(Metric, &str)] = &[
    (
        ADMISSIONS,
        "for each admitted request, the number of admissions in the window (t - W, t] of server time ending at it (requests)",
    ),
    (
        WINDOW_FILL,
        "the same count as a percentage of the key's limit (%, rounded down), over the keys the scenario's limit is judged on (not the check_at probes, which pin instants out of order): above 100 the limiter admitted more than its limit",
    ),
];

/// For every admission of `key`, the number of admissions in the window
/// `(t − W, t]` of server time ending at it. Returns the largest.
pub(super) fn record_admissions_per_window(events: &[Event], out: &mut Histograms) -> u64 {
    out.declare(ADMISSIONS);
    let windows = windows(events);
    for (n, _) in &windows {
        out.record(ADMISSIONS, *n);
    }
    windows.iter().map(|(n, _)| *n).max().unwrap_or(0)
}

/// Records [`WINDOW_FILL`] for `events` (each admission's window as a
/// percentage of its key's limit); returns the fullest window's count. A
/// scenario passes the keys its limit promise covers, the ones its
/// windowed checker judges.
pub(super) fn record_window_fill(events: &[Event], out: &mut Histograms) -> u64 {
    out.declare(WINDOW_FILL);
    let windows = windows(events);
    for (n, limit) in &windows {
        out.record(WINDOW_FILL, n * 100 / limit.max(&1));
    }
    windows.iter().map(|(n, _)| *n).max().unwrap_or(0)
}

/// For each admission, key by key: the admissions in the window of server
/// time ending at it, and the key's limit.
fn windows(events: &[Event]) -> Vec<(u64, u64)> {
    let mut by_key: BTreeMap<String, (u64, u64, Vec<u64>)> = BTreeMap::new();
    for e in events {
        let Some(RateLimitOp::RateLimit { key, limit, window_ms, admission, server_ms, .. }) = e.op.family() else {
            continue;
        };
        if *admission == Some(Admission::Admitted) && e.kind == EventKind::Ok {
            let t = server_ms.unwrap_or(e.time);
            by_key.entry(key.clone()).or_insert((*window_ms, *limit, Vec::new())).2.push(t);
        }
    }
    let mut out = Vec::new();
    for (_, (w, limit, mut ts)) in by_key {
        ts.sort_unstable();
        let mut lo = 0;
        for hi in 0..ts.len() {
            while ts[hi].saturating_sub(ts[lo]) >= w {
                lo += 1;
            }
            out.push(((hi - lo + 1) as u64, limit));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[test]
    fn admissions_window_is_half_open() {
        let h = History::new();
        for t in [0u64, 10, 20, 999, 1000, 1001] {
            let op = RateLimitOp::RateLimit {
                key: "k".into(),
                limit: 3,
                window_ms: 1000,
                admission: Some(Admission::Admitted),
                server_ms: Some(t),
                count: None,
                remaining: None,
                pinned_ms: None,
                accessors: None,
            };
            let id = h.invoke_at(t, "c", op.clone());
            h.ok(id, "c", op);
        }
        let mut hs = Histograms::new();
        // (−1, 999] holds 0,10,20,999 → 4; (0, 1000] drops 0 → 4;
        // (1, 1001] holds 10,20,999,1000,1001 → 5.
        assert_eq!(record_admissions_per_window(&h.events(), &mut hs), 5);
        assert_eq!(hs.summaries()[ADMISSIONS.name].count, 6);
        assert_eq!(record_window_fill(&h.events(), &mut hs), 5);
        // Limit 3: the window of 5 is 166 % full, rounded down.
        let fill = &hs.summaries()[WINDOW_FILL.name];
        assert_eq!((fill.count, fill.max, fill.min), (6, 166, 33));
    }
}
