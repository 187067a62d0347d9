//! # redis-primitives-naive
//!
//! The broken versions everyone writes first, kept on purpose.
//!
//! Each type here works on a quiet day and fails on the day that matters.
//! They exist so the library's tests and the simulation harness can show
//! the failure each correct primitive of `redis-primitives` prevents. Do
//! not use them.
//!
//! They are a crate of their own, never published, so that deliberately
//! broken code never ships in the production library (ADR 0021,
//! `docs/decisions/0021-naive-is-its-own-crate.md`). They are built on the
//! library's public API, plus a few private helpers of their own
//! (`support`) and one hidden seam for the naive Redlock, whose round is
//! the library's own.

#![deny(missing_docs)]

mod client_side_window;
mod election;
mod fixed_window;
mod job_queue;
mod lock;
mod redlock;
mod support;
mod unfenced_store;
mod watch_multi;

pub use client_side_window::ClientSideWindow;
pub use election::NaiveElection;
pub use fixed_window::NaiveFixedWindow;
pub use job_queue::NaiveJobQueue;
pub use lock::NaiveLock;
pub use redlock::{NaiveRedlock, NaiveRedlockLease};
pub use unfenced_store::UnfencedStore;
pub use watch_multi::{WatchMultiLimiter, WatchMultiOutcome};
