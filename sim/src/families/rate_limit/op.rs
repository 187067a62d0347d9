//! What the rate-limit family records in the history: [`RateLimitOp`], its
//! operation type (one decision of a limiter), with [`Admission`] and
//! [`DecisionAccessors`], the answer it carries.
//!
//! The variant keeps the name, fields and serde attributes it had as the
//! history's own operation, so a limiter history's JSON (and digest) is
//! what it was.

use core::fmt;

use serde::{Deserialize, Serialize};

use super::planted_state::{PlantedAnswer, PlantedState};
use crate::history::{Millis, Operation};

/// The rate-limit family's operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum RateLimitOp {
    /// One rate-limit decision.
    RateLimit {
        /// Limiter key.
        key: String,
        /// Configured limit per window.
        limit: u64,
        /// Configured window length.
        window_ms: u64,
        /// The answer (on `Ok`).
        admission: Option<Admission>,
        /// Server (Redis) time of the decision in simulated ms, when known.
        /// Admissions are counted per window of *server* time.
        server_ms: Option<Millis>,
        /// `Decision::count` (on `Ok`): requests the limiter counted in the
        /// window, the admitted one included.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
        /// `Decision::remaining` (on an admission).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remaining: Option<u64>,
        /// The instant a `check_at` pinned (simulated ms), on the invoke and
        /// the completion; `None` for a `check` on the server's clock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pinned_ms: Option<Millis>,
        /// What the `Decision`'s own accessors said (on `Ok`), judged
        /// against the variant recorded above.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accessors: Option<DecisionAccessors>,
    },
    /// A state planted at a limiter key of its own, and what one `check_at`
    /// answered (`super::planted`).
    Planted {
        /// The limiter key planted.
        key: String,
        /// What was planted there.
        state: PlantedState,
        /// The instant the call was pinned at, unix ms.
        at_ms: u64,
        /// The limiter's window.
        window_ms: u64,
        /// What the call answered.
        answer: PlantedAnswer,
        /// Whether the key's bytes and expiry were the same after the call
        /// as before it; `None` when a fault kept either read from
        /// answering.
        unchanged: Option<bool>,
    },
}

impl Operation for RateLimitOp {
    fn verb(&self) -> &'static str {
        match self {
            RateLimitOp::RateLimit { .. } => "rate-limit",
            RateLimitOp::Planted { .. } => "rate-limit-planted",
        }
    }
}

impl fmt::Display for RateLimitOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms) = match self {
            RateLimitOp::RateLimit {
                key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms, ..
            } => (key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms),
            RateLimitOp::Planted { key, state, at_ms, answer, unchanged, .. } => {
                return write!(
                    f,
                    "rate-limit-planted {key} {state:?} at={at_ms} -> {answer:?} unchanged={unchanged:?}"
                );
            }
        };
        write!(f, "rate-limit {key} ({limit}/{window_ms}ms)")?;
        if let Some(p) = pinned_ms {
            write!(f, " at={p}ms")?;
        }
        match admission {
            Some(Admission::Admitted) => write!(f, " -> admitted")?,
            Some(Admission::Denied { retry_after_ms: Some(r) }) => write!(f, " -> denied, retry after {r}ms")?,
            Some(Admission::Denied { retry_after_ms: None }) => write!(f, " -> denied")?,
            None => {}
        }
        if let Some(c) = count {
            write!(f, " count={c}")?;
        }
        if let Some(r) = remaining {
            write!(f, " remaining={r}")?;
        }
        if let Some(s) = server_ms {
            write!(f, " server-time={s}ms")?;
        }
        Ok(())
    }
}

/// A rate limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Admission {
    /// The request was admitted.
    Admitted,
    /// The request was refused; the limiter suggested waiting this long.
    Denied {
        /// Suggested wait in milliseconds, if the limiter gave one.
        retry_after_ms: Option<u64>,
    },
}

/// A rate-limit `Decision` as its accessors report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DecisionAccessors {
    /// `is_allowed()`.
    pub is_allowed: bool,
    /// `is_denied()`.
    pub is_denied: bool,
    /// `remaining()`.
    pub remaining: u64,
    /// `retry_after()`, in ms.
    pub retry_after_ms: Option<u64>,
    /// `count()`.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;

    #[test]
    fn serialises_and_reads_as_the_history_variant_did() {
        let op = RateLimitOp::RateLimit {
            key: "api".into(),
            limit: 5,
            window_ms: 1000,
            admission: Some(Admission::Denied { retry_after_ms: Some(40) }),
            server_ms: Some(960),
            count: Some(5),
            remaining: None,
            pinned_ms: None,
            accessors: None,
        };
        let json = serde_json::to_string(&Op::from(op.clone())).unwrap();
        assert_eq!(
            json,
            r#"{"RateLimit":{"key":"api","limit":5,"window_ms":1000,"admission":{"Denied":{"retry_after_ms":40}},"server_ms":960,"count":5}}"#
        );
        assert_eq!(op.to_string(), "rate-limit api (5/1000ms) -> denied, retry after 40ms count=5 server-time=960ms");
        assert_eq!(Op::from(op).verb(), "rate-limit");
    }
}
