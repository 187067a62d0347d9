//! What the masters said: per-master votes and the verdicts built from them.
//!
//! Redlock's decisions are counts over independent answers, and the harness
//! needs to see each answer, not only the verdict: which master said yes,
//! which said no, which failed, which never answered in time. So every round
//! of requests yields one [`MasterVote`] per master, and every verdict
//! ([`Acquisition`], [`Extension`], [`Released`]) carries them.
//!
//! A refused acquire is a value ([`Refusal`]), not an error: it says why
//! (no majority, or no validity left after the elapsed-time gate), with the
//! vote count, the elapsed time and the cleanup that followed.

use std::sync::Arc;

use core::time::Duration;
use tokio::time::Instant;

use super::lease::RedlockLease;
use crate::error::Error;
use crate::ttl::Ttl;

/// How one master answered one request.
#[derive(Debug, Clone)]
pub enum Vote {
    /// It answered yes: the key was set (acquire), re-armed (extend) or
    /// deleted (release).
    Yes,
    /// It answered no: another owner's key is there (acquire), or our key is
    /// not (extend, release).
    No,
    /// It answered with an error, or its connection failed. Shared so that
    /// votes can be cloned.
    Error(Arc<Error>),
    /// No answer within the per-master timeout (ours, or the connection's
    /// own response timeout). The request may still run on that master
    /// later: a timed-out acquire may have set the key.
    TimedOut,
}

impl Vote {
    /// Whether this is a yes.
    pub fn is_yes(&self) -> bool {
        matches!(self, Vote::Yes)
    }
}

/// One master's answer in one round.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MasterVote {
    /// The master's index in the list given to [`super::Redlock::connect`].
    pub master: usize,
    /// What it answered.
    pub vote: Vote,
    /// From the start of the round (T1) to this answer, or to the timeout.
    pub latency: Duration,
}

/// One request sent to every master at once.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    /// T1: read before anything was sent.
    pub(crate) started: Instant,
    /// T2: read after the last master answered or timed out.
    pub(crate) finished: Instant,
    pub(crate) votes: Vec<MasterVote>,
}

impl Round {
    pub(crate) fn yes(&self) -> usize {
        self.votes.iter().filter(|v| v.vote.is_yes()).count()
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.finished.saturating_duration_since(self.started)
    }
}

/// Why an acquire or an extend did not give a usable lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// Fewer than N/2+1 masters said yes.
    NoMajority,
    /// A majority said yes, but the round took so long that no validity is
    /// left: elapsed + drift ≥ TTL. This is the elapsed-time gate; without
    /// it a client would trust keys that have already expired (or are about
    /// to) on the masters.
    TooSlow,
    /// (Extend only.) The lease's validity had already run out when the
    /// extend started, so it was not extended. Its keys were released.
    Expired,
}

/// A refused acquire or extend: why, and what the masters said.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Refusal {
    /// Why.
    pub reason: RefusalReason,
    /// How many masters said yes.
    pub votes: usize,
    /// How many yes votes were needed (N/2+1).
    pub quorum: usize,
    /// T2 − T1 of the round (zero for [`RefusalReason::Expired`]).
    pub elapsed: Duration,
    /// The lease TTL asked for.
    pub ttl: Ttl,
    /// The drift allowance for that TTL.
    pub drift: Duration,
    /// Each master's answer (empty for [`RefusalReason::Expired`]).
    pub masters: Vec<MasterVote>,
    /// The compare-and-delete sent to **every** master afterwards, including
    /// the ones that said no, failed or timed out (their request may still
    /// have landed). A `Yes` here means a key of ours was found and deleted.
    pub cleanup: Vec<MasterVote>,
}

impl Refusal {
    /// TTL − elapsed − drift, when positive.
    pub fn validity_left(&self) -> Option<Duration> {
        remaining_validity(self.ttl, self.elapsed, self.drift)
    }
}

/// TTL − elapsed − drift, or `None` when nothing is left.
pub(crate) fn remaining_validity(ttl: Ttl, elapsed: Duration, drift: Duration) -> Option<Duration> {
    ttl.as_duration().checked_sub(elapsed).and_then(|d| d.checked_sub(drift)).filter(|d| !d.is_zero())
}

/// What [`super::Redlock::acquire`] got.
#[derive(Debug, Clone)]
pub enum Acquisition {
    /// A majority said yes in time: the lock is held until the lease's
    /// `valid_until`.
    Held(RedlockLease),
    /// Not held; every master was asked to drop our key.
    Refused(Refusal),
}

impl Acquisition {
    /// The lease, if held.
    pub fn into_lease(self) -> Option<RedlockLease> {
        match self {
            Acquisition::Held(lease) => Some(lease),
            Acquisition::Refused(_) => None,
        }
    }

    /// The refusal, if refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Acquisition::Held(_) => None,
            Acquisition::Refused(refusal) => Some(refusal),
        }
    }

    /// Whether the lock is held.
    pub fn is_held(&self) -> bool {
        matches!(self, Acquisition::Held(_))
    }
}

/// What [`super::Redlock::extend`] did.
#[derive(Debug, Clone)]
pub enum Extension {
    /// A majority re-armed our keys in time. The lease now runs
    /// `validity` from the end of the extend round.
    Extended {
        /// TTL − elapsed − drift of the extend round.
        validity: Duration,
    },
    /// Not extended. The lease is lost: its keys were released on every
    /// master and it is no longer trusted.
    Refused(Refusal),
}

impl Extension {
    /// Whether the lease was extended.
    pub fn is_extended(&self) -> bool {
        matches!(self, Extension::Extended { .. })
    }
}

/// What [`super::Redlock::release`] did on each master.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Released {
    /// How many masters deleted a key of ours.
    pub deleted: usize,
    /// Each master's answer: `Yes` deleted our key, `No` found none of ours
    /// (expired, or another owner's, which was left alone).
    pub masters: Vec<MasterVote>,
}

impl Released {
    pub(crate) fn from_votes(masters: Vec<MasterVote>) -> Released {
        Released { deleted: masters.iter().filter(|v| v.vote.is_yes()).count(), masters }
    }
}
