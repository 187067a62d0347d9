//! How an [`Op`] reads in a timeline: one line per operation, grouped by
//! the primitive it belongs to. Display only; nothing parses it back.

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
            Op::Acquire { .. }
            | Op::Release { .. }
            | Op::Extend { .. }
            | Op::LeaseLost { .. }
            | Op::TakenAway { .. }
            | Op::BodyDropped { .. }
            | Op::NotAcknowledged { .. }
            | Op::Retry { .. }
            | Op::Guarded { .. }
            | Op::CurrentToken { .. }
            | Op::RemainingTtl { .. }
            | Op::LeaseView { .. }
            | Op::Write { .. }
            | Op::Read { .. } => lock(self, f),
            Op::Fault(_)
            | Op::Reached { .. }
            | Op::ErrorReply { .. }
            | Op::LibraryError { .. }
            | Op::Paused { .. }
            | Op::Delayed { .. }
            | Op::Validated { .. }
            | Op::Configured { .. }
            | Op::StateProbe { .. }
            | Op::Note { .. } => harness(self, f),
            Op::Family(op) => write!(f, "{op}"),
        }
    }
}

/// A lock, its leases and the fenced store it guards.
fn lock(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
            Op::Acquire { name, ttl_ms, token, deadline } => {
                write!(f, "acquire {name} ttl={ttl_ms}ms token={}", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            Op::Release { name, token } => write!(f, "release {name} token={}", opt(token)),
            Op::Extend { name, token, ttl_ms, deadline } => {
                write!(f, "extend {name} token={} ttl={ttl_ms}ms", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            Op::LeaseLost { name, token, reason } => {
                write!(f, "lease-lost {name} token={} ({reason})", opt(token))
            }
            Op::TakenAway { name, token } => {
                write!(f, "taken-away {name} token={} (its key overwritten with another owner)", opt(token))
            }
            Op::BodyDropped { name, token } => {
                write!(f, "body-dropped {name} token={token} (the guarded body was dropped unfinished)")
            }
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
            Op::Retry { name, attempts, deadline_ms, token, backoff_ms } => {
                write!(f, "retry acquire {name} attempts={attempts}")?;
                if let Some(d) = deadline_ms {
                    write!(f, " deadline={d}ms")?;
                }
                if let Some((base, max)) = backoff_ms {
                    write!(f, " backoff={base}..{max}ms")?;
                }
                write!(f, " token={}", opt(token))
            }
            Op::Guarded { name, token, outcome, .. } => {
                write!(f, "guarded {name} token={}", opt(token))?;
                match outcome {
                    Some(GuardedResult::NotAcquired) => write!(f, " -> not acquired"),
                    Some(GuardedResult::Completed) => write!(f, " -> completed"),
                    Some(GuardedResult::Cancelled { at, deadline_reached }) => {
                        write!(f, " -> cancelled at {at}ms{}", if *deadline_reached { " (deadline reached)" } else { "" })
                    }
                    None => Ok(()),
                }
            }
            Op::CurrentToken { name, token } => write!(f, "current-token {name} -> {}", opt(token)),
            Op::RemainingTtl { name, ms } => match ms {
                Some(ms) => write!(f, "remaining-ttl {name} -> {ms}ms"),
                None => write!(f, "remaining-ttl {name} -> not held"),
            },
            Op::LeaseView { name, key, token, ttl_ms, sent_ms, deadline_ms, trusted } => write!(
                f,
                "lease-view {name} key={key} token={token} ttl={ttl_ms}ms sent={sent_ms}ms trusted-until={deadline_ms}ms -> {}",
                if *trusted { "trusted" } else { "not trusted" }
            ),
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
        Op::Validated { case, accepted, refusal, .. } => match refusal {
            Some(r) if !accepted => write!(f, "validated {case:?} -> refused: {r}"),
            _ => write!(f, "validated {case:?} -> accepted"),
        },
        Op::Configured { primitive, fields } => {
            write!(f, "configured {primitive}:")?;
            for (name, reported, _) in fields {
                write!(f, " {name}={reported}")?;
            }
            Ok(())
        }
        Op::StateProbe { planted, reply, after } => write!(f, "state-probe {planted:?} -> {reply:?}, after {after:?}"),
        Op::Note { text } => write!(f, "note: {text}"),

        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}
