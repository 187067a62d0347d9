//! The broken versions everyone writes first, kept on purpose.
//!
//! Each type here works on a quiet day and fails on the day that matters.
//! They exist so the tests and the simulation harness can show the failure
//! each correct primitive prevents. Do not use them.

mod client_side_window;
mod election;
mod fixed_window;
mod job_queue;
mod lock;
mod redlock;
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
