//! `limiter-state`: a limiter key holding what the scripts never write is
//! refused, and the extremes they do write are decided.
//!
//! The promise (`SlidingWindowCounter` and `SlidingWindowLog`, "# Errors"):
//! a counter hash without `i`, `c` and `p` as integers in `[0, 2^53 − 1]`,
//! or a log entry read for a denial whose score is not such an integer, is
//! `Error::CorruptState` naming the key, and nothing is admitted or
//! changed. Each [`RateLimitOp::Planted`] of `super::super::planted` is
//! judged:
//!
//! 1. a corrupt state is answered `CorruptState` naming its key, and the
//!    key's bytes and expiry are as before the call;
//! 2. an accepted extreme is decided as the scripts' arithmetic says:
//!    admitted, or denied with the exact wait where it does not depend on
//!    the instant within the bucket.
//!
//! An unknown answer (a fault) or a key a fault kept from being read back
//! is not judged.

use super::super::invariants::LIMITER_STATE;
use super::super::op::RateLimitOp;
use super::super::planted_state::{Expected, PlantedAnswer};
use crate::checker::Violation;
use crate::history::Event;

/// The verdicts on every planted state of `events`, and whether a corrupt
/// one was seen refused and left as it was (the situation
/// `planted-state-refused`).
pub(crate) fn check(events: &[Event]) -> (Vec<Violation>, bool) {
    let mut out = Vec::new();
    let mut refused = false;
    for e in events {
        let Some(RateLimitOp::Planted { key, state, at_ms, window_ms, answer, unchanged }) = e.op.family() else {
            continue;
        };
        let expected = state.expected(*at_ms, *window_ms);
        let wrong = match (expected, answer) {
            (_, PlantedAnswer::Unknown) => None,
            (Expected::Corrupt, PlantedAnswer::Corrupt { .. }) => match unchanged {
                Some(false) => Some("answered CorruptState but changed the key".to_string()),
                Some(true) => {
                    refused = true;
                    None
                }
                None => None,
            },
            (Expected::Admitted, PlantedAnswer::Decided { admitted: true, .. }) => None,
            (
                Expected::Denied { retry_after_ms: want },
                PlantedAnswer::Decided { admitted: false, retry_after_ms: Some(got) },
            ) if *got > 0 && want.is_none_or(|w| w == *got) => None,
            (expected, got) => Some(format!("expected {expected:?}, got {got:?}")),
        };
        if let Some(why) = wrong {
            out.push(Violation::new(LIMITER_STATE, Some(e.time), format!("{key} planted with {state:?}: {why}")));
        }
    }
    (out, refused)
}
