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

use super::{capped, Invariant, Violation};
use crate::bridge::Execution;
use crate::time::Millis;

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
    fn a_grant_that_raced_the_holders_own_is_not_newer() {
        // b asked before a's grant completed: which ran first at the server
        // is unknown, so a's write is not convicted on b's account.
        let grants = [grant("a", 0, 10, None), grant("b", 5, 12, None)];
        assert!(judge(&[write("a", "a-1", 20)], &grants).is_empty());
    }
}
