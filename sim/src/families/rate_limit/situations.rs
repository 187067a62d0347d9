//! What the rate-limit scenarios exist to reach: the declared situations
//! (Antithesis "sometimes" assertions) and their recognition in a finished
//! history. Kept apart from the checks: a situation says a run got
//! somewhere worth checking, not that anything went wrong.

use super::actors::SCRIPT_FLUSHED;
use super::limiter::Setup;
use super::op::{Admission, RateLimitOp};
use crate::history::{Event, EventKind, Millis, Op};
use crate::outcome::{Situation, SituationName};

/// The situations the correct limiters exist to reach (the last one only
/// the counter, whose approximation overshoots).
const ALL: &[Situation] = &[
    Situation { name: SituationName::new("limit-reached-exactly"), meaning: "an admission reported count = max (remaining 0)" },
    Situation {
        name: SituationName::new("same-ms-admissions"),
        meaning: "two admissions on one key in the same server millisecond (ties ordered by count)",
    },
    Situation {
        name: SituationName::new("decided-on-window-last-ms"),
        meaning: "a decision at exactly a + W - 1 of an earlier admission a (a's last millisecond in the window)",
    },
    Situation {
        name: SituationName::new("decided-at-window-edge"),
        meaning: "a decision at exactly a + W of an earlier admission a (the first instant a no longer counts)",
    },
    Situation {
        name: SituationName::new("decided-past-window-edge"),
        meaning: "a decision at exactly a + W + 1 of an earlier admission a",
    },
    Situation {
        name: SituationName::new("denied-at-retry-after-minus-1"),
        meaning: "denied at t with retry-after r, then a request at exactly t + r - 1 was denied",
    },
    Situation {
        name: SituationName::new("denied-then-admitted-at-retry-after"),
        meaning: "denied at t with retry-after r, then a request at exactly t + r was admitted",
    },
    Situation {
        name: SituationName::new("burst-straddles-boundary"),
        meaning: "decisions within 150 ms before and after a bucket boundary on one key, with a denial after it",
    },
    Situation {
        name: SituationName::new("request-outcome-unknown"),
        meaning: "a rate-limit request timed out or failed (outcome unknown to the checkers)",
    },
    Situation {
        name: SituationName::new("noscript-recovered"),
        meaning: "a decision succeeded after SCRIPT FLUSH dropped the limiter's script (NOSCRIPT recovered)",
    },
    Situation {
        name: SituationName::new("mass-expiry"),
        meaning: "a burst larger than the log's trim batch (64) was admitted in one millisecond and, one window later, a second burst on that key was decided",
    },
    Situation {
        name: SituationName::new("server-clock-read-at-a-seconds-last-ms"),
        meaning: "a decision on the server's own clock executed at the last millisecond of a second (TIME's microseconds at 999xxx: where a wrong unit conversion shows)",
    },
    Situation {
        name: SituationName::new("trim-batch-edge"),
        meaning: "more entries than one call trims (64) left the window at once, and an instant one millisecond behind then counted the untrimmed rest (replayed exactly)",
    },
    Situation {
        name: SituationName::new("skewed-clocks-went-backwards"),
        meaning: "check_at instants from two application clocks that disagree went backwards on one key, and every decision was replayed exactly",
    },
    Situation {
        name: SituationName::new("pinned-ahead-skipped-a-bucket"),
        meaning: "check_at instants ahead of the server's clock skipped a whole window while the key's state was still alive",
    },
    Situation {
        name: SituationName::new("limit-lowered-for-a-key-in-use"),
        meaning: "a limiter with a lower limit denied a key a limiter with a higher one had filled (more entries in the window than its limit), and its retry-after was judged exactly",
    },
    Situation {
        name: SituationName::new("retry-after-honoured-after-healing"),
        meaning: "after the last fault healed, a denied client retried at exactly its retry-after and was admitted",
    },
    Situation {
        name: SituationName::new("planted-state-refused"),
        meaning: "a limiter key planted with a value the script never writes was refused with CorruptState naming it, and left as it was",
    },
    Situation {
        name: SituationName::new("counter-overshoot-above-max"),
        meaning: "some window (t - W, t] held more than max admissions (the counter's documented approximation)",
    },
];

/// Situations of `rate-limit` (`SlidingWindowLog`): all but the counter's
/// overshoot.
pub(crate) const LOG_SITUATIONS: &[Situation] = ALL.split_at(ALL.len() - 1).0;

/// Situations of `rate-limit-counter` (`SlidingWindowCounter`).
pub(crate) const COUNTER_SITUATIONS: &[Situation] = ALL;

/// One decision as `reached` sees it: (invoke time, server time, admitted,
/// count, retry after).
type DecisionSeen = (Millis, Millis, bool, u64, Option<u64>);

/// The declared situations `history` reached (see [`LOG_SITUATIONS`] and
/// [`COUNTER_SITUATIONS`]), recognised from the finished history.
pub(super) fn reached(history: &[Event], setup: Setup, settle: Millis) -> Vec<SituationName> {
    let w = setup.window_ms;
    let mut out = Vec::new();
    // Per key: (invoke time, server time, admitted, count, retry) of every
    // decision.
    let mut by_key: std::collections::BTreeMap<&str, Vec<DecisionSeen>> = std::collections::BTreeMap::new();
    let mut invoked = std::collections::BTreeMap::new();
    let mut flushed: Option<Millis> = None;
    let mut unknown = false;
    for e in history {
        match (&e.op, e.op.family()) {
            (Op::Note { text }, _) if text == SCRIPT_FLUSHED => flushed = flushed.or(Some(e.time)),
            (_, Some(RateLimitOp::RateLimit { key, admission, server_ms, count, .. })) => {
                match (e.kind, admission, server_ms, count) {
                    (EventKind::Invoke, ..) => {
                        invoked.insert(e.op_id, e.time);
                    }
                    (EventKind::Ok, Some(a), Some(t), Some(c)) => {
                        let retry = match a {
                            Admission::Denied { retry_after_ms } => *retry_after_ms,
                            Admission::Admitted => None,
                        };
                        let inv = invoked.get(&e.op_id).copied().unwrap_or(e.time);
                        by_key.entry(key.as_str()).or_default().push((inv, *t, *a == Admission::Admitted, *c, retry));
                        if flushed.is_some_and(|f| inv > f) {
                            out.push(SituationName::new("noscript-recovered"));
                        }
                    }
                    _ => unknown = true,
                }
            }
            _ => {}
        }
    }
    if unknown {
        out.push(SituationName::new("request-outcome-unknown"));
    }
    for ds in by_key.values() {
        let admissions: Vec<(Millis, u64)> = ds.iter().filter(|d| d.2).map(|d| (d.1, d.3)).collect();
        // Counter overshoot: more than max definite admissions in one window.
        let mut ts: Vec<Millis> = admissions.iter().map(|a| a.0).collect();
        ts.sort_unstable();
        let mut lo = 0;
        for hi in 0..ts.len() {
            while ts[hi] - ts[lo] >= w {
                lo += 1;
            }
            if (hi - lo + 1) as u64 > setup.max {
                out.push(SituationName::new("counter-overshoot-above-max"));
            }
        }
        if admissions.iter().any(|a| a.1 == setup.max) {
            out.push(SituationName::new("limit-reached-exactly"));
        }
        if ts.windows(2).any(|p| p[0] == p[1]) {
            out.push(SituationName::new("same-ms-admissions"));
        }
        for &(_, t, ..) in ds {
            for &(a, _) in &admissions {
                if t == a + w - 1 {
                    out.push(SituationName::new("decided-on-window-last-ms"));
                } else if t == a + w {
                    out.push(SituationName::new("decided-at-window-edge"));
                } else if t == a + w + 1 {
                    out.push(SituationName::new("decided-past-window-edge"));
                }
            }
        }
        for &(_, t, admitted, _, retry) in ds {
            let (false, Some(r)) = (admitted, retry) else { continue };
            for &(inv, u, ok, ..) in ds {
                if u == t + r && ok {
                    out.push(SituationName::new("denied-then-admitted-at-retry-after"));
                    if inv >= settle {
                        out.push(SituationName::new("retry-after-honoured-after-healing"));
                    }
                } else if r > 1 && u == t + r - 1 && !ok {
                    out.push(SituationName::new("denied-at-retry-after-minus-1"));
                }
            }
        }
        // Bucket boundaries of unix time, in simulated ms.
        for &(_, t, admitted, ..) in ds {
            let abs = (setup.epoch_ms + t) / w * w;
            if abs <= setup.epoch_ms {
                continue;
            }
            let b = abs - setup.epoch_ms;
            if admitted || t - b > 150 {
                continue;
            }
            if ds.iter().any(|d| d.1 < b && d.1 + 150 >= b) {
                out.push(SituationName::new("burst-straddles-boundary"));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
