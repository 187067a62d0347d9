//! The one error type of the library.
//!
//! Variants are named for what the caller can do about them. "Not yet" and
//! "refused" are never errors: a lock that is taken is `Ok(None)`, a denied
//! request is `Decision::Denied`, a stale write is `WriteOutcome::Rejected`.
//! `Err` means bad input (fix the call) or a fault (the outcome may be
//! unknown; see [`Error::outcome_is_unknown`]).

use redis::RedisError;

/// The error code our Lua scripts reply with when they find a value they
/// never write (see [`Error::CorruptState`]).
pub(crate) const CORRUPT: &str = "CORRUPT";

/// Convenience alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, by what the caller can do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value given to a constructor or a call is out of range or malformed.
    /// Nothing was sent to Redis. Fix the call.
    #[error("invalid {what}: {why}")]
    InvalidInput {
        /// Which argument or setting.
        what: &'static str,
        /// Why it was refused.
        why: String,
    },

    /// The request timed out. It **may still run** on the server later (a
    /// response timeout cancels nothing), so its outcome is unknown: an
    /// acquire that timed out may have taken the lock, a write may land late.
    /// Treat it as "maybe", never as "did not happen".
    #[error("outcome unknown: the request timed out and may still be executed by Redis ({source})")]
    OutcomeUnknown {
        /// The underlying client error.
        #[source]
        source: RedisError,
    },

    /// The connection was dropped or refused. If it dropped while a request
    /// was in flight, that request's outcome is unknown too. Reconnect (or
    /// let a reconnecting connection do it) and retry if the operation allows.
    #[error("connection lost: {source}")]
    ConnectionLost {
        /// The underlying client error.
        #[source]
        source: RedisError,
    },

    /// A key used by this primitive holds a value of another type
    /// (`WRONGTYPE`): something else writes to our key space. Nothing was changed.
    #[error("key `{key}` holds a value of the wrong type for this primitive (WRONGTYPE); is another program using this key prefix?")]
    WrongType {
        /// The key (or the first key of the script) involved.
        key: String,
        /// The underlying server error.
        #[source]
        source: RedisError,
    },

    /// Redis answered with an error not covered above: out of memory under
    /// `noeviction` (`OOM`), `READONLY` on a replica (a client still talking
    /// to a demoted primary), a script error, ... [`RedisError::code`] is the
    /// server's own code, whichever call or script path met it: a script
    /// whose write the server refuses passes the refusal on unchanged, and
    /// a refused write is the script's first, so nothing was changed.
    #[error("redis error: {source}")]
    Redis {
        /// The underlying error.
        #[source]
        source: RedisError,
    },

    /// A key of this primitive holds a value of the right type that this
    /// library never writes: a fence counter that is not a positive integer
    /// (or has reached 2^63 − 1, the most `INCR` can count to), a stored token
    /// that is not a canonical decimal number, a half-written entry, a lock
    /// key without an expiry, a limiter's counts or scores that are not
    /// whole numbers in range. Something else writes to our key space. The
    /// call changed nothing; retrying cannot help until the key is repaired
    /// (or deleted, with the consequences the README's non-guarantees list
    /// for a lost fence counter).
    ///
    /// Only a key's *contents* are reported this way: a server that refuses
    /// a write (`READONLY`, `OOM`) is [`Error::Redis`], never this, since the
    /// keys are then fine and nothing should be repaired.
    #[error("corrupt state in `{key}`: {detail}")]
    CorruptState {
        /// The key holding the bad value.
        key: String,
        /// What is wrong with it.
        detail: String,
    },

    /// Fewer replicas than an [`crate::Acknowledgement`] requires confirmed
    /// the write within its timeout (`WAIT` answered `acknowledged`).
    ///
    /// The write **ran on the primary**; what is not known is whether it
    /// survives a failover, so this is not an unknown outcome
    /// ([`Error::outcome_is_unknown`] is false). From
    /// [`crate::Lock::acquire`]: the fencing token was consumed (the counter
    /// moved on), and the lease is not handed out — it was released
    /// (compare-and-delete) at once, or, if that release failed, expires
    /// after its TTL with nobody holding it. From
    /// [`crate::FencedStore::write`]: the value **was written** on the
    /// primary (later writes with lower tokens are refused there) and may
    /// be lost by a failover.
    #[error("`{key}`: {acknowledged} of the {required} required replica(s) acknowledged the write in time")]
    NotAcknowledged {
        /// The lock key, or the fenced store's key.
        key: String,
        /// How many replicas confirmed (`WAIT`'s answer).
        acknowledged: u32,
        /// How many were required.
        required: u32,
    },

    /// Redis answered with a reply of a shape none of this library's
    /// commands or scripts produce (not a value merely out of range: that is
    /// [`Error::CorruptState`]).
    #[error("unexpected reply for `{key}`: {detail}")]
    UnexpectedReply {
        /// The key involved.
        key: String,
        /// What was wrong with the reply.
        detail: String,
    },
}

impl Error {
    /// True when a request may or may not have been executed: a timeout, or a
    /// connection lost with the request in flight.
    pub fn outcome_is_unknown(&self) -> bool {
        matches!(self, Error::OutcomeUnknown { .. } | Error::ConnectionLost { .. })
    }

    /// Classifies a client error for an operation on `key`.
    pub(crate) fn from_redis(source: RedisError, key: &str) -> Error {
        if source.is_timeout() {
            Error::OutcomeUnknown { source }
        } else if source.is_connection_dropped() || source.is_connection_refusal() || source.is_io_error() {
            Error::ConnectionLost { source }
        } else if source.code() == Some(CORRUPT) {
            // Raised by our own scripts (`redis.error_reply('CORRUPT …')`)
            // when they find a value they never write.
            let detail = source.detail().unwrap_or("corrupt value").to_string();
            Error::CorruptState { key: key.to_string(), detail }
        } else if source.code() == Some("WRONGTYPE") || source.detail().is_some_and(|d| d.contains("WRONGTYPE")) {
            Error::WrongType { key: key.to_string(), source }
        } else {
            Error::Redis { source }
        }
    }

    pub(crate) fn corrupt(key: &str, detail: impl Into<String>) -> Error {
        Error::CorruptState { key: key.to_string(), detail: detail.into() }
    }

    pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> Error {
        Error::InvalidInput { what, why: why.into() }
    }
}
