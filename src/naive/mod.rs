//! The broken versions everyone writes first, kept on purpose.
//!
//! Each type here works on a quiet day and fails on the day that matters.
//! They exist so the tests and the simulation harness can show the failure
//! each correct primitive prevents. Do not use them.

mod lock;
mod unfenced_store;

pub use lock::NaiveLock;
pub use unfenced_store::UnfencedStore;
