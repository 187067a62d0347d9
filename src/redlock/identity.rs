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
//! So the reply is read as a [`redis::Value`] and every INFO text inside it
//! is read: every `run_id:` line is collected (a connection's identity is
//! the sorted set of those ids; two masters are the same when their sets
//! share an id), and the versions say which native compare-and-delete the
//! master has ([`CompareCommands::from_info_server`]), so Redlock learns it
//! without a request of its own.

use core::time::Duration;
use redis::Value;

use crate::connection::Connection;
use crate::native::CompareCommands;

/// What `INFO server` told about the server(s) behind one master connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// Every `run_id`, sorted and deduplicated; empty when none was found.
    pub(crate) run_ids: Vec<String>,
    /// The native commands every server behind the connection has, if the
    /// versions said.
    pub(crate) commands: Option<CompareCommands>,
}

/// Asks `conn` for `INFO server`; `None` when it is not answered in time.
pub(crate) async fn identify<C: Connection>(mut conn: C, timeout: Duration) -> Option<Identity> {
    let reply: Value =
        tokio::time::timeout(timeout, redis::cmd("INFO").arg("server").query_async(&mut conn)).await.ok()?.ok()?;
    Some(Identity::of(&reply))
}

impl Identity {
    /// Reads every INFO text found anywhere in `reply`.
    pub(crate) fn of(reply: &Value) -> Identity {
        let mut texts = Vec::new();
        collect_infos(reply, &mut texts);
        let mut run_ids: Vec<String> = texts
            .iter()
            .flat_map(|text| text.lines().filter_map(|line| line.strip_prefix("run_id:")))
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty())
            .collect();
        run_ids.sort();
        run_ids.dedup();
        // Behind a cluster connection a command goes to any node: native
        // only when every node said the same.
        let each: Vec<Option<CompareCommands>> = texts.iter().map(|t| CompareCommands::from_info_server(t)).collect();
        let commands = match each.first() {
            Some(first) if each.iter().all(|c| c == first) => *first,
            Some(_) => Some(CompareCommands::Scripts),
            None => None,
        };
        Identity { run_ids, commands }
    }
}

/// Collects every INFO text found anywhere in `reply` (a string, or the
/// values of a map or an array of them). A node that answered with an error
/// contributes nothing.
fn collect_infos(reply: &Value, texts: &mut Vec<String>) {
    match reply {
        Value::BulkString(bytes) => texts.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => texts.push(text.clone()),
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| collect_infos(v, texts)),
        // Keys are node addresses; only the values are INFO replies.
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| collect_infos(v, texts)),
        _ => {}
    }
}

/// A `run_id` both identities contain, if any (both are sorted).
pub(crate) fn shared<'a>(a: &'a [String], b: &[String]) -> Option<&'a str> {
    a.iter().find(|id| b.binary_search(id).is_ok()).map(String::as_str)
}
