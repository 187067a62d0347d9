//! **Not part of the API.** The one thing the broken-on-purpose crate
//! `redis-primitives-naive` cannot build from the library's public API:
//! a Redlock acquire round with no gate after it.
//!
//! The naive crate holds the broken versions of the primitives, out of
//! this crate so that they never ship in it (ADR 0021). Everything else it
//! needs is public or a few lines it keeps to itself; but its
//! `NaiveRedlock` is, on purpose, the very same round as [`Redlock`]'s
//! (the same masters, `SET NX PX` on all of them at once, each under its
//! per-master timeout, the owner drawn from the configured source) minus
//! the elapsed-time gate, and its release answers a [`Released`], which has
//! no public constructor. Re-implementing the round there would test a copy
//! instead of the code that ships. So this module lends it exactly that:
//! one undecided round, and the release everywhere.
//!
//! Hidden from the docs, semver-exempt, and for that crate only: nothing
//! here is a promise. An application that wants a Redlock uses
//! [`Redlock::acquire`], which decides.

use core::time::Duration;

use tokio::time::Instant;

use crate::connection::Connection;
use crate::owner::Owner;
use crate::redlock::{MasterVote, Redlock, Released, OWNER_BYTES};

/// One acquire round of a [`Redlock`] before anything was decided: what
/// [`Redlock::acquire`] looks at before its majority and validity checks.
#[derive(Debug, Clone)]
pub struct UngatedRound {
    /// The ownership value this round wrote, drawn from the Redlock's
    /// configured source.
    pub owner: Owner,
    /// T1: read before anything was sent (and before the owner was drawn).
    pub started: Instant,
    /// T2: read after the last master answered or timed out.
    pub finished: Instant,
    /// Each master's answer.
    pub votes: Vec<MasterVote>,
}

impl UngatedRound {
    /// How many masters said yes.
    pub fn yes(&self) -> usize {
        self.votes.iter().filter(|v| v.vote.is_yes()).count()
    }

    /// T2 − T1.
    pub fn elapsed(&self) -> Duration {
        self.finished.saturating_duration_since(self.started)
    }
}

/// Steps 1–4 of [`Redlock::acquire`] for `key` (see the `redlock` module
/// docs): read T1, draw an owner, `SET key owner NX PX ttl` on every master
/// at once, read T2. Nothing is decided and nothing is released.
pub async fn redlock_set_round<C: Connection>(redlock: &Redlock<C>, key: &str) -> UngatedRound {
    let started = Instant::now();
    let owner = redlock.owners().next_owner(OWNER_BYTES);
    let round = redlock.set_round(started, key, &owner).await;
    UngatedRound { owner, started: round.started, finished: round.finished, votes: round.votes }
}

/// [`Redlock::release`]'s compare-and-delete of `key` on every master,
/// for an `owner` that no [`crate::redlock::RedlockLease`] carries.
pub async fn redlock_release<C: Connection>(redlock: &Redlock<C>, key: &str, owner: &Owner) -> Released {
    Released::from_votes(redlock.release_key(key, owner).await)
}
