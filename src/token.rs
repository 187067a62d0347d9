//! `FencingToken`: the number that makes a lease mean something downstream.
//!
//! A token is issued by `INCR` on a per-name counter that never expires, so
//! every acquire of a name gets a strictly larger token than every earlier one
//! (as long as the counter is not lost: see the crate's non-guarantees). A
//! resource that remembers the highest token it accepted can refuse writes
//! from a holder whose lease has silently expired: see [`crate::FencedStore`].
//!
//! Tokens are exact over the whole `u64` range: they cross the Lua scripts as
//! decimal strings, never as Lua numbers (doubles), which round above 2^53
//! (`docs/decisions/0006-exact-tokens-past-2-53.md`). A lock's counter is a
//! Redis integer, so a lock issues tokens up to 2^63 − 1; a `FencedStore`
//! compares any `u64`.

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

impl FencingToken {
    /// Parses a token exactly as the scripts store it: a canonical decimal
    /// (ASCII digits, no sign, no leading zero except `0` itself) of at most
    /// `u64::MAX`. Anything else is `None`: a value this library never
    /// writes, which the caller reports as [`crate::Error::CorruptState`].
    /// Canonical form is what makes the store's string comparison (length,
    /// then bytes) agree with numeric order, so it is checked, not assumed.
    pub(crate) fn parse_canonical(text: &[u8]) -> Option<FencingToken> {
        let canonical = match text {
            [b'0'] => true,
            [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
            _ => false,
        };
        if !canonical {
            return None;
        }
        // ASCII digits are valid UTF-8; `parse` catches values past u64::MAX.
        core::str::from_utf8(text).ok()?.parse().ok().map(FencingToken)
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

/// What a token reports of itself: its `Display` and `u64` are the raw
/// value (moved here from the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn display_and_u64_are_the_raw_value() {
        for raw in [0, 1, (1 << 53) + 1, u64::MAX] {
            let token = FencingToken::new(raw);
            assert_eq!((token.to_string(), u64::from(token), token.get()), (raw.to_string(), raw, raw));
        }
    }
}
