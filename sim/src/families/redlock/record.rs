//! How a Redlock call is recorded in the history: the acquire operation
//! and the round (each master's answer as one letter, elapsed time,
//! validity, refusal, cleanup) that the family's checks read back.

use redis_primitives::redlock::{MasterVote, RedlockLease, Refusal, RefusalReason, Vote};

use super::op::{RedlockOp, RedlockRound};
use super::{MASTERS, NAME};
use crate::world::Actor;

pub(super) fn acquire_op(votes: Option<u32>, validity_ms: Option<u64>, round: Option<RedlockRound>) -> RedlockOp {
    RedlockOp::RedlockAcquire {
        name: NAME.into(),
        masters: MASTERS as u32,
        quorum: (MASTERS / 2 + 1) as u32,
        votes,
        validity_ms,
        round,
    }
}

fn letter(v: &MasterVote) -> char {
    match &v.vote {
        Vote::Yes => 'y',
        Vote::No => 'n',
        // A timeout the connection noticed, reported as an error instead
        // of `TimedOut` (`redlock-rounds` convicts it).
        Vote::Error(e) if matches!(**e, redis_primitives::Error::OutcomeUnknown { .. }) => 'u',
        Vote::Error(_) => 'e',
        Vote::TimedOut => 't',
    }
}

/// One letter per master in index order: `y`, `n`, `e`, `t` (`u`: an error
/// that says the request timed out). When the
/// library did not report exactly one answer per master, the answers are
/// listed as reported, so the length shows the gap (`redlock-rounds`).
pub(super) fn answers(votes: &[MasterVote]) -> String {
    let mut sorted: Vec<&MasterVote> = votes.iter().collect();
    sorted.sort_by_key(|v| v.master);
    let complete = sorted.len() == MASTERS && sorted.iter().enumerate().all(|(i, v)| v.master == i);
    if complete {
        sorted.into_iter().map(letter).collect()
    } else {
        votes.iter().map(letter).collect()
    }
}

pub(super) fn lease_round(actor: &Actor, lease: &RedlockLease) -> RedlockRound {
    RedlockRound {
        answers: answers(lease.masters()),
        elapsed_ms: Some(actor.millis_of(lease.acquired_at()).saturating_sub(actor.millis_of(lease.started_at()))),
        validity_ms: Some(lease.validity().as_millis() as u64),
        started_at: Some(actor.millis_of(lease.started_at())),
        valid_until: Some(actor.millis_of(lease.valid_until())),
        refusal: None,
        cleanup: None,
        trusted_after: None,
    }
}

pub(super) fn refusal_round(r: &Refusal) -> RedlockRound {
    let reason = match r.reason {
        RefusalReason::NoMajority => "no-majority",
        RefusalReason::TooSlow => "too-slow",
        RefusalReason::Expired => "expired",
    };
    RedlockRound {
        answers: if r.masters.is_empty() { String::new() } else { answers(&r.masters) },
        elapsed_ms: Some(r.elapsed.as_millis() as u64),
        refusal: Some(reason.into()),
        cleanup: Some(answers(&r.cleanup)),
        ..RedlockRound::default()
    }
}
