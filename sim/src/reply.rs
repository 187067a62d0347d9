//! [`Reply`]: what the server answered a command, as the execution log
//! keeps it, typed.
//!
//! Whether a write *landed* is the server's answer, not the client's: a
//! conditional write (a fenced store's script, a compare-and-set) runs and
//! refuses, and a held write may land after its client gave up on it. So
//! the bridge keeps each command's reply in its [`crate::Execution`]
//! ([`crate::Execution::reply`]), parsed from the RESP bytes into
//! this type (never rendered to text and read back), bounded in memory as
//! the arguments are: at most 16 elements per array, two levels deep,
//! strings cut as [`crate::Execution::args`] cuts them.

use redis::Value;

/// One reply of the server, bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A nil (`$-1`, `*-1`, RESP3 null).
    Nil,
    /// An integer.
    Int(i64),
    /// A bulk or simple string (`OK`, a value), cut like an argument.
    Text(String),
    /// An array (or map, set, push), its first 16 elements.
    Array(Vec<Reply>),
    /// An error reply (`-ERR …`, `-NOSCRIPT …`), cut like an argument.
    Error(String),
    /// Anything else (a double, a boolean, a reply nested too deep), or
    /// bytes that did not parse.
    Other,
}

impl Reply {
    /// The reply whose RESP encoding is `bytes`.
    pub(crate) fn parse(bytes: &[u8]) -> Reply {
        match redis::parse_redis_value(bytes) {
            Ok(value) => Reply::of(&value, 2),
            Err(_) => Reply::Other,
        }
    }

    fn of(value: &Value, depth: u32) -> Reply {
        let text = |b: &[u8]| Reply::Text(logged_argument(b));
        match value {
            Value::Nil => Reply::Nil,
            Value::Int(n) => Reply::Int(*n),
            Value::BulkString(b) => text(b),
            Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => text(s.as_bytes()),
            Value::Okay => Reply::Text("OK".to_string()),
            Value::Array(items) | Value::Set(items) | Value::Push { data: items, .. } if depth > 0 => {
                Reply::Array(items.iter().take(MAX_LOGGED_ARGS).map(|v| Reply::of(v, depth - 1)).collect())
            }
            Value::ServerError(e) => {
                let what = [e.code(), e.details().unwrap_or_default()].join(" ");
                Reply::Error(logged_argument(what.trim().as_bytes()))
            }
            _ => Reply::Other,
        }
    }

    /// Whether it is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}

// The bounds are the execution log's own (`crate::bridge` uses them for
// arguments); they live here so the log depends on this module, not the
// reverse.

/// The most arguments of one command the execution log keeps.
pub(crate) const MAX_LOGGED_ARGS: usize = 16;

/// The longest argument the execution log keeps whole, in bytes.
pub(crate) const MAX_LOGGED_ARG_BYTES: usize = 64;

/// An argument as the execution log keeps it: whole (as UTF-8, lossily)
/// when it has at most [`MAX_LOGGED_ARG_BYTES`] bytes; else its first 32
/// bytes, `…`, and the FNV-1a hash of all of it, so two long values still
/// compare as they would whole.
pub(crate) fn logged_argument(arg: &[u8]) -> String {
    if arg.len() <= MAX_LOGGED_ARG_BYTES {
        return String::from_utf8_lossy(arg).into_owned();
    }
    let mut h = crate::history::Fnv1a::default();
    h.write(arg);
    format!("{}…#{:016x} ({} bytes)", String::from_utf8_lossy(&arg[..32]), h.finish(), arg.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_typed_and_bounded() {
        assert_eq!(Reply::parse(b":3\r\n"), Reply::Int(3));
        assert_eq!(Reply::parse(b"+OK\r\n"), Reply::Text("OK".into()));
        assert_eq!(Reply::parse(b"$-1\r\n"), Reply::Nil);
        assert_eq!(
            Reply::parse(b"*2\r\n:1\r\n$1\r\n7\r\n"),
            Reply::Array(vec![Reply::Int(1), Reply::Text("7".into())])
        );
        assert!(Reply::parse(b"-NOSCRIPT No matching script\r\n").is_error());
        let long = format!("${}\r\n{}\r\n", 100, "x".repeat(100));
        assert!(matches!(Reply::parse(long.as_bytes()), Reply::Text(t) if t.contains("(100 bytes)")));
    }
}
