//! **Broken on purpose:** Redlock without the elapsed-time / validity gate.
//!
//! It asks the same masters the same way as [`Redlock`]
//! (the very same code: `SET NX PX` on every master at once, each under its
//! own timeout, release everywhere when short of a majority), and then
//! decides on the vote count alone. It never asks how long the round took,
//! and it dates its lease from when the votes came back: "held for the TTL,
//! starting now". This is the bug the Redlock issue reports as having
//! shipped in a popular Node implementation.
//!
//! What breaks: when the round is slow (a slow link, a client paused between
//! sending and reading), the keys started expiring on the masters while the
//! replies were still on their way. The naive client accepts five yes votes
//! for keys that are already gone, or nearly, believes it holds the lock
//! for a full TTL more, and a second client meanwhile takes a majority.
//! Shown by `tests/library/redlock.rs::naive_redlock_without_the_gate_accepts_what_redlock_refuses`.
//!
//! The round and the release are borrowed from the library through its
//! hidden `naive_seam` (ADR 0021): the same code as [`Redlock::acquire`]'s,
//! which no public call runs without deciding, and a [`Released`], which
//! has no public constructor.

use core::time::Duration;
use tokio::time::Instant;

use redis_primitives::naive_seam::{redlock_release, redlock_set_round};
use redis_primitives::redlock::{MasterVote, Redlock, RedlockConfig, Released};
use redis_primitives::{Connection, Owner, Result};

/// Redlock that counts votes and never looks at the clock. Do not use.
#[derive(Debug, Clone)]
pub struct NaiveRedlock<C> {
    inner: Redlock<C>,
}

/// What [`NaiveRedlock::acquire`] believes it holds.
#[derive(Debug, Clone)]
pub struct NaiveRedlockLease {
    key: String,
    owner: Owner,
    votes: usize,
    elapsed: Duration,
    masters: Vec<MasterVote>,
    valid_until: Instant,
}

impl NaiveRedlockLease {
    /// The key, the same on every master.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The ownership value.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// How many masters said yes.
    pub fn votes(&self) -> usize {
        self.votes
    }

    /// T2 − T1 of the round: measured, then ignored. That is the bug.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Each master's answer.
    pub fn masters(&self) -> &[MasterVote] {
        &self.masters
    }

    /// T2 + TTL: what the naive client believes (wrongly) to be its expiry.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// Whether the naive client still believes it holds the lock.
    pub fn is_trusted(&self) -> bool {
        Instant::now() < self.valid_until
    }
}

impl<C: Connection> NaiveRedlock<C> {
    /// Same validation and duplicate check as [`Redlock::connect`].
    pub async fn connect(masters: Vec<C>, config: RedlockConfig) -> Result<NaiveRedlock<C>> {
        Ok(NaiveRedlock { inner: Redlock::connect(masters, config).await? })
    }

    /// One attempt: held whenever a majority said yes, however long it took.
    pub async fn acquire(&self, name: &str) -> Result<Option<NaiveRedlockLease>> {
        let key = self.inner.key(name)?;
        let round = redlock_set_round(&self.inner, &key).await;
        let votes = round.yes();
        if votes >= self.inner.quorum() {
            // The bug: no `elapsed < TTL` check, and the TTL counted from T2.
            return Ok(Some(NaiveRedlockLease {
                valid_until: round.finished + self.inner.ttl().as_duration(),
                elapsed: round.elapsed(),
                key,
                owner: round.owner,
                votes,
                masters: round.votes,
            }));
        }
        redlock_release(&self.inner, &key, &round.owner).await;
        Ok(None)
    }

    /// Compare-and-delete on every master (the naive part is the acquire only).
    pub async fn release(&self, lease: &NaiveRedlockLease) -> Released {
        redlock_release(&self.inner, &lease.key, &lease.owner).await
    }
}
