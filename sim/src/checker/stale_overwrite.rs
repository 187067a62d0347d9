//! `no-stale-overwrite`: the resource half of fencing.
//!
//! Per key, over `Write` operations that carry a token:
//!
//! - once the store has accepted token t (the accepting write completed), it
//!   never accepts a write with t' < t invoked afterwards. Equal tokens are
//!   fine: the current holder may write repeatedly (reference case 12);
//! - every read of a fenced key returns one write's value and token,
//!   current at some instant of the read's span (`store_reads`: reads made
//!   while writes are in flight, and the final one);
//! - the final value of an unfenced key (the last successful `Read`)
//!   belongs to a write whose token is at least the highest token the
//!   store definitely accepted.
//!
//! Rejections are judged too (a store that refuses good writes is as broken
//! as one that accepts stale ones). A fenced write rejected with
//! `highest_seen = h` needs:
//!
//! - `h` greater than its own token (equal tokens are accepted);
//! - some write carrying `h` that could have been accepted before the
//!   rejection completed: accepted and invoked before then, or of unknown
//!   outcome (`Info`, or never completed: a dropped body) invoked before then;
//! - no later acceptance of a token below `h` invoked after the rejection
//!   completed (the store's highest never goes down).
//!
//! A write whose outcome is unknown (`Info`) may land at any later time, so it
//! is never convicted by the first rule; but if its value turns up in a
//! read with a stale token, the read rules catch it. An unfenced
//! store reports every write as accepted, so a stale holder's late write
//! breaks both rules: that is `fencing-unfenced`.

use std::collections::BTreeMap;

use super::store_reads::Candidate;
use super::{completed, order, Violation, NO_STALE_OVERWRITE};
use crate::history::{Event, EventKind, Millis, Op, WriteResult};

/// A write the store accepted: who wrote with which token, and when.
type Accepted<'a> = order::Stamped<'a>;

/// A fenced write the store rejected: (completion, invoked, token,
/// `highest_seen`).
type Rejection<'a> = (&'a Event, Millis, u64, u64);

/// What the completed operations say per key: the writes the store
/// accepted, every write's tokens by (key, value) (definite or not: used to
/// attribute the final value when the store does not return a token with
/// it), and the last successful read with its invoke.
struct Outcomes<'a> {
    accepted: BTreeMap<&'a str, Vec<Accepted<'a>>>,
    written: BTreeMap<(&'a str, &'a str), Vec<u64>>,
    last_read: BTreeMap<&'a str, (&'a Event, Millis)>,
}

/// Checks every key in `events`.
pub(crate) fn check(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    let (candidates, rejections) = fenced_writes(events);
    for rejection in &rejections {
        justified_rejection(rejection, &candidates, &mut out);
    }
    super::store_reads::check(events, &candidates, &mut out);
    let fenced: Vec<&str> = candidates.iter().map(|c| c.0).collect();
    let o = outcomes(events);
    for (key, writes) in &o.accepted {
        accepted_in_order(key, writes, &mut out);
        final_value(key, writes, &o, &fenced, &mut out);
    }
    super::capped(out, NO_STALE_OVERWRITE)
}

/// Every fenced write that may have been applied, and every one the store
/// rejected.
fn fenced_writes(events: &[Event]) -> (Vec<Candidate<'_>>, Vec<Rejection<'_>>) {
    let mut candidates: Vec<Candidate<'_>> = Vec::new();
    let mut rejections: Vec<Rejection<'_>> = Vec::new();
    let mut pending: BTreeMap<u64, &Event> = BTreeMap::new();
    for e in events {
        if e.kind == EventKind::Invoke && matches!(e.op, Op::Write { fenced: true, token: Some(_), .. }) {
            pending.insert(e.op_id.0, e);
        } else if let Some(inv) = pending.remove(&e.op_id.0) {
            let Op::Write { key, value, token: Some(token), result, .. } = &e.op else { continue };
            match (e.kind, result) {
                (EventKind::Ok, Some(WriteResult::Accepted)) => {
                    candidates.push((key.as_str(), *token, value.as_str(), inv.time, Some(e.time)))
                }
                (EventKind::Ok, Some(WriteResult::Rejected { highest_seen })) => {
                    rejections.push((e, inv.time, *token, *highest_seen))
                }
                (EventKind::Info, _) => candidates.push((key.as_str(), *token, value.as_str(), inv.time, None)),
                _ => {}
            }
        }
    }
    for inv in pending.values() {
        if let Op::Write { key, value, token: Some(token), .. } = &inv.op {
            candidates.push((key.as_str(), *token, value.as_str(), inv.time, None));
        }
    }
    (candidates, rejections)
}

/// A rejection citing `highest`: higher than the write's own token, some
/// write carrying it could have been accepted by then, and no lower token
/// is accepted after.
fn justified_rejection(rejection: &Rejection<'_>, candidates: &[Candidate<'_>], out: &mut Vec<Violation>) {
    let &(e, _, token, highest) = rejection;
    let Op::Write { key, .. } = &e.op else { return };
    if highest <= token {
        out.push(Violation::new(
            NO_STALE_OVERWRITE,
            Some(e.time),
            format!("{key}: store rejected token {token} from {} saying the highest it accepted is {highest}, which is not higher", e.process),
        ));
        return;
    }
    if !candidates.iter().any(|&(k, t, _, inv, _)| k == key && t == highest && inv < e.time) {
        out.push(Violation::new(
            NO_STALE_OVERWRITE,
            Some(e.time),
            format!(
                "{key}: store rejected token {token} from {} at {}ms citing highest {highest}, but no write with token {highest} could have been accepted by then",
                e.process, e.time
            ),
        ));
    }
    for &(k, t, _, inv, acc) in candidates {
        if k == key && t < highest && acc.is_some() && inv > e.time {
            out.push(Violation::new(
                NO_STALE_OVERWRITE,
                acc,
                format!(
                    "{key}: store accepted token {t} (invoked {inv}ms) after rejecting token {token} at {}ms because it had accepted {highest}",
                    e.time
                ),
            ));
        }
    }
}

/// The accepted writes, the written tokens and the last read, per key.
fn outcomes(events: &[Event]) -> Outcomes<'_> {
    let mut o = Outcomes { accepted: BTreeMap::new(), written: BTreeMap::new(), last_read: BTreeMap::new() };
    for c in completed(events) {
        match &c.done.op {
            Op::Write { key, value, token: Some(token), result, .. } => {
                if matches!(c.done.kind, EventKind::Ok | EventKind::Info) {
                    o.written.entry((key.as_str(), value.as_str())).or_default().push(*token);
                }
                if c.done.kind == EventKind::Ok && *result == Some(WriteResult::Accepted) {
                    o.accepted.entry(key.as_str()).or_default().push(Accepted {
                        process: &c.done.process,
                        invoked: c.invoke_time,
                        done: c.done.time,
                        token: *token,
                    });
                }
            }
            Op::Read { key, .. } if c.done.kind == EventKind::Ok => {
                o.last_read.insert(key.as_str(), (c.done, c.invoke_time));
            }
            _ => {}
        }
    }
    o
}

/// Rule 1, in real-time order (the same sweep as the token checker).
fn accepted_in_order(key: &str, writes: &[Accepted<'_>], out: &mut Vec<Violation>) {
    for (a, b) in order::regressions(writes) {
        out.push(Violation::new(
            NO_STALE_OVERWRITE,
            Some(b.done),
            format!(
                "{key}: store accepted token {} from {} at {}ms after it had accepted token {} from {} at {}ms",
                b.token, b.process, b.done, a.token, a.process, a.done
            ),
        ));
    }
}

/// The final value of an unfenced key, against writes completed before
/// the read (a fenced key's reads are `store_reads`').
fn final_value(key: &str, writes: &[Accepted<'_>], o: &Outcomes<'_>, fenced: &[&str], out: &mut Vec<Violation>) {
    // A key fenced writes went to: every read of it, this one too, is
    // judged by the read rules (`store_reads`).
    if fenced.contains(&key) {
        return;
    }
    let Some((read, read_invoked)) = o.last_read.get(key) else { return };
    let Some(highest) = writes.iter().filter(|w| w.done < *read_invoked).map(|w| w.token).max() else {
        return;
    };
    let Op::Read { value, token, .. } = &read.op else { return };
    let final_token = match (value, token) {
        (None, _) => {
            out.push(Violation::new(
                NO_STALE_OVERWRITE,
                Some(read.time),
                format!("{key}: final read found nothing, but token {highest} had been accepted"),
            ));
            return;
        }
        (Some(_), Some(t)) => Some(*t),
        // Unfenced: attribute by value (scenarios write unique values).
        (Some(v), None) => o.written.get(&(key, v.as_str())).and_then(|ts| ts.iter().max().copied()),
    };
    match final_token {
        Some(t) if t >= highest => {}
        Some(t) => out.push(Violation::new(
            NO_STALE_OVERWRITE,
            Some(read.time),
            format!(
                "{key}: final value {:?} was written with token {t}, but token {highest} had been accepted: a stale write overwrote a newer one",
                value.as_deref().unwrap_or("")
            ),
        )),
        None => out.push(Violation::new(
            NO_STALE_OVERWRITE,
            Some(read.time),
            format!("{key}: final value {:?} matches no recorded write", value.as_deref().unwrap_or("")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[allow(clippy::too_many_arguments)]
    fn write(
        h: &History,
        p: &str,
        t0: u64,
        t1: u64,
        token: u64,
        fenced: bool,
        kind: EventKind,
        result: Option<WriteResult>,
    ) {
        let op =
            |result| Op::Write { key: "k".into(), value: format!("{p}-{token}"), token: Some(token), fenced, result };
        let id = h.invoke_at(t0, p, op(None));
        h.complete_at(t1, id, p, kind, op(result));
    }

    fn read(h: &History, t: u64, value: &str, token: Option<u64>) {
        let op = |value: Option<String>, token| Op::Read { key: "k".into(), value, token };
        let id = h.invoke_at(t, "checker", op(None, None));
        h.ok(id, "checker", op(Some(value.to_string()), token));
    }

    const ACC: Option<WriteResult> = Some(WriteResult::Accepted);

    #[test]
    fn fenced_store_passes() {
        let h = History::new();
        // Case 13: the stale writer (token 1) writes before the new holder.
        write(&h, "a", 0, 2, 1, true, EventKind::Ok, ACC);
        write(&h, "b", 5, 6, 2, true, EventKind::Ok, ACC);
        write(&h, "b", 7, 8, 2, true, EventKind::Ok, ACC); // same token again: fine
        write(&h, "a", 10, 12, 1, true, EventKind::Ok, Some(WriteResult::Rejected { highest_seen: 2 }));
        // A timed-out stale write stays unknown; the store refused it anyway.
        write(&h, "a", 13, 500, 1, true, EventKind::Info, None);
        read(&h, 600, "b-2", Some(2));
        assert_eq!(check(&h.events()), vec![]);
    }

    #[test]
    fn unfenced_late_write_fails_both_rules() {
        let h = History::new();
        write(&h, "b", 0, 2, 2, false, EventKind::Ok, ACC);
        write(&h, "a", 10, 12, 1, false, EventKind::Ok, ACC);
        read(&h, 20, "a-1", None);
        let v = check(&h.events());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].detail.contains("accepted token 1 from a at 12ms after it had accepted token 2"), "{v:?}");
        assert!(v[1].detail.contains("final value \"a-1\" was written with token 1"), "{v:?}");
    }

    #[test]
    fn unjustified_rejections_fail() {
        let h = History::new();
        write(&h, "a", 0, 2, 2, true, EventKind::Ok, ACC);
        // Equal token rejected; a rejection citing a token nobody wrote.
        write(&h, "a", 5, 6, 2, true, EventKind::Ok, Some(WriteResult::Rejected { highest_seen: 2 }));
        write(&h, "b", 7, 8, 1, true, EventKind::Ok, Some(WriteResult::Rejected { highest_seen: 5 }));
        let v = check(&h.events());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].detail.contains("which is not higher"), "{v:?}");
        assert!(v[1].detail.contains("no write with token 5"), "{v:?}");
    }

    #[test]
    fn a_final_value_that_no_write_carried_fails() {
        let h = History::new();
        write(&h, "a", 0, 2, 2, true, EventKind::Ok, ACC);
        read(&h, 20, "b-2", Some(2));
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn an_unknown_stale_write_that_landed_is_caught_by_the_final_read() {
        let h = History::new();
        write(&h, "a", 0, 100, 1, false, EventKind::Info, None);
        write(&h, "b", 10, 12, 2, false, EventKind::Ok, ACC);
        read(&h, 200, "a-1", None);
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, NO_STALE_OVERWRITE);
    }
}
