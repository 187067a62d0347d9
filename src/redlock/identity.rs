//! Which redis-server a master connection reaches: its `run_id`.
//!
//! Redlock's majority is only a majority of *independent* servers, so
//! [`super::Redlock::connect`] asks every master for `INFO server` and
//! refuses two connections that reach the same server. The reply's shape
//! depends on the connection, not only on the server:
//!
//! - a plain or multiplexed connection gets one bulk string (RESP2) or a
//!   verbatim string (RESP3);
//! - a redis-rs **cluster** connection sends `INFO` to every primary and
//!   hands back a map of `node address → that node's reply` (its "special"
//!   response policy), which cannot be read as one string. Reading it as a
//!   `String` failed, so a cluster master's `run_id` was `None` and the same
//!   cluster given twice went undetected (issue 13).
//!
//! So the reply is read as a [`redis::Value`] and every `run_id:` line in any
//! string inside it is collected. A connection's identity is the sorted set
//! of those ids; two masters are the same when their sets share an id.

use core::time::Duration;
use redis::Value;

use crate::connection::Connection;

/// The `run_id`s of every server behind `conn`, sorted and deduplicated, or
/// `None` when `INFO server` is not answered in time or carries no `run_id`.
pub(crate) async fn run_ids<C: Connection>(mut conn: C, timeout: Duration) -> Option<Vec<String>> {
    let reply: Value =
        tokio::time::timeout(timeout, redis::cmd("INFO").arg("server").query_async(&mut conn)).await.ok()?.ok()?;
    let mut ids = Vec::new();
    collect_run_ids(&reply, &mut ids);
    ids.sort();
    ids.dedup();
    (!ids.is_empty()).then_some(ids)
}

/// Collects the `run_id:` of every INFO text found anywhere in `reply`
/// (a string, or the values of a map or an array of them). A node that
/// answered with an error contributes nothing.
pub(crate) fn collect_run_ids(reply: &Value, ids: &mut Vec<String>) {
    match reply {
        Value::BulkString(bytes) => parse_info(&String::from_utf8_lossy(bytes), ids),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => parse_info(text, ids),
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| collect_run_ids(v, ids)),
        // Keys are node addresses; only the values are INFO replies.
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| collect_run_ids(v, ids)),
        _ => {}
    }
}

fn parse_info(text: &str, ids: &mut Vec<String>) {
    ids.extend(
        text.lines()
            .filter_map(|line| line.strip_prefix("run_id:"))
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty()),
    );
}

/// A `run_id` both identities contain, if any (both are sorted).
pub(crate) fn shared<'a>(a: &'a [String], b: &[String]) -> Option<&'a str> {
    a.iter().find(|id| b.binary_search(id).is_ok()).map(String::as_str)
}
