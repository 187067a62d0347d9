//! The typed results and arguments operations carry: what a store said
//! about a write, a validation probe's case. Plain data, serialised
//! into the history's digest.

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
