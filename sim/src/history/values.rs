//! The typed results and arguments operations carry: what a store said
//! about a write, what a limiter admitted, a Redlock round's votes, a
//! validation probe's case. Plain data, serialised into the history's digest.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::time::Millis;

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

/// `Election::leadership()`, as an `ElectionView` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Published {
    /// `Leadership::Leader`.
    Leader {
        /// Its epoch.
        epoch: u64,
        /// `elected_at`, simulated ms.
        elected_at_ms: Millis,
    },
    /// `Leadership::Follower`, with the epoch of its last demotion.
    Follower {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
    /// `Leadership::Stopped`, with the epoch of its last demotion.
    Stopped {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
}

/// A constructor or call the validation probe tried with values at the
/// edge of what it accepts (`probes/validation.rs`; judged by
/// `input-validation`). Durations are in ms; drift is `(‰, constant ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "case")]
pub enum Validation {
    /// `Election::builder(..).lease_ttl(..).renew_interval(..).campaign_interval(..).drift(..).build()`.
    ElectionTiming {
        /// Lease TTL.
        lease_ms: u64,
        /// Renew interval.
        renew_ms: u64,
        /// Campaign interval.
        campaign_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
    },
    /// `Election::builder(..).lease_ttl(..).drift(..).build()` with the
    /// renew and campaign intervals left to their defaults (a third of the
    /// lease; the renew interval).
    ElectionDefaults {
        /// Lease TTL.
        lease_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
    },
    /// `Limit::new(max, window)`.
    Limit {
        /// Requests per window.
        max: u64,
        /// Window.
        window_ms: u64,
    },
    /// `SlidingWindowLog::check_at` / `SlidingWindowCounter::check_at` at `now_ms` (unix ms).
    CheckAt {
        /// The instant given.
        now_ms: u64,
    },
    /// `KeepAlive::new(lock, ttl, every)` on a lock with `drift`.
    KeepAlive {
        /// The TTL each extension sets.
        ttl_ms: u64,
        /// The interval.
        every_ms: u64,
        /// The lock's drift allowance.
        drift: (u32, u64),
    },
    /// A key built from a custom prefix and a name: `Lock::builder(..)
    /// .prefix(prefix).build()` then `key(name)` / `fence_key(name)`, or
    /// `FencedStore::with_prefix(.., prefix)` then `redis_key(name)`.
    KeyName {
        /// Which constructor and key method.
        on: KeyedOn,
        /// What the prefix was.
        prefix: KeyText,
        /// What the name was.
        name: KeyText,
    },
    /// `Ttl::new(Duration::from_millis(ms) + Duration::from_nanos(extra_ns))`.
    Ttl {
        /// Whole milliseconds.
        ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Acknowledgement::new(replicas, Duration::from_millis(ms) + Duration::from_nanos(extra_ns))`.
    Acknowledgement {
        /// Replicas to wait for.
        replicas: u32,
        /// Whole milliseconds of the timeout.
        ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Drift::new(per_mille, Duration::from_millis(constant_ms) + Duration::from_nanos(extra_ns))`.
    Drift {
        /// Thousandths of the TTL.
        per_mille: u32,
        /// Whole milliseconds of the constant.
        constant_ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Retry::new(attempts, base, max)` with both delays in nanoseconds.
    Retry {
        /// The first delay.
        base_ns: u64,
        /// The cap on every delay.
        max_ns: u64,
    },
    /// `Redlock::connect` with `masters` masters and this configuration.
    Redlock {
        /// Masters given.
        masters: u32,
        /// Lease TTL.
        ttl_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
        /// Per-master timeout.
        master_timeout_ms: u64,
        /// Handshake timeout.
        handshake_ms: u64,
    },
    /// `Redlock::connect` given one master twice (and another once).
    RedlockTwice {
        /// The connect was accepted and left one of the two copies
        /// unverified (its `INFO` did not answer in time): a duplicate it
        /// could not see. `false` when refused.
        unverified: bool,
    },
}

/// The kind of text the validation probe gave as a key prefix or name
/// (the text itself is drawn from the seed; the rule depends only on this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyText {
    /// Letters, digits and colons: usable.
    Plain,
    /// The empty string.
    Empty,
    /// Plain text with a `{` somewhere in it.
    OpenBrace,
    /// Plain text with a `}` somewhere in it.
    CloseBrace,
}

/// Which key the validation probe asked for (see [`Validation::KeyName`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyedOn {
    /// `Lock::key`.
    LockKey,
    /// `Lock::fence_key`.
    FenceKey,
    /// `FencedStore::redis_key`.
    StoreKey,
}

/// A rate limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Admission {
    /// The request was admitted.
    Admitted,
    /// The request was refused; the limiter suggested waiting this long.
    Denied {
        /// Suggested wait in milliseconds, if the limiter gave one.
        retry_after_ms: Option<u64>,
    },
}

/// An election node's belief about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// It believes it leads (and may act on it).
    Leader,
    /// It believes it does not lead.
    Follower,
    /// It left the election on purpose (`stop()`), releasing its lease.
    Resigned,
}

/// One Redlock round (acquire, extend or release) as the client saw it:
/// each master's answer and the numbers the client decided on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedlockRound {
    /// One letter per master, in index order: `y` yes, `n` no, `e` error,
    /// `t` timed out (may still happen later). Empty: no round was sent.
    pub answers: String,
    /// T2 − T1 of the round as the client measured it (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Validity the client reported, from T2 (ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<u64>,
    /// T1 the lease is measured from (simulated ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    /// Until when the client trusts the lease (simulated ms), on a grant or
    /// extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Millis>,
    /// Why it was refused (`no-majority`, `too-slow`, `expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The compare-and-delete sent to every master after a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
    /// After a refused extend: whether the lease still said
    /// `is_trusted()` (it must not: the lease is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_after: Option<bool>,
}

/// A rate-limit `Decision` as its accessors report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionAccessors {
    /// `is_allowed()`.
    pub is_allowed: bool,
    /// `is_denied()`.
    pub is_denied: bool,
    /// `remaining()`.
    pub remaining: u64,
    /// `retry_after()`, in ms.
    pub retry_after_ms: Option<u64>,
    /// `count()`.
    pub count: u64,
}

impl RedlockRound {
    /// How many masters said yes.
    pub fn yes(&self) -> usize {
        self.answers.chars().filter(|&c| c == 'y').count()
    }
}

impl fmt::Display for RedlockRound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.answers)?;
        if let Some(e) = self.elapsed_ms {
            write!(f, " elapsed={e}ms")?;
        }
        if let Some(u) = self.valid_until {
            write!(f, " trusted-until={u}ms")?;
        }
        if let Some(r) = &self.refusal {
            write!(f, " refused={r}")?;
        }
        if let Some(c) = &self.cleanup {
            write!(f, " cleanup=[{c}]")?;
        }
        Ok(())
    }
}
