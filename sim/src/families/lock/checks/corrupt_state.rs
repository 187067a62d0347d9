//! `corrupt-state`: a key holding what the library never writes is refused
//! with a typed error that names it, and nothing is changed; a counter the
//! library can advance gives the exact next token, past 2^53 too.
//!
//! Judges the corruption probe's records ([`LockOp::StateProbe`], see
//! `families/lock/probes/corruption.rs`) against what the library documents:
//!
//! - `Lock::acquire` over a fence counter holding a canonical integer `n`
//!   with `0 ≤ n < 2^63 − 1` grants token `n + 1` exactly and leaves the
//!   counter at `n + 1`; over any other string (negative, malformed, at the
//!   `INCR` limit) it is `CorruptState` naming the counter's key, with the
//!   counter unchanged and no lease set;
//! - a hash at the counter or at the lock key is `WrongType`, and neither
//!   key changes;
//! - `FencedStore::write(t)` over a canonical stored token `s` accepts iff
//!   `t ≥ s` (and stores `t`), otherwise rejects naming `s`; over a
//!   malformed token field it is `CorruptState` naming the store's key, and
//!   nothing is written.
//!
//! An answer whose outcome is unknown (a timeout) is not judged.

use crate::checker::Violation;
use crate::families::lock::invariants::CORRUPT_STATE;
use crate::families::lock::op::{LockOp, Planted, ProbeAfter, ProbeReply};
use crate::history::Event;

/// Every probe record whose answer or aftermath differs from the contract.
pub(crate) fn check(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Some(LockOp::StateProbe { planted, reply, after }) = LockOp::of(&e.op) else { continue };
        if matches!(reply, ProbeReply::Unknown(_)) {
            continue;
        }
        if let Some(why) = judge(planted, reply, after.as_ref()) {
            out.push(Violation::new(CORRUPT_STATE, Some(e.time), format!("{} at t={}ms: {why}", e.process, e.time)));
        }
    }
    out
}

/// `n` if `s` is exactly how Redis writes the integer `n` (what `INCR` accepts).
fn canonical_i64(s: &str) -> Option<i64> {
    s.parse::<i64>().ok().filter(|n| n.to_string() == s)
}

/// `n` if `s` is exactly how the library writes the token `n`.
fn canonical_u64(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|n| n.to_string() == s)
}

/// Why `reply` (and `after`, the keys it left) breaks the contract for
/// what was `planted`, if it does: one rule per kind of probe.
fn judge(planted: &Planted, reply: &ProbeReply, after: Option<&ProbeAfter>) -> Option<String> {
    let after = after.cloned();
    match planted {
        Planted::CounterRead { fence_key, value } => counter_read(fence_key, value.as_deref(), reply),
        Planted::StoredRead { key, token, value } => stored_read(key, token.as_deref(), value.as_ref(), reply),
        Planted::LeaseRead { lock_key, expiry } => lease_read(lock_key, *expiry, reply),
        Planted::Counter { fence_key, value, .. } | Planted::FlooredCounter { fence_key, value, .. } => {
            // A floored lock's token is max(counter + 1, the clock), and
            // the clock read somewhere in the window.
            let window = match planted {
                Planted::FlooredCounter { window_us, .. } => Some(*window_us),
                _ => None,
            };
            acquire_over_counter(fence_key, value, window, reply, after)
        }
        Planted::CounterHash { .. } | Planted::LockHash { .. } => {
            acquire_over_hash(matches!(planted, Planted::CounterHash { .. }), reply, after)
        }
        Planted::StoredToken { key, token, write } => write_over_token(key, token, *write, reply, after),
    }
}

/// `current_token` over a fence counter holding `value` (`None`: absent):
/// the counter when it is a canonical non-negative integer, nothing when
/// absent, else `CorruptState` naming the counter.
fn counter_read(fence_key: &str, value: Option<&str>, reply: &ProbeReply) -> Option<String> {
    let expected = match value.map(canonical_i64) {
        None => ProbeReply::Nothing,
        Some(Some(n)) if n >= 0 => ProbeReply::Token(n as u64),
        Some(_) => {
            return (!matches!(reply, ProbeReply::CorruptState { key, .. } if key == fence_key)).then(|| {
                format!("current_token over counter {value:?} answered {reply:?}, not CorruptState naming {fence_key}")
            })
        }
    };
    (*reply != expected).then(|| format!("current_token over counter {value:?} answered {reply:?}, not {expected:?}"))
}

/// `FencedStore::read` of an entry planted as (`token`, `value`): the entry
/// when its token is canonical, nothing when absent, else `CorruptState`
/// naming the store's key.
fn stored_read(key: &str, token: Option<&str>, value: Option<&String>, reply: &ProbeReply) -> Option<String> {
    let expected = match (token.map(canonical_u64), value) {
        (None, None) => Some(ProbeReply::Nothing),
        (Some(Some(t)), Some(v)) => Some(ProbeReply::Stored { token: t, value: v.clone() }),
        _ => None,
    };
    match expected {
        Some(x) => (*reply != x).then(|| {
            format!("read of an entry planted as (token {token:?}, value {value:?}) answered {reply:?}, not {x:?}")
        }),
        None => (!matches!(reply, ProbeReply::CorruptState { key: k, .. } if k == key)).then(|| {
            format!("read of an entry planted as (token {token:?}, value {value:?}) answered {reply:?}, not CorruptState naming {key}")
        }),
    }
}

/// `remaining_ttl` of a lock key with `expiry` (`Some(None)`: none;
/// `None`: absent): nothing when absent, `CorruptState` naming the key
/// when it never expires, else at most the time it was set for.
fn lease_read(lock_key: &str, expiry: Option<Option<u64>>, reply: &ProbeReply) -> Option<String> {
    match expiry {
        None => (*reply != ProbeReply::Nothing).then(|| format!("remaining_ttl of an absent lease answered {reply:?}")),
        Some(None) => (!matches!(reply, ProbeReply::CorruptState { key, .. } if key == lock_key)).then(|| {
            format!("remaining_ttl of a lock key without expiry answered {reply:?}, not CorruptState naming {lock_key}")
        }),
        Some(Some(ms)) => match reply {
            ProbeReply::Remaining(r) if *r <= ms => None,
            _ => Some(format!("remaining_ttl of a lease set for {ms}ms answered {reply:?}")),
        },
    }
}

/// `Lock::acquire` over a fence counter holding `value` (with the clock's
/// `window` for a floored lock): the exact next token, stored, when the
/// counter can advance; else `CorruptState` naming the counter, with
/// nothing changed.
fn acquire_over_counter(
    fence_key: &str,
    value: &str,
    window: Option<(u64, u64)>,
    reply: &ProbeReply,
    after: Option<ProbeAfter>,
) -> Option<String> {
    match canonical_i64(value) {
        Some(n) if (0..i64::MAX).contains(&n) => {
            let next = n as u64 + 1;
            let ProbeReply::Token(token) = *reply else {
                return Some(format!("acquire over counter {value:?} answered {reply:?}, not a token"));
            };
            // The counter + 1 when it is ahead of the clock (or
            // there is no clock), else the clock's reading.
            let (expected, want) = match window {
                Some((from, to)) if next < to => {
                    (token >= next.max(from) && token <= to, format!("max({next}, the clock in {from}..={to} µs)"))
                }
                _ => (token == next, next.to_string()),
            };
            if !expected {
                return Some(format!("acquire over counter {value:?} answered token {token}, not {want}"));
            }
            let a = after?;
            if a.counter.as_deref() != Some(token.to_string().as_str()) || a.lock.is_none() {
                return Some(format!("acquire over counter {value:?} granted {token} but left {a:?}"));
            }
            None
        }
        _ => {
            if !names(reply, fence_key) {
                return Some(format!(
                    "acquire over counter {value:?} answered {reply:?}, not CorruptState naming {fence_key}"
                ));
            }
            let a = after?;
            if a.counter.as_deref() != Some(value) || a.lock.is_some() {
                return Some(format!("acquire over counter {value:?} was refused but changed the keys: {a:?}"));
            }
            None
        }
    }
}

/// `Lock::acquire` with a hash at the fence counter (`at_counter`) or at
/// the lock key: `WrongType`, and neither key changes.
fn acquire_over_hash(at_counter: bool, reply: &ProbeReply, after: Option<ProbeAfter>) -> Option<String> {
    let what = if at_counter { "counter" } else { "lock key" };
    if !matches!(reply, ProbeReply::WrongType { .. }) {
        return Some(format!("acquire with a hash at the {what} answered {reply:?}, not WrongType"));
    }
    let a = after?;
    let unchanged = if at_counter {
        a.lock.is_none() && a.counter.as_deref() == Some("<hash>")
    } else {
        a.lock.as_deref() == Some("<hash>") && a.counter.is_none()
    };
    if !unchanged {
        return Some(format!("acquire with a hash at the {what} was refused but changed the keys: {a:?}"));
    }
    None
}

/// `FencedStore::write(write)` over a stored token field `token`: accepted
/// (and stored) iff at least a canonical stored token, rejected naming it
/// otherwise, `CorruptState` naming the store's key over a malformed one;
/// a refused write changes nothing.
fn write_over_token(
    key: &str,
    token: &str,
    write: u64,
    reply: &ProbeReply,
    after: Option<ProbeAfter>,
) -> Option<String> {
    let a = after?;
    match canonical_u64(token) {
        Some(stored) if write >= stored => {
            if *reply != ProbeReply::Accepted {
                return Some(format!("write {write} over stored token {stored} answered {reply:?}, not Accepted"));
            }
            if a.token.as_deref() != Some(write.to_string().as_str()) || a.value.as_deref() != Some("probe") {
                return Some(format!("write {write} over stored token {stored} was accepted but left {a:?}"));
            }
            None
        }
        Some(stored) => {
            if *reply != (ProbeReply::Rejected { highest_seen: stored }) {
                return Some(format!(
                    "write {write} over stored token {stored} answered {reply:?}, not Rejected naming {stored}"
                ));
            }
            unchanged_entry(token, &a)
        }
        None => {
            let refused = if digits_only(token) {
                matches!(reply, ProbeReply::CorruptState { key: k, .. } if k == key)
            } else {
                names(reply, key)
            };
            if !refused {
                return Some(format!(
                    "write {write} over malformed token field {token:?} answered {reply:?}, not CorruptState naming {key}"
                ));
            }
            unchanged_entry(token, &a)
        }
    }
}

/// Whether `reply` is a `CorruptState` for `key` whose detail names it too.
/// The error names the planted key, in its key and in the detail the
/// script wrote.
fn names(reply: &ProbeReply, key: &str) -> bool {
    matches!(reply, ProbeReply::CorruptState { key: k, detail } if k == key && detail.contains(key))
}

/// Digits without a leading zero: what the fenced-write script takes for
/// a canonical decimal. Past 2^64 such a token is the client's to refuse,
/// when it parses the script's answer, with a detail of its own.
fn digits_only(token: &str) -> bool {
    token == "0" || (token.starts_with(|c: char| ('1'..='9').contains(&c)) && token.bytes().all(|b| b.is_ascii_digit()))
}

fn unchanged_entry(token: &str, a: &ProbeAfter) -> Option<String> {
    if a.token.as_deref() == Some(token) && a.value.as_deref() == Some("planted") {
        None
    } else {
        Some(format!("a refused write changed the entry (token field was {token:?}): {a:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(value: &str) -> Planted {
        Planted::Counter { lock_key: "lock:p".into(), fence_key: "lock:p:fence".into(), value: value.into() }
    }

    fn lock_after(lock: Option<&str>, counter: Option<&str>) -> Option<ProbeAfter> {
        Some(ProbeAfter {
            lock: lock.map(str::to_string),
            counter: counter.map(str::to_string),
            ..ProbeAfter::default()
        })
    }

    fn corrupt(key: &str) -> ProbeReply {
        ProbeReply::CorruptState { key: key.into(), detail: format!("fence counter {key} is negative") }
    }

    #[test]
    fn a_floored_counter_gets_the_clock_or_the_counter_plus_one() {
        let floored = |value: &str| Planted::FlooredCounter {
            lock_key: "lock:p".into(),
            fence_key: "lock:p:fence".into(),
            value: value.into(),
            window_us: (1_000_000, 1_005_000),
        };
        let ok = |token: u64| lock_after(Some("o"), Some(&token.to_string()));
        // Below the clock: a reading inside the window, stored.
        assert_eq!(judge(&floored("7"), &ProbeReply::Token(1_002_000), ok(1_002_000).as_ref()), None);
        assert!(judge(&floored("7"), &ProbeReply::Token(8), ok(8).as_ref()).is_some(), "the floor ignored");
        assert!(
            judge(&floored("7"), &ProbeReply::Token(1_006_000), ok(1_006_000).as_ref()).is_some(),
            "a reading after the reply"
        );
        assert!(
            judge(&floored("7"), &ProbeReply::Token(1_002_000), ok(8).as_ref()).is_some(),
            "the floor returned but not stored"
        );
        // Ahead of the clock: exactly the counter + 1.
        let ahead = (1u64 << 53) + 1;
        assert_eq!(judge(&floored(&ahead.to_string()), &ProbeReply::Token(ahead + 1), ok(ahead + 1).as_ref()), None);
        assert!(judge(&floored(&ahead.to_string()), &ProbeReply::Token(ahead), ok(ahead + 1).as_ref()).is_some());
        // Corrupt: refused, naming the counter, keys untouched.
        assert_eq!(judge(&floored("-5"), &corrupt("lock:p:fence"), lock_after(None, Some("-5")).as_ref()), None);
        assert!(judge(&floored("-5"), &corrupt("lock:p"), lock_after(None, Some("-5")).as_ref()).is_some());
    }

    #[test]
    fn counters_get_the_exact_next_token_or_a_refusal_naming_the_counter() {
        let past = (1u64 << 53) + 1;
        let ok = judge(
            &counter(&past.to_string()),
            &ProbeReply::Token(past + 1),
            lock_after(Some("o"), Some(&(past + 1).to_string())).as_ref(),
        );
        assert_eq!(ok, None);
        // A token rounded through a Lua number.
        assert!(judge(
            &counter(&past.to_string()),
            &ProbeReply::Token(past),
            lock_after(Some("o"), Some(&(past + 1).to_string())).as_ref()
        )
        .is_some());
        // A refusal of a negative counter: must name the counter and leave it.
        assert_eq!(judge(&counter("-5"), &corrupt("lock:p:fence"), lock_after(None, Some("-5")).as_ref()), None);
        assert!(
            judge(&counter("-5"), &corrupt("lock:p:fence"), lock_after(None, Some("-4")).as_ref()).is_some(),
            "undo skipped"
        );
        assert!(
            judge(&counter("-5"), &corrupt("lock:p:fence"), lock_after(Some("o"), Some("-5")).as_ref()).is_some(),
            "lease set"
        );
        let wrong_key =
            ProbeReply::CorruptState { key: "lock:p:fence".into(), detail: "fence counter lock:p is negative".into() };
        assert!(
            judge(&counter("-5"), &wrong_key, lock_after(None, Some("-5")).as_ref()).is_some(),
            "detail names the lock key"
        );
        assert!(judge(&counter("007"), &ProbeReply::Error("ERR value is not an integer".into()), None).is_some());
        // "-1" would INCR to 0: never a token.
        assert!(judge(&counter("-1"), &ProbeReply::Token(0), lock_after(Some("o"), Some("0")).as_ref()).is_some());
    }

    #[test]
    fn reads_report_the_counter_and_the_expiry_or_refuse_them() {
        let read =
            |v: Option<&str>| Planted::CounterRead { fence_key: "lock:p:fence".into(), value: v.map(str::to_string) };
        assert_eq!(judge(&read(None), &ProbeReply::Nothing, None), None);
        assert_eq!(judge(&read(Some("41")), &ProbeReply::Token(41), None), None);
        assert!(judge(&read(Some("41")), &ProbeReply::Token(42), None).is_some());
        let refused = ProbeReply::CorruptState { key: "lock:p:fence".into(), detail: "not an integer".into() };
        assert_eq!(judge(&read(Some("18446744073709551615")), &refused, None), None);
        assert!(judge(&read(Some("-3")), &ProbeReply::Token(3), None).is_some());
        let lease = |expiry| Planted::LeaseRead { lock_key: "lock:p".into(), expiry };
        assert_eq!(judge(&lease(Some(Some(500))), &ProbeReply::Remaining(499), None), None);
        assert!(judge(&lease(Some(Some(500))), &ProbeReply::Remaining(501), None).is_some());
        let no_expiry = ProbeReply::CorruptState { key: "lock:p".into(), detail: "PTTL -1".into() };
        assert_eq!(judge(&lease(Some(None)), &no_expiry, None), None);
        assert!(judge(&lease(Some(None)), &ProbeReply::Remaining(u64::MAX), None).is_some());
    }

    #[test]
    fn hashes_are_wrong_type_and_stay() {
        let ch = Planted::CounterHash { lock_key: "lock:p".into(), fence_key: "lock:p:fence".into() };
        let wt = ProbeReply::WrongType { key: "lock:p".into() };
        assert_eq!(judge(&ch, &wt, lock_after(None, Some("<hash>")).as_ref()), None);
        assert!(judge(&ch, &corrupt("lock:p:fence"), lock_after(None, Some("<hash>")).as_ref()).is_some());
        let lh = Planted::LockHash { lock_key: "lock:p".into(), fence_key: "lock:p:fence".into() };
        assert_eq!(judge(&lh, &wt, lock_after(Some("<hash>"), None).as_ref()), None);
        assert!(judge(&lh, &wt, lock_after(Some("<hash>"), Some("1")).as_ref()).is_some(), "counter advanced");
    }

    #[test]
    fn stored_tokens_order_writes_exactly_and_malformed_ones_are_refused() {
        let st = |token: &str, write| Planted::StoredToken { key: "fenced:p".into(), token: token.into(), write };
        let entry = |t: &str, v: &str| {
            Some(ProbeAfter { token: Some(t.into()), value: Some(v.into()), ..ProbeAfter::default() })
        };
        let max = u64::MAX.to_string();
        assert_eq!(
            judge(
                &st(&max, u64::MAX - 1),
                &ProbeReply::Rejected { highest_seen: u64::MAX },
                entry(&max, "planted").as_ref()
            ),
            None
        );
        assert!(judge(
            &st(&max, u64::MAX - 1),
            &ProbeReply::Accepted,
            entry(&(u64::MAX - 1).to_string(), "probe").as_ref()
        )
        .is_some());
        assert_eq!(judge(&st("0", 0), &ProbeReply::Accepted, entry("0", "probe").as_ref()), None);
        let refused = ProbeReply::CorruptState {
            key: "fenced:p".into(),
            detail: "stored token of fenced:p is not canonical".into(),
        };
        assert_eq!(judge(&st("007", 10_000), &refused, entry("007", "planted").as_ref()), None);
        assert!(judge(&st("007", 10_000), &ProbeReply::Accepted, entry("10000", "probe").as_ref()).is_some());
        // Past 2^64 the client refuses the script's answer: the detail is
        // the parse's, the key is still the planted one's.
        let past = "18446744073709551616";
        let parsed = ProbeReply::CorruptState { key: "fenced:p".into(), detail: format!("stored token {past:?}") };
        assert_eq!(judge(&st(past, u64::MAX), &parsed, entry(past, "planted").as_ref()), None);
        let elsewhere = ProbeReply::CorruptState { key: "fenced:q".into(), detail: "fenced:p".into() };
        assert!(judge(&st(past, u64::MAX), &elsewhere, entry(past, "planted").as_ref()).is_some());
        assert!(judge(&st(past, u64::MAX), &parsed, entry(&max, "probe").as_ref()).is_some(), "entry changed");
    }
}
