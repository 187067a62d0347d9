//! `redlock-validity`: a Redlock lease is never trusted longer than the
//! masters are known to keep it, and a refusal for lack of time is justified.
//!
//! The README's rule (steps 1–5 of `src/redlock/mod.rs`): a grant read T1
//! before sending and T2 after the last answer; its validity is
//! `TTL − (T2 − T1) − drift` and must be positive, and it is trusted until
//! `T1 + TTL − drift`. The history brackets T1 and T2 by the call's invoke
//! and completion, so for a plain `acquire` or `extend`:
//!
//! - the validity is positive and `validity + (done − invoke) + drift ≤ TTL`;
//! - `valid_until ≤ invoke + TTL − drift`;
//! - an `extend` invoked at or after the lease's `valid_until` must be
//!   refused (a lease whose validity has passed is not to be trusted again),
//!   and one invoked before it must not be refused as `expired`;
//! - a refusal as `too-slow` needs `elapsed + drift ≥ TTL` with an elapsed
//!   that fits inside the call.
//!
//! `acquire_with_retry` hides its earlier attempts, so its grant is judged
//! from the last attempt's T1 (`started_at`, which must lie inside the call).
//! Nothing is judged on an `Info` completion.

use std::collections::BTreeMap;

use super::calls::{calls, CallKind, RedlockSetup};
use crate::checker::Violation;
use crate::families::redlock::invariants::REDLOCK_VALIDITY;
use crate::history::{Event, EventKind, Millis};

/// Checks every grant, extension and time refusal in `events`.
pub(crate) fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let (ttl, drift) = (setup.ttl_ms, setup.drift_ms);
    let mut out = Vec::new();
    // `missed`: by how much an instant missed its bound (see
    // `Violation::missed_by`), for the checks of instants.
    let mut bad = |at: Millis, detail: String, missed: Option<Millis>| {
        if out.len() < 5 {
            out.push(Violation::new(REDLOCK_VALIDITY, Some(at), detail).missed_by_ms_if(missed));
        }
    };
    // The latest valid_until of each lease (acquire op id).
    let mut until: BTreeMap<u64, Millis> = BTreeMap::new();
    for c in calls(events) {
        let (Some(r), Some(what)) = (c.round, verb(c.kind)) else { continue };
        let who = format!("{} {what}", c.process);
        let span = format!("[{}ms, {}ms]", c.invoke, c.done);
        match (c.kind, c.outcome) {
            (_, EventKind::Ok) => {
                let (Some(v), Some(u)) = (r.validity_ms, r.valid_until) else {
                    bad(c.done, format!("{who} {span} granted without a validity"), None);
                    continue;
                };
                if let CallKind::Extend { lease } = c.kind {
                    if let Some(&prev) = until.get(&lease) {
                        if c.invoke >= prev {
                            bad(c.done, format!(
                                "{who} {span} extended a lease whose validity had run out at {prev}ms: it must be refused, not trusted again"
                            ), Some(c.invoke - prev));
                        }
                    }
                }
                // T1: the invoke, or for a retried acquire the last attempt's start.
                let t1 = match c.kind {
                    CallKind::Acquire { retry: true } => match r.started_at {
                        Some(s) if s >= c.invoke && s <= c.done => s,
                        other => {
                            bad(c.done, format!("{who} {span}: its lease starts at {other:?}, outside the call"), None);
                            continue;
                        }
                    },
                    _ => c.invoke,
                };
                let elapsed = match c.kind {
                    CallKind::Acquire { retry: true } => r.elapsed_ms.unwrap_or(0),
                    _ => c.elapsed(),
                };
                if v == 0 || u <= c.done {
                    bad(
                        c.done,
                        format!("{who} {span} granted with no validity left (validity {v}ms, trusted until {u}ms)"),
                        None,
                    );
                }
                if v + elapsed + drift > ttl {
                    bad(
                        c.done,
                        format!(
                            "{who} {span}: validity {v}ms > TTL {ttl}ms − elapsed {elapsed}ms − drift {drift}ms = {}ms",
                            ttl as i64 - elapsed as i64 - drift as i64
                        ),
                        None,
                    );
                }
                if u + drift > t1 + ttl {
                    bad(
                        c.done,
                        format!(
                            "{who} {span}: trusted until {u}ms, after T1 {t1}ms + TTL {ttl}ms − drift {drift}ms = {}ms",
                            (t1 + ttl).saturating_sub(drift)
                        ),
                        Some(u + drift - t1 - ttl),
                    );
                }
                let lease = match c.kind {
                    CallKind::Extend { lease } => lease,
                    _ => c.id,
                };
                until.insert(lease, u);
            }
            (CallKind::Extend { .. }, EventKind::Fail) if r.trusted_after == Some(true) => {
                bad(
                    c.done,
                    format!("{who} {span} was refused, yet the lease still says is_trusted() afterwards"),
                    None,
                );
            }
            (CallKind::Extend { .. }, EventKind::Fail) if r.valid_until.is_some_and(|u| u > c.invoke) => {
                bad(
                    c.done,
                    format!(
                        "{who} {span} was refused, yet the lease stays valid until {}ms, after the extend began (another client may hold it from the cleanup on)",
                        r.valid_until.unwrap_or_default()
                    ), None);
            }
            (_, EventKind::Fail) => match r.refusal.as_deref() {
                Some("too-slow") => {
                    let e = r.elapsed_ms.unwrap_or(0);
                    if e > c.elapsed() || e + drift < ttl {
                        bad(c.done, format!(
                            "{who} {span} refused as too slow with elapsed {e}ms (the call took {}ms): TTL {ttl}ms − elapsed − drift {drift}ms leaves validity",
                            c.elapsed()
                        ), None);
                    }
                }
                Some("expired") => {
                    if let CallKind::Extend { lease } = c.kind {
                        match until.get(&lease) {
                            Some(&prev) if c.invoke < prev => bad(
                                c.done,
                                format!("{who} {span} refused as expired although the lease was valid until {prev}ms"),
                                None,
                            ),
                            _ => {}
                        }
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    out
}

/// A judged call's name in the violations; `None` for a release (not
/// judged here).
fn verb(kind: CallKind) -> Option<&'static str> {
    match kind {
        CallKind::Acquire { retry: false } => Some("acquire"),
        CallKind::Acquire { retry: true } => Some("acquire_with_retry"),
        CallKind::Extend { .. } => Some("extend"),
        CallKind::Release { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::redlock::checks::calls::build::{granted, refused, B};

    fn setup() -> RedlockSetup {
        RedlockSetup::new(5, 300, 5)
    }

    #[test]
    fn honest_grants_extensions_and_refusals_pass() {
        let mut h = B::default();
        // T1 = 0, T2 = 20: validity 275, trusted until 295.
        let a = h.grant("a", 0, 20, "yyyyy", 295);
        h.extend("a", a, 200, 210, EventKind::Ok, granted("yyyyy", 200, 210, 495));
        h.extend("a", a, 495, 500, EventKind::Fail, refused("", "expired", 0));
        h.acquire("b", 600, 900, EventKind::Fail, refused("yyyyt", "too-slow", 296), false);
        assert_eq!(check(&h.events, &setup()), vec![]);
    }

    #[test]
    fn validity_without_the_elapsed_time_fails() {
        let mut h = B::default();
        // Elapsed 100ms, validity reported as TTL − drift = 295 from T2.
        h.acquire("a", 0, 100, EventKind::Ok, granted("yyyyy", 0, 100, 395), false);
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("validity 295ms > TTL 300ms")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("trusted until 395ms")), "{v:?}");
    }

    #[test]
    fn extending_an_expired_lease_and_unjustified_refusals_fail() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyyyy", 295);
        h.extend("a", a, 296, 300, EventKind::Ok, granted("yyyyy", 296, 300, 591));
        h.extend("a", a, 400, 401, EventKind::Fail, refused("", "expired", 0));
        h.acquire("b", 600, 650, EventKind::Fail, refused("yyyyy", "too-slow", 40), false);
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("validity had run out at 295ms")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("refused as expired although")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("refused as too slow")), "{v:?}");
        assert_eq!(v.len(), 3, "{v:?}");
    }

    #[test]
    fn a_refused_extend_that_leaves_the_lease_trusted_fails() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyyyy", 295);
        // Refused at 200 (no majority): trust must end by 200.
        let lost = crate::families::redlock::RedlockRound {
            valid_until: Some(200),
            trusted_after: Some(false),
            ..refused("yynnn", "no-majority", 5)
        };
        h.extend("a", a, 200, 205, EventKind::Fail, lost);
        assert_eq!(check(&h.events, &setup()), vec![]);
        let kept = crate::families::redlock::RedlockRound {
            valid_until: Some(295),
            trusted_after: Some(true),
            ..refused("yynnn", "no-majority", 5)
        };
        h.extend("a", a, 210, 215, EventKind::Fail, kept);
        let v = check(&h.events, &setup());
        assert!(v.len() == 1 && v[0].detail.contains("still says is_trusted()"), "{v:?}");
    }

    #[test]
    fn a_grant_with_no_validity_left_fails() {
        let mut h = B::default();
        h.acquire("a", 0, 295, EventKind::Ok, granted("yyyyy", 0, 295, 295), false);
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("no validity left")), "{v:?}");
    }
}
