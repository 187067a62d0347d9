//! The typed results and arguments operations carry: what a store said
//! about a write, a probe's reply. Plain data, serialised into the
//! history's digest.

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

/// What the corruption probe planted, and which call it made
/// (`families/lock/probes/corruption.rs`; judged by `corrupt-state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "planted")]
pub enum Planted {
    /// `Lock::acquire` with the fence counter set to the string `value`
    /// (and no lease).
    Counter {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: String,
    },
    /// [`Planted::Counter`] for a lock with time-floored tokens: the token
    /// is `max(counter + 1, the server's clock in µs)`, and the server's
    /// clock read somewhere in `window_us` (simulated unix µs before the
    /// acquire was sent and after it was answered).
    FlooredCounter {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: String,
        /// The server's clock was in this range when it ran the acquire.
        window_us: (u64, u64),
    },
    /// `Lock::acquire` with the fence counter holding a hash.
    CounterHash {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
    },
    /// `Lock::acquire` with the lock key holding a hash.
    LockHash {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
    },
    /// `Lock::current_token` with the fence counter set to the string
    /// `value` (`None`: absent).
    CounterRead {
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: Option<String>,
    },
    /// `Lock::remaining_ttl` with the lock key set to a string with this
    /// expiry in ms (`Some(None)`: no expiry; `None`: absent).
    LeaseRead {
        /// The lock key.
        lock_key: String,
        /// The planted key's expiry.
        expiry: Option<Option<u64>>,
    },
    /// `FencedStore::read` of an entry whose `token` and `value` fields
    /// were planted as given (`None`: field absent).
    StoredRead {
        /// The store's Redis key.
        key: String,
        /// The planted `token` field.
        token: Option<String>,
        /// The planted `value` field.
        value: Option<String>,
    },
    /// `FencedStore::write` with token `write` over an entry whose `token`
    /// field held the string `token` (and whose value was `planted`).
    StoredToken {
        /// The store's Redis key.
        key: String,
        /// What the entry's token field held.
        token: String,
        /// The token written.
        write: u64,
    },
}

/// The library's answer to a probe call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeReply {
    /// `Lock::acquire` granted a lease with this token.
    Token(u64),
    /// `Lock::acquire` returned `Ok(None)`.
    NotAcquired,
    /// `Lock::current_token` / `Lock::remaining_ttl` returned `Ok(None)`.
    Nothing,
    /// `Lock::remaining_ttl` returned this many ms.
    Remaining(u64),
    /// `FencedStore::read` returned this entry.
    Stored {
        /// Its token.
        token: u64,
        /// Its value (lossy UTF-8).
        value: String,
    },
    /// `FencedStore::write` accepted.
    Accepted,
    /// `FencedStore::write` rejected.
    Rejected {
        /// The `highest_seen` it reported.
        highest_seen: u64,
    },
    /// `Error::CorruptState`.
    CorruptState {
        /// The key it named.
        key: String,
        /// Its detail.
        detail: String,
    },
    /// `Error::WrongType`.
    WrongType {
        /// The key it named.
        key: String,
    },
    /// An error whose outcome is unknown (timeout, dropped connection): not judged.
    Unknown(String),
    /// Any other error.
    Error(String),
}

/// The probed keys afterwards, as read back by the probe. A string key is
/// its value; another type is `<type>`; an absent key is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeAfter {
    /// The lock key (lock probes).
    pub lock: Option<String>,
    /// The fence counter (lock probes).
    pub counter: Option<String>,
    /// The fenced entry's `token` field (store probes).
    pub token: Option<String>,
    /// The fenced entry's `value` field (store probes).
    pub value: Option<String>,
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

/// How a guarded body ended ([`Op::Guarded`](super::Op::Guarded)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GuardedResult {
    /// The lock was held by someone else; the body did not run.
    NotAcquired,
    /// The body finished while the lease was trusted.
    Completed,
    /// The lease stopped being trustworthy at `at` (simulated ms) and the
    /// body was dropped there.
    Cancelled {
        /// When the body was dropped.
        at: Millis,
        /// Whether the guard said the local deadline was reached
        /// (`LeaseLoss::DeadlineReached`), rather than a refused or failed
        /// extension.
        #[serde(default)]
        deadline_reached: bool,
    },
}
