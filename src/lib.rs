//! # redis-primitives
//!
//! Redis coordination primitives that say what they do when things go wrong.
//!
//! - [`Lock`]: a single-instance lease with a **fencing token**; acquire,
//!   compare-and-delete release, compare-and-extend, `with_lock`, and a
//!   guarded variant that drops its body when the lease can't be trusted.
//! - [`FencedStore`]: the resource half of fencing; refuses stale tokens.
//! - [`JobQueue`]: a job queue whose claims are leases fenced by a per-job
//!   attempt number; lapsed claims are reaped back into the queue and a
//!   stale worker's completion is refused.
//! - [`rate_limit`]: an exact sliding-window log and an O(1) sliding-window counter.
//! - [`election`]: leader election whose epoch is a fencing token.
//! - [`redlock`]: a lock across N independent masters.
//!
//! The broken versions everyone writes first (a lock released with a bare
//! `DEL`, a store that ignores tokens, a fixed-window counter, Redlock
//! without its validity gate, …) are not in this crate: they live in the
//! workspace crate `redis-primitives-naive` (`naive/`, never published), so
//! that the tests and the simulation harness can show what breaks without
//! deliberately broken code shipping here (ADR 0021).
//!
//! Every primitive takes its connection from the caller (anything that
//! implements [`Connection`]) and never opens a socket or spawns a task.
//! Time comes from `tokio::time`, which the simulation virtualises.
//!
//! ## Layout
//!
//! | file | concept |
//! |---|---|
//! | `error.rs` | the one [`Error`] enum |
//! | `ttl.rs`, `token.rs`, `drift.rs`, `owner.rs`, `keys.rs` | value types: [`Ttl`], [`FencingToken`], [`Drift`], [`Owner`], key prefixes |
//! | `connection.rs` | the [`Connection`] bound |
//! | `lock.rs`, `lease.rs`, `guard.rs`, `release.rs` | [`Lock`] and how it issues [`Tokens`], [`Lease`], the lease-loss signal, the fate of a release ([`Release`]) |
//! | `acknowledgement.rs` | [`Acknowledgement`]: how many replicas must confirm an acquire or a fenced write (`WAIT`) |
//! | `native.rs` | [`CompareCommands`]: native compare-and-delete / compare-and-set where the server has them, scripts where not |
//! | `instant.rs` | deadline arithmetic that cannot panic |
//! | `retry.rs` | [`Retry`], the opt-in retry policy |
//! | `fenced_store.rs` | [`FencedStore`] |
//! | `job_queue/` | [`JobQueue`] (`mod.rs`), its [`Claim`]s (`claim.rs`), its five Lua scripts on one page (`scripts.rs`: one state machine), its tests |
//! | `rate_limit/` | [`rate_limit::SlidingWindowLog`], [`rate_limit::SlidingWindowCounter`], their [`rate_limit::Limit`] and [`rate_limit::Decision`] |
//! | `election/` | [`election::Election`]: configuration, shared state, the run loop |
//! | `redlock/` | [`redlock::Redlock`]: configuration, votes, the lease, a polling join |
//! | `naive_seam.rs` | hidden, not part of the API: the one Redlock round the broken-on-purpose `redis-primitives-naive` crate borrows (ADR 0021) |
//! | `scripts/*.lua`, `script_source.rs` | one Lua script per file; where its text comes from and how it runs (`EVALSHA`, `EVAL` on `NOSCRIPT`; the harness's mutation seam, behind a feature users never enable) |
#![deny(missing_docs)]

mod acknowledgement;
mod connection;
mod drift;
pub mod election;
mod error;
mod fenced_store;
mod guard;
mod instant;
mod job_queue;
mod keys;
mod lease;
mod lock;
#[doc(hidden)]
pub mod naive_seam;
mod native;
mod owner;
pub mod rate_limit;
pub mod redlock;
mod release;
mod retry;
mod script_source;
mod token;
mod ttl;

pub use acknowledgement::Acknowledgement;
pub use connection::Connection;
pub use drift::Drift;
pub use error::{Error, Result};
pub use fenced_store::{FencedStore, Stored, WriteOutcome};
pub use guard::{GuardedOutcome, KeepAlive, LeaseLoss};
pub use job_queue::{Claim, Completion, Enqueued, JobQueue, JobState};
pub use keys::validate_name;
pub use lease::Lease;
pub use lock::{Lock, LockBuilder, LockOutcome, Tokens};
pub use native::CompareCommands;
pub use owner::{Owner, OwnerSource};
pub use release::Release;
pub use retry::Retry;
pub use token::FencingToken;
pub use ttl::Ttl;

/// The README's examples, compiled as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The long-form guide (`docs/guide/*.md`), one module per page, so that
/// rustdoc shows the pages and their examples compile as doctests.
pub mod guide {
    #[doc = include_str!("../docs/guide/lock.md")]
    pub mod lock {}
    #[doc = include_str!("../docs/guide/rate-limiting.md")]
    pub mod rate_limiting {}
    #[doc = include_str!("../docs/guide/election.md")]
    pub mod election {}
    #[doc = include_str!("../docs/guide/redlock.md")]
    pub mod redlock {}
    #[doc = include_str!("../docs/guide/non-guarantees.md")]
    pub mod non_guarantees {}
    #[doc = include_str!("../docs/guide/replication.md")]
    pub mod replication {}
    #[doc = include_str!("../docs/guide/cluster.md")]
    pub mod cluster {}
    #[doc = include_str!("../docs/guide/performance.md")]
    pub mod performance {}
    #[doc = include_str!("../docs/guide/harness.md")]
    pub mod harness {}
    #[doc = include_str!("../docs/guide/simulation.md")]
    pub mod simulation {}
    #[doc = include_str!("../docs/guide/invariants.md")]
    pub mod invariants {}
    #[doc = include_str!("../docs/guide/property-tests.md")]
    pub mod property_tests {}
    #[doc = include_str!("../docs/guide/testing.md")]
    pub mod testing {}
    #[doc = include_str!("../docs/guide/layout.md")]
    pub mod layout {}
    #[doc = include_str!("../docs/guide/decisions.md")]
    pub mod decisions {}
}

/// Every Lua script the library runs, `(name, text)`: what `rp-sim mutants`
/// mutates. Listing them changes nothing; replacing one at run time needs
/// the `mutation-hooks` feature ([`mutation_hooks_enabled`]). Not part of
/// the API.
#[doc(hidden)]
pub fn mutation_scripts() -> impl Iterator<Item = (&'static str, &'static str)> {
    script_source::ALL.iter().map(|b| (b.name, b.text))
}

/// Whether this build lets `RP_MUTANT_SCRIPT` replace a script (the
/// `mutation-hooks` feature, which only the builds that measure mutants
/// turn on). Without it every mutant would run as the original and
/// "survive", so the harness refuses to measure. Not part of the API.
#[doc(hidden)]
pub const fn mutation_hooks_enabled() -> bool {
    cfg!(feature = "mutation-hooks")
}
