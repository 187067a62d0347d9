//! `RedlockConfig`: the settings of a [`super::Redlock`], checked before any
//! request reaches a master.
//!
//! The TTL is part of the configuration rather than an argument of each
//! acquire so that every relation between the settings (drift and the
//! per-master timeout must both be shorter than the TTL) is checked once, at
//! construction, as a typed error — not discovered on some later call.

use core::time::Duration;

use crate::drift::Drift;
use crate::error::{Error, Result};
use crate::keys::Prefix;
use crate::owner::OwnerSource;
use crate::ttl::Ttl;

/// Settings of a [`super::Redlock`]. Start from [`RedlockConfig::new`] and
/// override what you need; [`super::Redlock::connect`] validates them.
#[derive(Debug, Clone)]
pub struct RedlockConfig {
    pub(crate) ttl: Ttl,
    pub(crate) drift: Drift,
    pub(crate) master_timeout: Duration,
    pub(crate) handshake_timeout: Duration,
    pub(crate) prefix: String,
    pub(crate) owners: OwnerSource,
    pub(crate) native_commands: bool,
}

impl RedlockConfig {
    /// The default per-master timeout: the top of the classic 5–50 ms range,
    /// because a busy machine misses 5 ms deadlines on loopback.
    pub const DEFAULT_MASTER_TIMEOUT: Duration = Duration::from_millis(50);

    /// The default timeout of the `INFO server` request sent to each master
    /// by [`super::Redlock::connect`].
    pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(1);

    /// Leases of `ttl`, drift [`Drift::DEFAULT`] (1 % + 2 ms), a 50 ms
    /// per-master timeout, key prefix `"redlock"`, owners from the OS CSPRNG.
    pub fn new(ttl: Ttl) -> RedlockConfig {
        RedlockConfig {
            ttl,
            drift: Drift::DEFAULT,
            master_timeout: RedlockConfig::DEFAULT_MASTER_TIMEOUT,
            handshake_timeout: RedlockConfig::DEFAULT_HANDSHAKE_TIMEOUT,
            prefix: "redlock".to_string(),
            owners: OwnerSource::Random,
            native_commands: true,
        }
    }

    /// The clock-drift allowance subtracted from every validity. Its
    /// allowance for the TTL must be smaller than the TTL.
    pub fn drift(mut self, drift: Drift) -> RedlockConfig {
        self.drift = drift;
        self
    }

    /// How long one master may take to answer one request before it counts
    /// as a miss. Must be non-zero and smaller than the TTL.
    pub fn master_timeout(mut self, timeout: Duration) -> RedlockConfig {
        self.master_timeout = timeout;
        self
    }

    /// How long [`super::Redlock::connect`] waits for each master's
    /// `INFO server`. A master that does not answer in time is left
    /// unverified (see [`super::Redlock::unverified_masters`]).
    pub fn handshake_timeout(mut self, timeout: Duration) -> RedlockConfig {
        self.handshake_timeout = timeout;
        self
    }

    /// Key prefix (default `"redlock"`): the key on every master is `prefix:{name}`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> RedlockConfig {
        self.prefix = prefix.into();
        self
    }

    /// Where ownership values come from (default: the OS-seeded CSPRNG;
    /// a seeded source is for the simulation only).
    pub fn owners(mut self, owners: OwnerSource) -> RedlockConfig {
        self.owners = owners;
        self
    }

    /// Whether release and extend use a master's native compare-and-delete
    /// and compare-and-set (`DELIFEQ` on Valkey 9, `DELEX … IFEQ` on Redis
    /// 8.4, and `SET … IFEQ … PX`) where its `INFO server` says it has them
    /// (default `true`; ADR 0013). `false` sends the scripts everywhere.
    pub fn native_commands(mut self, on: bool) -> RedlockConfig {
        self.native_commands = on;
        self
    }

    /// The lease TTL.
    pub fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// Checks the settings for `masters` masters; returns the validated prefix.
    /// Sends nothing.
    pub(crate) fn validate(&self, masters: usize) -> Result<Prefix> {
        if masters == 0 {
            return Err(Error::invalid(
                "redlock masters",
                "at least one master is required (a majority of zero masters is meaningless)",
            ));
        }
        let ttl = self.ttl.as_duration();
        let drift = self.drift.allowance(ttl);
        if drift >= ttl {
            return Err(Error::invalid(
                "redlock drift",
                format!("the allowance {drift:?} is not smaller than the ttl {ttl:?}: no lease could ever be valid"),
            ));
        }
        if self.master_timeout.is_zero() {
            return Err(Error::invalid("redlock master_timeout", "must be greater than zero"));
        }
        if self.master_timeout >= ttl {
            return Err(Error::invalid(
                "redlock master_timeout",
                format!(
                    "{:?} is not smaller than the ttl {ttl:?}: a master answering just in time would hand back a lease that has already expired",
                    self.master_timeout
                ),
            ));
        }
        if self.handshake_timeout.is_zero() {
            return Err(Error::invalid("redlock handshake_timeout", "must be greater than zero"));
        }
        Prefix::new(self.prefix.clone())
    }
}
