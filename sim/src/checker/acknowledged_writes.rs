//! `acknowledged-writes`: a store that waits for its replicas
//! (`FencedStore::acknowledged`) never reports a write accepted that no
//! replica has.
//!
//! An acknowledged write exists for one reason: it must survive a failover.
//! A store that skips the `WAIT`, reads its answer wrongly or sends it on a
//! connection that wrote nothing reports `Accepted` for a write that lives
//! on the primary alone, and the failover loses it silently; the final
//! value usually hides the loss, because the next leader writes over it with
//! a higher token (`no-stale-overwrite` judges only the order of tokens).
//!
//! In the simulation replication is exact (the bridge's barrier): while a
//! node's replication is cut, none of its replicas receives anything, so a
//! write sent after the cut began and answered before it ended (or before
//! the node's primary crashed) cannot have been confirmed by a replica. Such
//! a write answered `Accepted` is the violation; the correct answer is
//! `Error::NotAcknowledged`, recorded as an unknown outcome (the write was
//! applied on the primary and may be lost). Writes that straddle an edge of
//! the span are not judged.
//!
//! The other way round ([`check_refusals`]): outside every fault on the
//! node its replicas are linked, and the barrier has each write confirmed
//! before it answers, so the `WAIT` that follows counts them. A call refused
//! `NotAcknowledged` ([`Op::NotAcknowledged`]) with no fault on the node
//! anywhere between its invoke and its answer (an acquire or a write, of a
//! lock or a store that waits) was refused for nothing: an acknowledgement
//! that needs one replica too many, or counts the wrong connection's writes,
//! refuses every acquire and the name stays free for nobody.

use super::{completed, Invariant, Violation, ACKNOWLEDGED_WRITES};
use crate::history::{Event, EventKind, Millis, Op, WriteResult};

/// The invariant, for the registry rows of the scenarios that judge it.
pub(crate) const DECLARED: &[(Invariant, &str)] = &[(
    ACKNOWLEDGED_WRITES,
    "an acknowledgement is honest both ways: never a write reported accepted that no replica received (one made while replication was cut), never an acquire or write refused NotAcknowledged while every replica was linked",
)];

/// Judges the fenced writes of `events` against `unreplicated`: the spans
/// `(start, end)` during which the node the store writes to had no replica
/// receiving its writes.
pub(crate) fn check(events: &[Event], unreplicated: &[(Millis, Millis)]) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in completed(events) {
        let Op::Write { key, value, token: Some(token), fenced: true, result: Some(WriteResult::Accepted) } =
            &c.done.op
        else {
            continue;
        };
        if c.done.kind != EventKind::Ok {
            continue;
        }
        let inside = |&(start, end): &(Millis, Millis)| c.invoke_time > start && c.done.time < end;
        if let Some((start, end)) = unreplicated.iter().find(|s| inside(s)) {
            out.push(Violation::new(
                ACKNOWLEDGED_WRITES,
                Some(c.done.time),
                format!(
                    "{key}: {} wrote {value:?} with token {token} at {}ms and the acknowledged store answered Accepted at {}ms, \
                     but no replica received anything from {start}ms to {end}ms: a failover loses a write reported as confirmed",
                    c.done.process, c.invoke_time, c.done.time
                ),
            ));
        }
    }
    super::capped(out, ACKNOWLEDGED_WRITES)
}

/// Judges every [`Op::NotAcknowledged`] of `events` against `faulted`: the
/// spans of the faults on the node the acknowledgement waited on
/// ([`crate::nemesis::Schedule::unlinked_spans`]).
pub(crate) fn check_refusals(events: &[Event], faulted: &[(Millis, Millis)]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Op::NotAcknowledged { key, invoked } = &e.op else { continue };
        let touched = faulted.iter().any(|&(s, end)| s <= e.time && end >= *invoked);
        if !touched {
            out.push(Violation::new(
                ACKNOWLEDGED_WRITES,
                Some(e.time),
                format!(
                    "{key}: {} was refused NotAcknowledged at {}ms for a call invoked at {invoked}ms, but nothing touched the node in between: its replica was linked and had confirmed every write",
                    e.process, e.time
                ),
            ));
        }
    }
    super::capped(out, ACKNOWLEDGED_WRITES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn write(h: &History, at: Millis, done: Millis, result: WriteResult, ok: bool) {
        let op = |result| Op::Write { key: "r".into(), value: format!("v@{at}"), token: Some(7), fenced: true, result };
        let id = h.invoke_at(at, "n0", op(None));
        if ok {
            h.complete_at(done, id, "n0", EventKind::Ok, op(Some(result)));
        } else {
            h.complete_at(done, id, "n0", EventKind::Info, op(None));
        }
    }

    #[test]
    fn an_accepted_write_inside_a_cut_is_a_violation_and_one_outside_is_not() {
        let h = History::new();
        write(&h, 100, 102, WriteResult::Accepted, true); // before the cut
        write(&h, 810, 812, WriteResult::Accepted, true); // inside: convicted
        write(&h, 820, 870, WriteResult::Accepted, false); // NotAcknowledged: unknown
        write(&h, 890, 892, WriteResult::Rejected { highest_seen: 9 }, true); // waits for nothing
        write(&h, 1490, 1510, WriteResult::Accepted, true); // straddles the end
        let v = check(&h.events(), &[(800, 1500)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("at 810ms") && v[0].detail.contains("from 800ms to 1500ms"), "{v:?}");
        assert!(check(&h.events(), &[]).is_empty());
    }

    #[test]
    fn a_refusal_with_nothing_on_the_node_is_a_violation() {
        let h = History::new();
        let refused = |invoked: Millis, at: Millis| {
            h.observe_at(at, "c0", Op::NotAcknowledged { key: "lock:{l}".into(), invoked });
        };
        refused(100, 102); // replicas linked throughout: convicted
        refused(790, 805); // the cut began during the call
        refused(1000, 1003); // inside the cut
        refused(1499, 1502); // ends as the cut does
        let v = check_refusals(&h.events(), &[(800, 1500)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("invoked at 100ms"), "{v:?}");
    }
}
