//! **Broken on purpose:** an election whose writes carry no epoch.
//!
//! The lease mechanics are the real [`Election`]'s (one node at a time holds
//! the lease, renewals are compare-and-extend); what is missing is the one
//! thing that makes leadership usable downstream. The leader learns only a
//! yes/no "am I leader?" — as of its last renew tick, like the reference —
//! and writes to a plain [`UnfencedStore`] with nothing that orders its
//! writes against a successor's.
//!
//! What breaks: a leader that stalls (GC pause, suspended VM) after checking
//! it leads keeps believing it for the whole pause. Its lease expires, a new
//! leader is elected and writes; the old leader resumes and its write lands
//! **after** the new leader's and silently replaces it. Shown by
//! `tests/library/election.rs::naive_election_stale_leader_overwrites_new_leader`.
//! The same schedule against [`Election`] and [`redis_primitives::FencedStore`]
//! (`tests/library/election.rs::case27_split_brain_window_renew_tick_versus_self_fencing`)
//! refuses the stale write, because it carries the old epoch.

use redis_primitives::election::{Demotion, Election, ElectionBuilder};
use redis_primitives::{Connection, Result};

use crate::UnfencedStore;

/// A leader that writes without an epoch. Do not use.
#[derive(Debug, Clone)]
pub struct NaiveElection<C> {
    election: Election<C>,
    store: UnfencedStore<C>,
}

impl<C: Connection> NaiveElection<C> {
    /// Builds a node from the same settings as an [`Election`], forcing
    /// [`Demotion::OnRenewTick`] (a naive leader has no deadline either).
    /// Its writes go to an [`UnfencedStore`] on `conn`: pass the connection
    /// the builder was made with (a clone), so that the leader writes where
    /// it campaigns. The connection is asked for because the library does
    /// not hand out the one inside a builder.
    pub fn new(builder: ElectionBuilder<C>, conn: C) -> Result<NaiveElection<C>> {
        let election = builder.demotion(Demotion::OnRenewTick).build()?;
        Ok(NaiveElection { election, store: UnfencedStore::new(conn) })
    }

    /// The campaign/renew loop (see [`Election::run`]).
    pub async fn run(&self) -> Result<()> {
        self.election.run().await
    }

    /// Spawns the loop (see [`Election::start`]).
    pub fn start(&self) -> tokio::task::JoinHandle<Result<()>> {
        self.election.start()
    }

    /// Hands the lease back and ends the loop (see [`Election::stop`]).
    pub async fn stop(&self) {
        self.election.stop().await
    }

    /// "Am I leader?" as of the last renew tick. No epoch comes with it.
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    /// Writes `value` under `key` if this node believes it leads, with a
    /// plain `SET`. Returns whether it wrote. That is the bug: the belief may
    /// be a pause old, and the store cannot tell.
    pub async fn write(&self, key: &str, value: impl AsRef<[u8]>) -> Result<bool> {
        if !self.is_leader() {
            return Ok(false);
        }
        self.store.write(key, value).await?;
        Ok(true)
    }

    /// The store the leader writes to.
    pub fn store(&self) -> &UnfencedStore<C> {
        &self.store
    }
}
