//! The few helpers the broken versions share, written here rather than
//! borrowed from the library.
//!
//! The library keeps their counterparts crate-private (key prefixing,
//! classifying a client error, checking a pinned `now`, reading `TIME`),
//! and this crate must not widen its API to reach them (ADR 0021). Each is
//! a few lines over the library's public API (`validate_name`, the public
//! [`Error`] variants, `Ttl::MAX_MILLIS`), and the types here are broken on
//! purpose anyway: they need not share code with the ones that are not.

use redis::RedisError;
use redis_primitives::{validate_name, Connection, Error, Result, Ttl};

/// `prefix:{name}` after validating `name`, the library's key shape (one
/// hash tag per instance). The prefixes here are constants, so only the
/// name needs checking.
pub(crate) fn key(prefix: &str, name: &str) -> Result<String> {
    validate_name(name)?;
    Ok(format!("{prefix}:{{{name}}}"))
}

/// Classifies a client error for an operation on `key` the way the library
/// does, so a caller (the harness) treats a naive call's fault like any
/// other: a timeout's outcome is unknown, a dropped connection's too. The
/// library's `CORRUPT` case is left out: it comes from its own scripts,
/// and nothing here runs one.
pub(crate) fn fault(source: RedisError, key: &str) -> Error {
    if source.is_timeout() {
        Error::OutcomeUnknown { source }
    } else if source.is_connection_dropped() || source.is_connection_refusal() || source.is_io_error() {
        Error::ConnectionLost { source }
    } else if source.code() == Some("WRONGTYPE") || source.detail().is_some_and(|d| d.contains("WRONGTYPE")) {
        Error::WrongType { key: key.to_string(), source }
    } else {
        Error::Redis { source }
    }
}

/// `Error::InvalidInput` for the argument `what`.
pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> Error {
    Error::InvalidInput { what, why: why.into() }
}

/// Refuses a pinned `now` past 2^53 − 1 ms, as the library's limiters do,
/// so the naive ones accept exactly the same arguments.
pub(crate) fn check_now(now_ms: u64) -> Result<()> {
    if now_ms > Ttl::MAX_MILLIS {
        return Err(invalid(
            "now",
            format!("{now_ms} ms exceeds 2^53 − 1, the largest instant a Lua number holds exactly"),
        ));
    }
    Ok(())
}

/// The server's clock in unix ms, one `TIME` round trip: the naive limiters
/// run no script that could read it.
pub(crate) async fn server_time_ms<C: Connection>(conn: &C, key: &str) -> Result<u64> {
    let mut conn = conn.clone();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.map_err(|e| fault(e, key))?;
    Ok(secs * 1000 + micros / 1000)
}
