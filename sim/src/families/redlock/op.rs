//! What the Redlock family records in the history: [`RedlockOp`], its
//! operation type (connect, acquire, extend, release across the masters),
//! and [`RedlockRound`], what each round's masters answered and what the
//! client decided with.
//!
//! The variants keep the names, fields and serde attributes they had as
//! the history's own operations, so a Redlock history's JSON (and digest)
//! is what it was.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Millis, Operation};

/// The Redlock family's operations.
// Every variant is `Redlock…`: the names are what the history's JSON (and
// so every digest) has always carried.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum RedlockOp {
    /// A Redlock acquire across several masters.
    RedlockAcquire {
        /// Lock name.
        name: String,
        /// Number of masters.
        masters: u32,
        /// Votes needed.
        quorum: u32,
        /// Votes obtained (on completion).
        votes: Option<u32>,
        /// Validity the client computed (ms), on `Ok`; the lease is trusted
        /// over `[invoke, invoke + validity]` in simulated time.
        validity_ms: Option<u64>,
        /// What each master said and the numbers the client decided on
        /// (on completion; absent in older histories).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<RedlockRound>,
    },
    /// A Redlock release on all masters.
    RedlockRelease {
        /// Lock name.
        name: String,
        /// The op id of the acquire whose lease is released.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<u64>,
        /// Each master's answer to the compare-and-delete (on completion).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<RedlockRound>,
    },
    /// `Redlock::connect`: each master asked for its `run_id`.
    RedlockConnect {
        /// Number of masters.
        masters: u32,
        /// Masters whose `run_id` could not be read (on `Ok`).
        unverified: Option<Vec<u32>>,
    },
    /// `Redlock::extend`: `Ok` = extended (the round carries the new
    /// validity), `Fail` = refused (the lease is lost and released).
    RedlockExtend {
        /// Lock name.
        name: String,
        /// The op id of the acquire whose lease is extended.
        lease: u64,
        /// What each master said, on completion.
        round: Option<RedlockRound>,
    },
}

impl Operation for RedlockOp {
    fn verb(&self) -> &'static str {
        match self {
            RedlockOp::RedlockAcquire { .. } => "redlock-acquire",
            RedlockOp::RedlockRelease { .. } => "redlock-release",
            RedlockOp::RedlockConnect { .. } => "redlock-connect",
            RedlockOp::RedlockExtend { .. } => "redlock-extend",
        }
    }
}

/// A value, or `?` when unknown.
fn opt<T: fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "?".to_string(),
    }
}

/// ` <round>` when there is one.
fn with_round(f: &mut fmt::Formatter<'_>, round: &Option<RedlockRound>) -> fmt::Result {
    match round {
        Some(r) => write!(f, " {r}"),
        None => Ok(()),
    }
}

impl fmt::Display for RedlockOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedlockOp::RedlockAcquire { name, masters, quorum, votes, validity_ms, round } => {
                write!(
                    f,
                    "redlock-acquire {name} votes={}/{masters} (quorum {quorum}) validity={}ms",
                    opt(votes),
                    opt(validity_ms)
                )?;
                with_round(f, round)
            }
            RedlockOp::RedlockRelease { name, lease, round } => {
                write!(f, "redlock-release {name} lease={}", opt(lease))?;
                with_round(f, round)
            }
            RedlockOp::RedlockConnect { masters, unverified } => {
                write!(f, "redlock-connect {masters} masters")?;
                match unverified {
                    Some(u) => write!(f, " unverified={u:?}"),
                    None => Ok(()),
                }
            }
            RedlockOp::RedlockExtend { name, lease, round } => {
                write!(f, "redlock-extend {name} lease={lease}")?;
                with_round(f, round)
            }
        }
    }
}

/// One Redlock round (acquire, extend or release) as the client saw it:
/// each master's answer and the numbers the client decided on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RedlockRound {
    /// One letter per master, in index order: `y` yes, `n` no, `e` error,
    /// `t` timed out (may still happen later). Empty: no round was sent.
    pub answers: String,
    /// T2 − T1 of the round as the client measured it (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Validity the client reported, from T2 (ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<u64>,
    /// T1 the lease is measured from (simulated ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    /// Until when the client trusts the lease (simulated ms), on a grant or
    /// extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Millis>,
    /// Why it was refused (`no-majority`, `too-slow`, `expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The compare-and-delete sent to every master after a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
    /// After a refused extend: whether the lease still said
    /// `is_trusted()` (it must not: the lease is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_after: Option<bool>,
}

impl RedlockRound {
    /// How many masters said yes.
    pub(crate) fn yes(&self) -> usize {
        self.answers.chars().filter(|&c| c == 'y').count()
    }
}

impl fmt::Display for RedlockRound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.answers)?;
        if let Some(e) = self.elapsed_ms {
            write!(f, " elapsed={e}ms")?;
        }
        if let Some(u) = self.valid_until {
            write!(f, " trusted-until={u}ms")?;
        }
        if let Some(r) = &self.refusal {
            write!(f, " refused={r}")?;
        }
        if let Some(c) = &self.cleanup {
            write!(f, " cleanup=[{c}]")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;

    #[test]
    fn serialises_and_reads_as_the_history_variant_did() {
        let round = RedlockRound { answers: "yyn".into(), elapsed_ms: Some(4), ..RedlockRound::default() };
        let op = RedlockOp::RedlockRelease { name: "job".into(), lease: Some(3), round: Some(round) };
        let json = serde_json::to_string(&Op::from(op.clone())).unwrap();
        assert_eq!(json, r#"{"RedlockRelease":{"name":"job","lease":3,"round":{"answers":"yyn","elapsed_ms":4}}}"#);
        assert_eq!(op.to_string(), "redlock-release job lease=3 [yyn] elapsed=4ms");
        let connect = RedlockOp::RedlockConnect { masters: 5, unverified: None };
        assert_eq!(Op::from(connect).verb(), "redlock-connect");
    }
}
