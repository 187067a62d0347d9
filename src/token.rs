//! `FencingToken`: the number that makes a lease mean something downstream.
//!
//! A token is issued by `INCR` on a per-name counter that never expires, so
//! every acquire of a name gets a strictly larger token than every earlier one
//! (as long as the counter is not lost: see the crate's non-guarantees). A
//! resource that remembers the highest token it accepted can refuse writes
//! from a holder whose lease has silently expired: see [`crate::FencedStore`].

use core::fmt;

/// A strictly increasing per-name number issued with each lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(u64);

impl FencingToken {
    /// Wraps a raw token (for tests, the harness, and tokens that travelled
    /// through another system). Tokens made up by hand protect nothing.
    pub const fn new(raw: u64) -> FencingToken {
        FencingToken(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<FencingToken> for u64 {
    fn from(t: FencingToken) -> u64 {
        t.0
    }
}
