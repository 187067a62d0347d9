//! The typed results operations carry: what a store said about a write.
//! Plain data, serialised into the history's digest.

use serde::{Deserialize, Serialize};

/// What a fenced (or unfenced) store said about a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteResult {
    /// The store applied the write.
    Accepted,
    /// The store refused it because it had accepted a higher token.
    Rejected {
        /// The highest token the store had accepted.
        highest_seen: u64,
    },
}
