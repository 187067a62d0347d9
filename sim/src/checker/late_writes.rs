//! `late-writes`: no write lands at the server after its writer's lease
//! was over, judged from the server's own log, without tokens.
//!
//! `no-stale-overwrite` needs a store that checks tokens, and by design
//! never convicts a write whose outcome the writer did not learn. A lock
//! that hands out no token, used carefully (writing only while its validity
//! lasts), still lets a write *sent* in time be held on the way and *run*
//! after a newer holder's grant: nothing in the client's history shows it.
//! The bridge's execution log does: it records each command as the server
//! ran it, with its arguments ([`crate::Execution::args`]). This checker
//! orders those writes against the grants the history shows.
//!
//! A write of process `p` that ran at simulated instant `t` belongs to
//! `p`'s latest grant completed before `t` (a careful client writes only
//! once granted). It is late when, before `t`,
//! - that lease had certainly expired at the server (`expires_by < t`), or
//! - another process was certainly granted the lock after it: a grant
//!   asked for after `p`'s grant completed, and completed itself before `t`,
//!   so it ran at the server between the two;
//!
//! and a write with no grant before it is late by definition. Every rule
//! uses "certainly": a write whose order the log cannot tell (the same
//! millisecond) is not convicted. Writes of unknown outcome are judged like
//! any other: the log says they ran.
//!
//! That is [`Rule::Lease`], what a resource that checks nothing needs. A
//! fenced resource (a `FencedStore`) promises less, and [`Rule::Fenced`]
//! holds it to that: it learns of a newer holder only from that holder's
//! first write, so an old holder's write may still land between the newer
//! grant and that write (fencing orders writes, it does not know time);
//! what it must never accept is an old holder's write after a newer
//! holder's write has landed.
//!
//! The grants come from the history: a client that records [`LeaseOp`]s
//! (its acquires and writes, in its own code's terms) gets them from
//! [`grants`], and needs no operation type of its own.

use core::fmt;
use core::time::Duration;

use serde::Serialize;

use super::{capped, Invariant, Violation};
use crate::bridge::Execution;
use crate::history::{Event, EventKind, Operation};
use crate::time::Millis;

/// What a client guarded by a lease records, whatever its lock: acquires
/// (with the validity it computed, on `Ok`) and writes to the guarded
/// resource. [`grants`] reads the grants back; the timeline draws both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LeaseOp {
    /// An acquire of a lease of `ttl_ms` as `owner`; on `Ok`, `validity` is
    /// how long the client trusts it (exact, as the code computed it: a
    /// validity read from real time then differs between two runs, which
    /// the determinism self-check reports).
    Acquire {
        /// The owner value (the lock's key holds it).
        owner: String,
        /// The TTL asked for (ms).
        ttl_ms: u64,
        /// The validity computed from the reply; `None` until granted.
        validity: Option<Duration>,
    },
    /// A write to the guarded resource.
    Write {
        /// What it wrote.
        entry: String,
    },
}

impl LeaseOp {
    /// An acquire's invoke (or its `fail` / `info`).
    pub fn acquire(owner: &str, ttl_ms: u64) -> LeaseOp {
        LeaseOp::Acquire { owner: owner.to_string(), ttl_ms, validity: None }
    }

    /// An acquire's `Ok`: granted, trusted for `validity`.
    pub fn granted(owner: &str, ttl_ms: u64, validity: Duration) -> LeaseOp {
        LeaseOp::Acquire { owner: owner.to_string(), ttl_ms, validity: Some(validity) }
    }

    /// A write of `entry`.
    pub fn write(entry: &str) -> LeaseOp {
        LeaseOp::Write { entry: entry.to_string() }
    }
}

impl fmt::Display for LeaseOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseOp::Acquire { owner, ttl_ms, validity: Some(v) } => {
                write!(f, "acquire as {owner} for {ttl_ms}ms: valid {v:?}")
            }
            LeaseOp::Acquire { owner, ttl_ms, validity: None } => write!(f, "acquire as {owner} for {ttl_ms}ms"),
            LeaseOp::Write { entry } => write!(f, "write {entry}"),
        }
    }
}

impl Operation for LeaseOp {
    fn verb(&self) -> &'static str {
        match self {
            LeaseOp::Acquire { .. } => "acquire",
            LeaseOp::Write { .. } => "write",
        }
    }
}

/// The grants `events` show: every [`LeaseOp::Acquire`] that completed
/// `Ok`, asked at its invoke, alive at the server at most its TTL after the
/// `Ok` (the key was set before the reply left).
pub fn grants(events: &[Event]) -> Vec<Grant> {
    let mut asked = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match (e.op.family::<LeaseOp>(), e.kind) {
            (Some(LeaseOp::Acquire { .. }), EventKind::Invoke) => {
                asked.insert(e.op_id, e.time);
            }
            (Some(LeaseOp::Acquire { ttl_ms, validity: Some(_), .. }), EventKind::Ok) => {
                let asked = asked.remove(&e.op_id).unwrap_or(e.time);
                out.push(Grant {
                    process: e.process.clone(),
                    asked,
                    granted: e.time,
                    expires_by: Some(e.time + ttl_ms),
                });
            }
            _ => {}
        }
    }
    out
}

/// What the guarded resource promises, so what makes a write late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// It checks nothing: a write is late once its lease had expired at
    /// the server or a newer holder was granted ([`check`]).
    Lease,
    /// It checks fencing tokens: a write is late once a newer holder's
    /// write had landed ([`check_fenced`]).
    Fenced,
}

/// The writes among `writes` that are late under `rule`.
pub fn check_with(writes: &[&Execution], grants: &[Grant], rule: Rule) -> Vec<Violation> {
    match rule {
        Rule::Lease => check(writes, grants),
        Rule::Fenced => check_fenced(writes, grants),
    }
}

/// [`Rule::Fenced`]: the writes among `writes` (those the resource
/// accepted) that ran after a write of a certainly newer holder (one whose
/// grant was asked after the writer's own completed) had run, or that ran
/// holding no lease.
pub fn check_fenced(writes: &[&Execution], grants: &[Grant]) -> Vec<Violation> {
    let own = |w: &Execution| {
        grants.iter().filter(|g| *g.process == *w.client && g.granted <= w.sim_ms).max_by_key(|g| g.granted)
    };
    let mut out = Vec::new();
    for w in writes {
        let t = w.sim_ms;
        let Some(mine) = own(w) else {
            out.push(Violation::new(
                LATE_WRITES,
                Some(t),
                format!("{} ran {} at {t}ms holding no lease", w.client, w.command),
            ));
            continue;
        };
        let newer = writes
            .iter()
            .filter(|x| x.client != w.client && x.sim_ms < t)
            .find(|x| own(x).is_some_and(|g| g.asked > mine.granted));
        if let Some(n) = newer {
            out.push(Violation::new(
                LATE_WRITES,
                Some(t),
                format!(
                    "{} {} {} ran at {t}ms, after {} (granted at {}ms, after its own lease of {}ms) had written at {}ms",
                    w.client,
                    w.command,
                    w.args.join(" "),
                    n.client,
                    own(n).map_or(0, |g| g.granted),
                    mine.granted,
                    n.sim_ms
                ),
            ));
        }
    }
    capped(out, LATE_WRITES)
}

/// Name of the late-writes invariant.
pub const LATE_WRITES: Invariant = Invariant::new("late-writes");

/// One lease granted to a process, as its history shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The holder (an actor's name: the execution log's client).
    pub process: String,
    /// When it asked for the lease (the acquire's invoke), simulated ms.
    pub asked: Millis,
    /// When it learnt it had it (the acquire's `Ok`), simulated ms.
    pub granted: Millis,
    /// The latest instant the lease can still exist at the server (a grant
    /// completed at `granted` for `ttl` ms lives at most until
    /// `granted + ttl`; a confirmed extension moves it), or `None` when
    /// unknown (the checker then judges only newer grants).
    pub expires_by: Option<Millis>,
}

/// The writes among `writes` (commands of the execution log that change
/// the guarded resource) that ran after their writer's lease was over.
pub fn check(writes: &[&Execution], grants: &[Grant]) -> Vec<Violation> {
    let mut out = Vec::new();
    for w in writes {
        let t = w.sim_ms;
        let own = grants.iter().filter(|g| *g.process == *w.client && g.granted <= t).max_by_key(|g| g.granted);
        let Some(own) = own else {
            out.push(Violation::new(
                LATE_WRITES,
                Some(t),
                format!("{} ran {} {} at {t}ms holding no lease", w.client, w.command, w.args.join(" ")),
            ));
            continue;
        };
        if let Some(end) = own.expires_by.filter(|end| *end < t) {
            out.push(Violation::new(
                LATE_WRITES,
                Some(t),
                format!(
                    "{} {} {} ran at {t}ms, after its lease (granted at {}ms) had expired at the server by {end}ms",
                    w.client,
                    w.command,
                    w.args.join(" "),
                    own.granted
                ),
            ));
            continue;
        }
        let newer = grants
            .iter()
            .filter(|g| *g.process != *w.client && g.asked > own.granted && g.granted < t)
            .min_by_key(|g| g.granted);
        if let Some(n) = newer {
            out.push(Violation::new(
                LATE_WRITES,
                Some(t),
                format!(
                    "{} {} {} ran at {t}ms, after {} was granted the lock (asked at {}ms, granted at {}ms) \
                     over its own lease of {}ms",
                    w.client,
                    w.command,
                    w.args.join(" "),
                    n.process,
                    n.asked,
                    n.granted,
                    own.granted
                ),
            ));
        }
    }
    capped(out, LATE_WRITES)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn write(client: &str, value: &str, at: Millis) -> Execution {
        Execution {
            client: Arc::from(client),
            command: "RPUSH".into(),
            key: Some("ledger".into()),
            args: vec!["ledger".into(), value.into()],
            server_unix_ms: at,
            sim_ms: at,
            taken_ms: at,
            held_ms: 0,
            reply: crate::Reply::Other,
        }
    }

    fn grant(process: &str, asked: Millis, granted: Millis, expires_by: Option<Millis>) -> Grant {
        Grant { process: process.into(), asked, granted, expires_by }
    }

    fn judge(writes: &[Execution], grants: &[Grant]) -> Vec<Violation> {
        check(&writes.iter().collect::<Vec<_>>(), grants)
    }

    #[test]
    fn a_write_held_past_a_newer_grant_is_late() {
        let grants = [grant("a", 0, 2, Some(202)), grant("b", 150, 153, Some(353))];
        // Sent by a at 100 (in time), held, run at 160: after b's grant.
        let v = judge(&[write("a", "a-1", 160)], &grants);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, LATE_WRITES);
        assert!(v[0].detail.contains("after b was granted"), "{}", v[0].detail);
        // Run before b's grant completed: its order against the grant is
        // unknown, so nothing is convicted.
        assert!(judge(&[write("a", "a-1", 153)], &grants).is_empty());
        // b's own writes are in time.
        assert!(judge(&[write("b", "b-1", 160)], &grants).is_empty());
    }

    #[test]
    fn a_write_after_the_lease_expired_is_late_even_with_no_newer_holder() {
        let grants = [grant("a", 0, 2, Some(202))];
        assert!(judge(&[write("a", "a-1", 202)], &grants).is_empty());
        let v = judge(&[write("a", "a-1", 203)], &grants);
        assert!(v[0].detail.contains("had expired at the server by 202ms"), "{}", v[0].detail);
        // Unknown expiry: only newer grants judge.
        assert!(judge(&[write("a", "a-1", 900)], &[grant("a", 0, 2, None)]).is_empty());
    }

    #[test]
    fn a_write_without_a_lease_is_late_and_a_regrant_starts_afresh() {
        assert_eq!(judge(&[write("a", "x", 5)], &[]).len(), 1);
        // a lost the lock to b, then was granted again: its later write
        // belongs to the new lease.
        let grants = [grant("a", 0, 2, None), grant("b", 50, 52, None), grant("a", 100, 103, None)];
        assert!(judge(&[write("a", "a-2", 110)], &grants).is_empty());
        assert_eq!(judge(&[write("a", "a-1", 60)], &grants).len(), 1);
    }

    #[test]
    fn a_fenced_write_is_late_only_after_a_newer_holders_write() {
        let grants = [grant("a", 0, 2, Some(202)), grant("b", 150, 153, Some(353))];
        // a's held write lands after b's grant but before b's first write:
        // the store could not know; after it, it must have refused.
        let writes = [write("a", "a-1", 160), write("b", "b-1", 170)];
        assert!(check_fenced(&writes.iter().collect::<Vec<_>>(), &grants).is_empty());
        let writes = [write("b", "b-1", 170), write("a", "a-1", 180)];
        let v = check_fenced(&writes.iter().collect::<Vec<_>>(), &grants);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("after b"), "{}", v[0].detail);
        // The lease rule convicts both.
        assert_eq!(check_with(&writes.iter().collect::<Vec<_>>(), &grants, Rule::Lease).len(), 1);
    }

    #[test]
    fn grants_come_from_lease_ops() {
        let h = crate::history::History::new();
        let id = h.invoke_at(10, "a", LeaseOp::acquire("a-1", 200));
        h.complete_at(14, id, "a", EventKind::Ok, LeaseOp::granted("a-1", 200, Duration::from_millis(190)));
        let id = h.invoke_at(20, "b", LeaseOp::acquire("b-1", 200));
        h.complete_at(24, id, "b", EventKind::Fail, LeaseOp::acquire("b-1", 200));
        assert_eq!(grants(&h.events()), vec![grant("a", 10, 14, Some(214))]);
    }

    #[test]
    fn a_grant_that_raced_the_holders_own_is_not_newer() {
        // b asked before a's grant completed: which ran first at the server
        // is unknown, so a's write is not convicted on b's account.
        let grants = [grant("a", 0, 10, None), grant("b", 5, 12, None)];
        assert!(judge(&[write("a", "a-1", 20)], &grants).is_empty());
    }
}
