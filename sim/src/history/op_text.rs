//! How an [`Op`] reads in a timeline: one line per operation, grouped by
//! the primitive it belongs to (a family's own operations read as their
//! own `Display` says). Display only; nothing parses it back.

use core::fmt;

use super::values::*;
use super::Op;

/// A value, or `?` when unknown.
fn opt<T: fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "?".to_string(),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One group per primitive (and one for the harness's own records).
        match self {
            Op::NotAcknowledged { .. } | Op::Write { .. } | Op::Read { .. } => resource(self, f),
            Op::Fault(_)
            | Op::Reached { .. }
            | Op::ErrorReply { .. }
            | Op::LibraryError { .. }
            | Op::Paused { .. }
            | Op::Delayed { .. }
            | Op::Configured { .. }
            | Op::Note { .. } => harness(self, f),
            Op::Family(op) => write!(f, "{op}"),
        }
    }
}

/// A resource's writes and reads (a fenced store or a plain key), and a
/// call refused for want of replicas.
fn resource(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::NotAcknowledged { key, invoked } => {
            write!(f, "not-acknowledged {key} (the call invoked at {invoked}ms: too few replicas confirmed it)")
        }
        Op::Write { key, value, token, fenced, result } => {
            let store = if *fenced { "fenced" } else { "unfenced" };
            write!(f, "write {store} {key}={value:?} token={}", opt(token))?;
            match result {
                Some(WriteResult::Accepted) => write!(f, " -> accepted"),
                Some(WriteResult::Rejected { highest_seen }) => {
                    write!(f, " -> rejected (highest seen {highest_seen})")
                }
                None => Ok(()),
            }
        }
        Op::Read { key, value, token } => {
            write!(f, "read {key} -> {} token={}", value.as_deref().unwrap_or("nil"), opt(token))
        }
        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}

/// What the harness records about a run rather than a primitive: faults, situations, errors, probes, notes.
fn harness(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::Fault(record) => write!(f, "fault: {record}"),
        Op::Reached { situation } => write!(f, "reached: {situation}"),
        Op::ErrorReply { message } => write!(f, "error reply: {message}"),
        Op::LibraryError { message } => write!(f, "library error: {message}"),
        Op::Paused { ms, context } => write!(f, "stalls for {ms}ms {context}"),
        Op::Delayed { node, ms, mentioning: None } => {
            write!(f, "its next request to redis-{node} waits {ms}ms at the server")
        }
        Op::Delayed { node, ms, mentioning: Some(key) } => {
            write!(f, "its next request to redis-{node} mentioning {key} waits {ms}ms at the server")
        }
        Op::Configured { primitive, fields, .. } => {
            write!(f, "configured {primitive}:")?;
            for (name, reported, _) in fields {
                write!(f, " {name}={reported}")?;
            }
            Ok(())
        }
        Op::Note { text } => write!(f, "note: {text}"),

        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}
