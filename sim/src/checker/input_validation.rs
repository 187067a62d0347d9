//! `input-validation`: bad configuration is refused with
//! `Error::InvalidInput` at construction, good configuration is accepted,
//! exactly at the documented edges.
//!
//! "Configuration through types that make bad values unrepresentable;
//! validation at construction" is a promise with numbers in it: a renew
//! interval at most half of the usable lease, a keep-alive interval shorter
//! than the usable TTL, `max × window ≤ 2^52`, a pinned instant below 2^53,
//! a TTL or acknowledgement timeout of 1 ms to 2^53 − 1 ms in whole
//! milliseconds, a drift below the whole TTL with a constant no longer
//! than the longest TTL, a retry whose cap is at least its first delay,
//! no brace and no empty text in a key's prefix or name, no Redlock
//! master listed twice.
//! An off-by-one in one of those comparisons passes every run that uses
//! comfortable values. The validation probe (`probes/validation.rs`)
//! tries values on both sides of each edge; this checker states the
//! documented rule for each and convicts any answer that differs from it,
//! or a refusal that is not `InvalidInput`.

use super::{Violation, INPUT_VALIDATION};
use crate::history::{Event, KeyText, Op, Validation};

const MS: u128 = 1_000_000;
/// `Ttl`'s largest value, 2^53 − 1 ms.
const TTL_MAX_MS: u64 = (1 << 53) - 1;

/// The drift allowance of `ttl_ms` in ns: `ttl × ‰ / 1000 + constant`.
fn allowance_ns(ttl_ms: u64, (per_mille, constant_ms): (u32, u64)) -> u128 {
    u128::from(ttl_ms) * MS * u128::from(per_mille) / 1000 + u128::from(constant_ms) * MS
}

/// What `ttl_ms` leaves once the drift is taken off, in ns.
fn usable_ns(ttl_ms: u64, drift: (u32, u64)) -> u128 {
    (u128::from(ttl_ms) * MS).saturating_sub(allowance_ns(ttl_ms, drift))
}

fn ttl_ok(ms: u64) -> bool {
    (1..=TTL_MAX_MS).contains(&ms)
}

/// The documented rule: whether `case` must be accepted.
pub fn must_accept(case: &Validation) -> bool {
    match *case {
        Validation::ElectionTiming { lease_ms, renew_ms, campaign_ms, drift } => {
            let usable = usable_ns(lease_ms, drift);
            ttl_ok(lease_ms)
                && usable > 0
                && renew_ms > 0
                && renew_ms < lease_ms
                && u128::from(renew_ms) * MS <= usable / 2
                && campaign_ms > 0
        }
        Validation::ElectionDefaults { lease_ms, drift } => {
            // The renew default is a third of the lease (the campaign's is
            // the renew interval): accepted when that is at most half the
            // usable lease.
            let usable = usable_ns(lease_ms, drift);
            ttl_ok(lease_ms) && usable > 0 && u128::from(lease_ms) * MS / 3 <= usable / 2
        }
        Validation::Limit { max, window_ms } => {
            max >= 1 && ttl_ok(window_ms) && max.checked_mul(window_ms).is_some_and(|p| p <= 1 << 52)
        }
        Validation::CheckAt { now_ms } => now_ms <= TTL_MAX_MS,
        Validation::KeepAlive { ttl_ms, every_ms, drift } => {
            every_ms > 0 && u128::from(every_ms) * MS < usable_ns(ttl_ms, drift)
        }
        // Every key of one primitive carries the name as its hash tag, so
        // neither part may be empty or hold a brace.
        Validation::Ttl { ms, extra_ns } => extra_ns == 0 && ttl_ok(ms),
        // The same range as a TTL: the server adds its clock to the timeout.
        Validation::Acknowledgement { replicas, ms, extra_ns } => replicas >= 1 && extra_ns == 0 && ttl_ok(ms),
        Validation::KeyName { prefix, name, .. } => prefix == KeyText::Plain && name == KeyText::Plain,
        // Below the whole TTL, and a constant no longer than the longest TTL.
        Validation::Drift { per_mille, constant_ms, extra_ns } => {
            per_mille < 1000 && u128::from(constant_ms) * MS + u128::from(extra_ns) <= u128::from(TTL_MAX_MS) * MS
        }
        Validation::Retry { base_ns, max_ns } => base_ns > 0 && max_ns >= base_ns,
        Validation::Redlock { masters, ttl_ms, drift, master_timeout_ms, handshake_ms } => {
            masters >= 1
                && allowance_ns(ttl_ms, drift) < u128::from(ttl_ms) * MS
                && master_timeout_ms > 0
                && master_timeout_ms < ttl_ms
                && handshake_ms > 0
        }
        // Masters that are one server count one failure twice; only a copy
        // whose identity could not be read may slip through.
        Validation::RedlockTwice { unverified } => unverified,
    }
}

/// Every answer that differs from the documented rule.
pub fn check(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Op::Validated { case, accepted, invalid, refusal } = &e.op else { continue };
        let expected = must_accept(case);
        let why = if *accepted != expected {
            Some(if expected {
                format!(
                    "{case:?} is valid by the documented rules but was refused: {}",
                    refusal.as_deref().unwrap_or("?")
                )
            } else {
                format!("{case:?} breaks the documented rules but was accepted")
            })
        } else if !accepted && !invalid {
            Some(format!(
                "{case:?} was refused with something other than InvalidInput: {}",
                refusal.as_deref().unwrap_or("?")
            ))
        } else {
            None
        };
        if let Some(why) = why {
            out.push(Violation::new(INPUT_VALIDATION, Some(e.time), format!("{}: {why}", e.process)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::KeyedOn;

    #[test]
    fn the_edges_are_where_the_documentation_puts_them() {
        let drift = (10, 2);
        // 400 ms − 6 ms = 394 ms usable: renew at most 197 ms.
        let el = |renew_ms| Validation::ElectionTiming { lease_ms: 400, renew_ms, campaign_ms: 25, drift };
        assert!(must_accept(&el(197)) && !must_accept(&el(198)) && !must_accept(&el(0)));
        let lim = |max, window_ms| Validation::Limit { max, window_ms };
        assert!(
            must_accept(&lim(1 << 42, 1024)) && !must_accept(&lim((1 << 42) + 1, 1024)) && !must_accept(&lim(0, 1))
        );
        assert!(must_accept(&Validation::CheckAt { now_ms: TTL_MAX_MS }));
        assert!(!must_accept(&Validation::CheckAt { now_ms: TTL_MAX_MS + 1 }));
        // 300 ms − 5 ms = 295 ms usable: every below it.
        let ka = |every_ms| Validation::KeepAlive { ttl_ms: 300, every_ms, drift };
        assert!(must_accept(&ka(294)) && !must_accept(&ka(295)) && !must_accept(&ka(0)));
        let rl = |master_timeout_ms| Validation::Redlock {
            masters: 5,
            ttl_ms: 300,
            drift,
            master_timeout_ms,
            handshake_ms: 100,
        };
        assert!(must_accept(&rl(299)) && !must_accept(&rl(300)) && !must_accept(&rl(0)));
        let twice = |unverified| Validation::RedlockTwice { unverified };
        assert!(!must_accept(&twice(false)) && must_accept(&twice(true)));
        let ttl = |ms, extra_ns| Validation::Ttl { ms, extra_ns };
        assert!(must_accept(&ttl(1, 0)) && must_accept(&ttl(TTL_MAX_MS, 0)));
        assert!(!must_accept(&ttl(0, 0)) && !must_accept(&ttl(TTL_MAX_MS + 1, 0)) && !must_accept(&ttl(5, 1)));
        let ack = |replicas, ms| Validation::Acknowledgement { replicas, ms, extra_ns: 0 };
        assert!(must_accept(&ack(1, TTL_MAX_MS)) && !must_accept(&ack(1, TTL_MAX_MS + 1)) && !must_accept(&ack(0, 5)));
        let drift = |per_mille, constant_ms, extra_ns| Validation::Drift { per_mille, constant_ms, extra_ns };
        assert!(
            must_accept(&drift(999, 0, 0)) && must_accept(&drift(0, TTL_MAX_MS, 0)) && must_accept(&drift(5, 3, 7))
        );
        assert!(!must_accept(&drift(1000, 0, 0)) && !must_accept(&drift(0, TTL_MAX_MS, 1)));
        let retry = |base_ns, max_ns| Validation::Retry { base_ns, max_ns };
        assert!(must_accept(&retry(1, 1)) && must_accept(&retry(5, 9)));
        assert!(!must_accept(&retry(0, 5)) && !must_accept(&retry(5, 4)));
        let key = |prefix, name| Validation::KeyName { on: KeyedOn::FenceKey, prefix, name };
        assert!(must_accept(&key(KeyText::Plain, KeyText::Plain)));
        assert!(
            !must_accept(&key(KeyText::Empty, KeyText::Plain)) && !must_accept(&key(KeyText::Plain, KeyText::Empty))
        );
        assert!(!must_accept(&key(KeyText::OpenBrace, KeyText::Plain)));
        assert!(!must_accept(&key(KeyText::Plain, KeyText::CloseBrace)));
    }
}
