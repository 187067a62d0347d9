//! `CompareCommands`: which commands a lock sends to compare-and-delete and
//! compare-and-extend, detected once per connection.
//!
//! On Redis 7 both are Lua scripts (`GET` + compare + `DEL` / `PEXPIRE`).
//! Newer servers do the same in one native command, which costs the server
//! less than running a script (no Lua call, no argument conversion):
//! Valkey 9 has `DELIFEQ key value`, Redis 8.4 and Valkey 9.2 have
//! `DELEX key IFEQ value`, and both have `SET key value IFEQ value PX ttl`
//! (Valkey since 8.1), which rewrites our own value with a new TTL only while
//! the key still holds it: a compare-and-extend that never recreates a
//! missing key. The replies and errors match the scripts' (1 or 0; `OK` or
//! nil; `WRONGTYPE` on a key of another type), so callers cannot tell which
//! ran except by speed.
//!
//! Detection is one `COMMAND INFO DELIFEQ DELEX` on the first release or
//! extend, remembered by the lock and its clones. A detection that fails (a
//! dropped connection, a timeout) is not remembered: that call runs the
//! script and the next one asks again.
//!
//! A native command the server refuses with an error reply ran nothing (a
//! server checks a command before it executes it), whatever the wording: a
//! reconnecting connection that now reaches an older server gets
//! `ERR unknown command` for `DELIFEQ` but `ERR syntax error` for
//! `SET … IFEQ` (Redis 7), an ACL may answer `NOPERM`. The lock then forgets
//! what it detected, runs the script instead, and asks again on its next
//! call, so it is never stuck on a command the server lost. The script
//! answers for itself: a key of another type or a replica's `READONLY` is
//! the script's error then, as on a server that never had the command.
//! Only an error that is no reply (a timeout, a dropped connection: the
//! command may have run) is returned as it is.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use redis::Value;

use crate::error::{Error, Result};

/// The commands a [`crate::Lock`] uses to release and extend a lease.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareCommands {
    /// Lua scripts: every Redis >= 7 and Valkey.
    Scripts,
    /// Valkey 9: `DELIFEQ key owner`, and `SET key owner IFEQ owner PX ttl`.
    DelIfEq,
    /// Redis 8.4, Valkey 9.2: `DELEX key IFEQ owner`, and `SET … IFEQ`.
    DelEx,
}

impl CompareCommands {
    /// What `COMMAND INFO DELIFEQ DELEX` says the server has: one entry per
    /// name asked, nil for a command the server does not know.
    pub(crate) fn from_command_info(reply: &Value) -> CompareCommands {
        let known = |v: &Value| !matches!(v, Value::Nil);
        match reply {
            Value::Array(entries) => match entries.as_slice() {
                [delifeq, _] if known(delifeq) => CompareCommands::DelIfEq,
                [_, delex] if known(delex) => CompareCommands::DelEx,
                _ => CompareCommands::Scripts,
            },
            _ => CompareCommands::Scripts,
        }
    }

    /// What a server's `INFO server` text says it has, by its version:
    /// Valkey >= 9.0 has `DELIFEQ`, Redis >= 8.4 `DELEX` (and Valkey 9.2
    /// both; `DELIFEQ` is preferred, as [`Self::from_command_info`] does).
    /// `None` when the text names no version. A wrong guess costs nothing
    /// but a round trip: a native command the server does not have is
    /// refused, runs nothing, and the script runs.
    pub(crate) fn from_info_server(info: &str) -> Option<CompareCommands> {
        let version = |field: &str| {
            info.lines().find_map(|l| l.strip_prefix(field)).map(|v| {
                let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
            })
        };
        // Valkey also reports the Redis version it is compatible with (7.2.4).
        match (version("valkey_version:"), version("redis_version:")) {
            (Some(v), _) if v >= (9, 0) => Some(CompareCommands::DelIfEq),
            (Some(_), _) => Some(CompareCommands::Scripts),
            (None, Some(v)) if v >= (8, 4) => Some(CompareCommands::DelEx),
            (None, Some(_)) => Some(CompareCommands::Scripts),
            (None, None) => None,
        }
    }

    fn code(self) -> u8 {
        match self {
            CompareCommands::Scripts => SCRIPTS,
            CompareCommands::DelIfEq => DELIFEQ,
            CompareCommands::DelEx => DELEX,
        }
    }

    /// The native compare-and-delete of `key` if it still holds `owner`, or
    /// `None` for the script.
    pub(crate) fn delete(self, key: &str, owner: &str) -> Option<redis::Cmd> {
        match self {
            CompareCommands::Scripts => None,
            CompareCommands::DelIfEq => Some(command(&["DELIFEQ", key, owner])),
            CompareCommands::DelEx => Some(command(&["DELEX", key, "IFEQ", owner])),
        }
    }

    /// The native compare-and-extend (`SET key owner IFEQ owner PX ttl`: `OK`
    /// when extended, nil when the key is gone or someone else's), or `None`
    /// for the script.
    pub(crate) fn extend(self, key: &str, owner: &str, ttl_ms: u64) -> Option<redis::Cmd> {
        match self {
            CompareCommands::Scripts => None,
            CompareCommands::DelIfEq | CompareCommands::DelEx => {
                let mut cmd = command(&["SET", key, owner, "IFEQ", owner, "PX"]);
                cmd.arg(ttl_ms);
                Some(cmd)
            }
        }
    }
}

/// A command of `parts`, written into buffers sized for it up front (one
/// allocation each, not one per growth, and no copy: the speed issue's
/// client cost per operation), with room for one more number.
fn command(parts: &[&str]) -> redis::Cmd {
    let size = parts.iter().map(|p| p.len()).sum::<usize>() + 20;
    let mut cmd = redis::Cmd::with_capacity(parts.len() + 1, size);
    for part in parts {
        cmd.arg(*part);
    }
    cmd
}

const UNKNOWN: u8 = 0;
const SCRIPTS: u8 = 1;
const DELIFEQ: u8 = 2;
const DELEX: u8 = 3;

/// What a lock and its clones have learnt about their connection's server.
#[derive(Debug, Clone)]
pub(crate) struct Detected {
    /// `false`: never detect, always run the scripts.
    enabled: bool,
    state: Arc<AtomicU8>,
}

impl Detected {
    pub(crate) fn new(enabled: bool) -> Detected {
        Detected { enabled, state: Arc::new(AtomicU8::new(UNKNOWN)) }
    }

    /// Detection on, the answer already known (from `INFO server`, say):
    /// nothing is asked unless a native command turns out to be unknown.
    pub(crate) fn known(found: CompareCommands) -> Detected {
        Detected { enabled: true, state: Arc::new(AtomicU8::new(found.code())) }
    }

    /// The commands to use; asks the server the first time. A failed
    /// question answers [`CompareCommands::Scripts`] for this call only.
    pub(crate) async fn commands<C: redis::aio::ConnectionLike>(&self, conn: &mut C) -> CompareCommands {
        if !self.enabled {
            return CompareCommands::Scripts;
        }
        match self.state.load(Ordering::Relaxed) {
            SCRIPTS => return CompareCommands::Scripts,
            DELIFEQ => return CompareCommands::DelIfEq,
            DELEX => return CompareCommands::DelEx,
            _ => {}
        }
        let reply: redis::RedisResult<Value> =
            redis::cmd("COMMAND").arg("INFO").arg("DELIFEQ").arg("DELEX").query_async(conn).await;
        match reply {
            Ok(info) => {
                let found = CompareCommands::from_command_info(&info);
                self.state.store(found.code(), Ordering::Relaxed);
                found
            }
            Err(_) => CompareCommands::Scripts,
        }
    }

    /// Whether detection is on (`LockBuilder::native_commands`).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Runs `native` if there is one. `Ok(None)`: run the script instead,
    /// either because there is no native command or because the server
    /// refused it with an error reply (it then ran nothing; the lock
    /// forgets what it detected and asks again next time).
    pub(crate) async fn run<T, C>(&self, conn: &mut C, native: Option<redis::Cmd>, key: &str) -> Result<Option<T>>
    where
        T: redis::FromRedisValue,
        C: redis::aio::ConnectionLike,
    {
        self.try_native(conn, native).await.map_err(|e| Error::from_redis(e, key))
    }

    /// [`Detected::run`] with redis-rs's error, for callers that judge it
    /// themselves (Redlock counts a master's error as a vote).
    pub(crate) async fn try_native<T, C>(
        &self,
        conn: &mut C,
        native: Option<redis::Cmd>,
    ) -> redis::RedisResult<Option<T>>
    where
        T: redis::FromRedisValue,
        C: redis::aio::ConnectionLike,
    {
        let Some(cmd) = native else { return Ok(None) };
        match cmd.query_async::<T>(conn).await {
            Ok(reply) => Ok(Some(reply)),
            Err(e) if is_refusal(&e) => {
                self.state.store(UNKNOWN, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// True when the server answered with an error reply, which runs nothing,
/// whatever its wording (`unknown command`, `syntax error`, `NOPERM`, …).
/// redis-rs gives a code to server replies only: a timeout, a dropped
/// connection or a reply that does not parse has none, and is not a
/// refusal (the command may have run).
fn is_refusal(e: &redis::RedisError) -> bool {
    e.code().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Value {
        Value::Array(vec![Value::BulkString(b"x".to_vec())])
    }

    #[test]
    fn command_info_picks_the_native_command_the_server_has() {
        let info = |a, b| Value::Array(vec![a, b]);
        assert_eq!(CompareCommands::from_command_info(&info(entry(), Value::Nil)), CompareCommands::DelIfEq);
        assert_eq!(CompareCommands::from_command_info(&info(entry(), entry())), CompareCommands::DelIfEq);
        assert_eq!(CompareCommands::from_command_info(&info(Value::Nil, entry())), CompareCommands::DelEx);
        assert_eq!(CompareCommands::from_command_info(&info(Value::Nil, Value::Nil)), CompareCommands::Scripts);
        assert_eq!(CompareCommands::from_command_info(&Value::Nil), CompareCommands::Scripts);
        assert_eq!(CompareCommands::from_command_info(&Value::Array(vec![entry()])), CompareCommands::Scripts);
    }

    #[test]
    fn info_server_names_the_native_command_by_version() {
        let of = CompareCommands::from_info_server;
        assert_eq!(
            of("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n"),
            Some(CompareCommands::DelIfEq)
        );
        assert_eq!(of("redis_version:7.2.4\r\nvalkey_version:9.0.0\r\n"), Some(CompareCommands::DelIfEq));
        assert_eq!(of("redis_version:7.2.4\r\nvalkey_version:8.1.1\r\n"), Some(CompareCommands::Scripts));
        assert_eq!(of("redis_version:8.4.0\r\n"), Some(CompareCommands::DelEx));
        assert_eq!(of("redis_version:8.2.3\r\n"), Some(CompareCommands::Scripts));
        assert_eq!(of("redis_version:7.0.15\r\n"), Some(CompareCommands::Scripts));
        assert_eq!(of("redis_version:10.0.0\r\n"), Some(CompareCommands::DelEx));
        assert_eq!(of("run_id:abc\r\n"), None);
    }

    #[test]
    fn scripts_have_no_native_command() {
        assert!(CompareCommands::Scripts.delete("k", "o").is_none());
        assert!(CompareCommands::Scripts.extend("k", "o", 10).is_none());
        let packed = |c: redis::Cmd| String::from_utf8_lossy(&c.get_packed_command()).replace("\r\n", " ");
        assert!(packed(CompareCommands::DelIfEq.delete("k", "o").unwrap()).contains("DELIFEQ $1 k $1 o"));
        assert!(packed(CompareCommands::DelEx.delete("k", "o").unwrap()).contains("DELEX $1 k $4 IFEQ $1 o"));
        assert!(packed(CompareCommands::DelEx.extend("k", "o", 10).unwrap()).contains("IFEQ $1 o $2 PX $2 10"));
    }
}
