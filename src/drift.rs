//! `Drift`: how much earlier than Redis a client must stop trusting a lease.
//!
//! A lease's TTL runs on the Redis host; the holder can only bound it from
//! its side with its own monotonic clock. Clocks run at slightly different
//! rates, so the holder subtracts an allowance: `ttl × factor + constant`
//! (Redlock's classic defaults are 1 % and 2 ms). The local deadline of a
//! lease is `sent_at + ttl − drift`, measured from when the request was
//! *sent*, because the server may have started the TTL at any point after that.

use core::time::Duration;

use crate::error::{Error, Result};

/// Clock-drift allowance: `ttl × factor_per_mille / 1000 + constant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    per_mille: u32,
    constant: Duration,
}

impl Drift {
    /// 1 % of the TTL plus 2 ms.
    pub const DEFAULT: Drift = Drift { per_mille: 10, constant: Duration::from_millis(2) };

    /// No allowance at all (only for experiments: real clocks drift).
    pub const NONE: Drift = Drift { per_mille: 0, constant: Duration::ZERO };

    /// `factor_per_mille` thousandths of the TTL plus `constant`.
    /// The factor must be below 1000 (an allowance of the whole TTL leaves nothing).
    pub fn new(factor_per_mille: u32, constant: Duration) -> Result<Drift> {
        if factor_per_mille >= 1000 {
            return Err(Error::invalid(
                "drift factor",
                format!("{factor_per_mille}‰ must be below 1000‰ of the TTL"),
            ));
        }
        Ok(Drift { per_mille: factor_per_mille, constant })
    }

    /// The allowance for a lease of `ttl`.
    pub fn allowance(self, ttl: Duration) -> Duration {
        ttl * self.per_mille / 1000 + self.constant
    }

    /// The factor, in thousandths of the TTL.
    pub fn factor_per_mille(self) -> u32 {
        self.per_mille
    }

    /// The constant part.
    pub fn constant(self) -> Duration {
        self.constant
    }
}

impl Default for Drift {
    fn default() -> Drift {
        Drift::DEFAULT
    }
}
