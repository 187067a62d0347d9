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

use super::{completed, Violation, ACKNOWLEDGED_WRITES};
use crate::history::{Event, EventKind, Millis, Op, WriteResult};

/// Judges the fenced writes of `events` against `unreplicated`: the spans
/// `(start, end)` during which the node the store writes to had no replica
/// receiving its writes.
pub fn check(events: &[Event], unreplicated: &[(Millis, Millis)]) -> Vec<Violation> {
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
}
