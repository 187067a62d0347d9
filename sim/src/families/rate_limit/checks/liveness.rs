//! `liveness` for rate limiters: after the faults heal, a limited client that
//! waits its `retry_after` is admitted.
//!
//! The rule, judged per key after `settle_ms` (the last fault's heal plus a
//! drain in which every request in flight has run or timed out):
//!
//! 1. every request invoked at or after `settle_ms` completes `ok`: a healed
//!    limiter answers (a timeout, an error or no answer at all is no
//!    progress);
//! 2. a denial at `t` with `retry_after = r`, followed on the same key by a
//!    request pinned (`check_at`) at exactly `t + r` with **nothing admitted
//!    meanwhile** — no definite admission at an instant in `(t, t + r)`, none
//!    at `t + r` before it (a smaller count), and no request of unknown
//!    outcome that could run in `[t, t + r]` — must be admitted, if the
//!    retry was invoked at or after `settle_ms`. This is the README's
//!    promise ("at `retry_after` a request is admitted if nothing else was
//!    admitted meanwhile") turned into progress: a limiter that never
//!    admits again, or whose `retry_after` is too early, fails it.
//!
//! Requests on the server's clock are judged by rule 1 only (their instant
//! cannot be aimed).

use std::collections::BTreeMap;

use super::super::op::{Admission, RateLimitOp};
use crate::checker::{Violation, LIVENESS};
use crate::history::{Event, EventKind, Millis};

#[derive(Debug, Clone, Copy)]
struct Req {
    invoke: Millis,
    pinned: Option<Millis>,
    /// `(admitted, server time, count, retry)` for an `ok`.
    decided: Option<(bool, Millis, u64, Option<u64>)>,
    kind: Option<EventKind>,
}

/// Checks every limiter key in `events` (see the module docs).
pub(crate) fn check(events: &[Event], settle_ms: Millis) -> Vec<Violation> {
    let mut reqs: BTreeMap<String, Vec<Req>> = BTreeMap::new();
    let mut at: BTreeMap<u64, (String, usize)> = BTreeMap::new();
    for e in events {
        let Some(RateLimitOp::RateLimit { key, admission, server_ms, count, pinned_ms, .. }) = e.op.family() else {
            continue;
        };
        if e.kind == EventKind::Invoke {
            let v = reqs.entry(key.clone()).or_default();
            at.insert(e.op_id.0, (key.clone(), v.len()));
            v.push(Req { invoke: e.time, pinned: *pinned_ms, decided: None, kind: None });
            continue;
        }
        let Some((k, i)) = at.get(&e.op_id.0) else { continue };
        let r = &mut reqs.get_mut(k).expect("key of an invoke")[*i];
        r.kind = Some(e.kind);
        if let (EventKind::Ok, Some(a), Some(t), Some(c)) = (e.kind, admission, server_ms, count) {
            let retry = match a {
                Admission::Denied { retry_after_ms } => *retry_after_ms,
                Admission::Admitted => None,
            };
            r.decided = Some((*a == Admission::Admitted, *t, *c, retry));
        }
    }
    let mut out = Vec::new();
    for (key, rs) in &reqs {
        if let Some(r) = rs.iter().find(|r| r.invoke >= settle_ms && r.kind != Some(EventKind::Ok)) {
            out.push(Violation::new(
                LIVENESS,
                Some(r.invoke),
                format!(
                    "{key}: a request invoked at {}ms, after the faults healed ({settle_ms}ms), {}",
                    r.invoke,
                    match r.kind {
                        None => "never completed",
                        Some(EventKind::Info) => "timed out",
                        _ => "failed",
                    }
                ),
            ));
            continue;
        }
        let unknown: Vec<(Millis, Option<Millis>)> =
            rs.iter().filter(|r| r.decided.is_none()).map(|r| (r.invoke, r.pinned)).collect();
        let admitted: Vec<(Millis, u64)> =
            rs.iter().filter_map(|r| r.decided.filter(|d| d.0).map(|d| (d.1, d.2))).collect();
        'denials: for d in rs {
            let Some((false, t, _, Some(r))) = d.decided else { continue };
            let target = t + r;
            for q in rs {
                let (Some(p), Some((q_admitted, _, q_count, _))) = (q.pinned, q.decided) else { continue };
                if p != target || q.invoke < settle_ms || q_admitted {
                    continue;
                }
                let meanwhile = admitted.iter().any(|&(a, c)| (a > t && a < target) || (a == target && c <= q_count))
                    || unknown.iter().any(|&(lo, pinned)| match pinned {
                        Some(p) => p >= t && p <= target,
                        None => lo <= target,
                    });
                if !meanwhile {
                    out.push(Violation::new(
                        LIVENESS,
                        Some(target),
                        format!(
                            "{key}: denied at {t}ms with retry-after {r}ms, retried at exactly {target}ms after the faults healed with nothing admitted meanwhile, and denied again"
                        ),
                    ));
                    break 'denials;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn op(a: Option<Admission>, t: u64, count: Option<u64>) -> RateLimitOp {
        RateLimitOp::RateLimit {
            key: "k".into(),
            limit: 1,
            window_ms: 100,
            admission: a,
            server_ms: a.map(|_| t),
            count,
            remaining: None,
            pinned_ms: Some(t),
            accessors: None,
        }
    }

    fn decide(h: &History, t: u64, a: Admission, count: u64) {
        let id = h.invoke_at(t, "c", op(None, t, None));
        h.ok(id, "c", op(Some(a), t, Some(count)));
    }

    #[test]
    fn retry_at_retry_after_must_be_admitted() {
        let denied = Admission::Denied { retry_after_ms: Some(50) };
        let h = History::new();
        decide(&h, 10, Admission::Admitted, 1);
        decide(&h, 60, denied, 1);
        decide(&h, 109, Admission::Denied { retry_after_ms: Some(1) }, 1);
        decide(&h, 110, Admission::Admitted, 1);
        assert_eq!(check(&h.events(), 0), vec![]);

        let h = History::new();
        decide(&h, 10, Admission::Admitted, 1);
        decide(&h, 60, denied, 1);
        decide(&h, 110, Admission::Denied { retry_after_ms: Some(100) }, 1);
        let v = check(&h.events(), 0);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("retried at exactly 110ms"), "{v:?}");
        // Before the faults heal, the same history is not judged.
        assert_eq!(check(&h.events(), 200), vec![]);
    }

    #[test]
    fn a_request_after_healing_must_complete() {
        let h = History::new();
        let id = h.invoke_at(500, "c", op(None, 500, None));
        h.info(id, "c", op(None, 500, None));
        assert_eq!(check(&h.events(), 1000), vec![]);
        let v = check(&h.events(), 400);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("timed out"), "{v:?}");
    }
}
