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
            Op::RateLimit { .. } => limiter(self, f),
            Op::Role { .. }
            | Op::ElectionView { .. }
            | Op::EpochCheck { .. }
            | Op::SubscriberView { .. }
            | Op::ElectionCallback { .. }
            | Op::ElectionConfig { .. } => election(self, f),
            Op::RedlockAcquire { .. }
            | Op::RedlockRelease { .. }
            | Op::RedlockConnect { .. }
            | Op::RedlockExtend { .. } => redlock(self, f),
            Op::Fault(_)
            | Op::Reached { .. }
            | Op::ErrorReply { .. }
            | Op::LibraryError { .. }
            | Op::Paused { .. }
            | Op::Delayed { .. }
            | Op::Validated { .. }
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

/// A rate limiter's call.
fn limiter(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::RateLimit { key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms, .. } => {
            write!(f, "rate-limit {key} ({limit}/{window_ms}ms)")?;
            if let Some(p) = pinned_ms {
                write!(f, " at={p}ms")?;
            }
            match admission {
                Some(Admission::Admitted) => write!(f, " -> admitted")?,
                Some(Admission::Denied { retry_after_ms: Some(r) }) => write!(f, " -> denied, retry after {r}ms")?,
                Some(Admission::Denied { retry_after_ms: None }) => write!(f, " -> denied")?,
                None => {}
            }
            if let Some(c) = count {
                write!(f, " count={c}")?;
            }
            if let Some(r) = remaining {
                write!(f, " remaining={r}")?;
            }
            if let Some(s) = server_ms {
                write!(f, " server-time={s}ms")?;
            }
            Ok(())
        }
        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}

/// An election node's calls and views.
fn election(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::Role { election, role, epoch, deadline } => {
            write!(f, "{election}: {role:?} epoch={}", opt(epoch))?;
            if let Some(d) = deadline {
                write!(f, " trusted-until={d}ms")?;
            }
            Ok(())
        }
        Op::ElectionView { name, is_leader, epoch, lease, published, .. } => write!(
            f,
            "election-view {name} is_leader={is_leader} epoch={} lease={lease:?} published={published:?}",
            opt(epoch)
        ),
        Op::EpochCheck { epoch } => write!(f, "epoch() -> {}", opt(epoch)),
        Op::SubscriberView { published, received, notified } => {
            write!(f, "subscribe() holds {received:?} (notified: {notified}), leadership() is {published:?}")
        }
        Op::ElectionCallback { elected, epoch, .. } => {
            write!(f, "{} epoch={epoch}", if *elected { "on_elected" } else { "on_demoted" })
        }
        Op::ElectionConfig { name, lease_ms, renew_ms, campaign_ms, demotion } => write!(
            f,
            "election-config {name} lease={lease_ms}ms renew={renew_ms}ms campaign={campaign_ms}ms demotion={demotion}"
        ),
        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}

/// A Redlock call.
fn redlock(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::RedlockAcquire { name, masters, quorum, votes, validity_ms, round } => {
            write!(
                f,
                "redlock-acquire {name} votes={}/{masters} (quorum {quorum}) validity={}ms",
                opt(votes),
                opt(validity_ms)
            )?;
            match round {
                Some(r) => write!(f, " {r}"),
                None => Ok(()),
            }
        }
        Op::RedlockRelease { name, lease, round } => {
            write!(f, "redlock-release {name} lease={}", opt(lease))?;
            match round {
                Some(r) => write!(f, " {r}"),
                None => Ok(()),
            }
        }
        Op::RedlockConnect { masters, unverified } => {
            write!(f, "redlock-connect {masters} masters")?;
            match unverified {
                Some(u) => write!(f, " unverified={u:?}"),
                None => Ok(()),
            }
        }
        Op::RedlockExtend { name, lease, round } => {
            write!(f, "redlock-extend {name} lease={lease}")?;
            match round {
                Some(r) => write!(f, " {r}"),
                None => Ok(()),
            }
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
        Op::Note { text } => write!(f, "note: {text}"),

        // Not this group's: `Display` routes each operation to its group.
        _ => write!(f, "{}", op.verb()),
    }
}
