//! `self-fencing` for an election whose leaders demote themselves at their
//! lease's local deadline: no two nodes believe they lead at once, and the
//! deadline a leader trusts is measured from the right instant.

use std::collections::BTreeMap;

use crate::checker::{Violation, MAX_REPORTED, SELF_FENCING};
use crate::families::election::{reigns, ElectionOp, Role};
use crate::history::{Event, EventKind, Millis};

/// `self-fencing` for an election whose leaders demote themselves at their
/// lease's local deadline ([`Demotion::AtDeadline`]): no two nodes believe
/// they lead at the same simulated instant. A reign ends at the node's
/// recorded deadline even while it is frozen (see `reigns`), so this is
/// exactly the promise: a leader stops trusting its lease before anyone else
/// can be granted it. (Under the reference's renew-tick demotion the same
/// overlap is the documented split-brain window, measured, not judged.)
///
/// [`Demotion::AtDeadline`]: redis_primitives::election::Demotion::AtDeadline
pub(crate) fn check_self_fencing(events: &[Event], election: &str) -> Vec<Violation> {
    let rs = reigns(events, election);
    let mut out = Vec::new();
    for (i, a) in rs.iter().enumerate() {
        for b in &rs[i + 1..] {
            let (from, to) = (a.from.max(b.from), a.to.min(b.to));
            if a.process != b.process && to > from {
                out.push(Violation::new(
                    SELF_FENCING,
                    Some(from),
                    format!(
                        "{election}: {} (epoch {}, {}..{}ms) and {} (epoch {}, {}..{}ms) both believed they led for {}ms",
                        a.process,
                        a.epoch.map_or("?".into(), |e| e.to_string()),
                        a.from,
                        a.to,
                        b.process,
                        b.epoch.map_or("?".into(), |e| e.to_string()),
                        b.from,
                        b.to,
                        to - from
                    ),
                ));
            }
        }
    }
    out.truncate(MAX_REPORTED);
    out
}

/// `self-fencing`, the deadline itself: a leader may trust its lease until
/// at most `sent + lease − drift`, where `sent` is when the acquire or
/// renewal that confirmed it was sent. The history does not see the
/// library's sends, but it sees when the node first reports the deadline
/// (`t`, at or after the reply), and every reply comes at least
/// `min_round_trip_ms` after its send. So a reported deadline later than
/// `t − min_round_trip + lease − drift` was measured from the wrong instant
/// (the reply, say) or with the wrong allowance. `trusted_ms` is
/// `lease − drift` rounded up to whole milliseconds; the drift comes from
/// the documented rule (a factor of the lease plus a constant), not from
/// the library's own arithmetic.
pub(crate) fn check_deadlines(
    events: &[Event],
    election: &str,
    trusted_ms: Millis,
    min_round_trip_ms: Millis,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<(&str, u64, Millis), ()> = BTreeMap::new();
    for e in events {
        let Some(ElectionOp::Role { election: el, role: Role::Leader, epoch, deadline: Some(d), .. }) =
            e.op.family::<ElectionOp>()
        else {
            continue;
        };
        if el != election || e.kind != EventKind::Ok {
            continue;
        }
        if seen.insert((e.process.as_str(), epoch.unwrap_or(0), *d), ()).is_some() {
            continue;
        }
        let latest = (e.time + trusted_ms).saturating_sub(min_round_trip_ms);
        if *d > latest {
            out.push(Violation::new(
                SELF_FENCING,
                Some(e.time),
                format!(
                    "{election}: {} reported at {}ms that it trusts epoch {} until {d}ms, but a lease confirmed by a reply at or before {}ms was sent by {}ms and may be trusted until {latest}ms at most (lease - drift = {trusted_ms}ms)",
                    e.process,
                    e.time,
                    epoch.map_or("?".into(), |x| x.to_string()),
                    e.time,
                    e.time.saturating_sub(min_round_trip_ms),
                ),
            ));
        }
    }
    out.truncate(MAX_REPORTED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[test]
    fn a_deadline_measured_from_the_reply_is_caught() {
        let h = History::new();
        let role = |deadline| ElectionOp::Role {
            election: "e".into(),
            role: Role::Leader,
            epoch: Some(1),
            deadline: Some(deadline),
        };
        // Sent at 100, reply at 104, seen at 104: 100 + 394 is sound.
        h.observe_at(104, "a", role(494));
        assert!(check_deadlines(&h.events(), "e", 394, 2).is_empty());
        // Measured from the reply: 104 + 394.
        h.observe_at(204, "a", role(598));
        let v = check_deadlines(&h.events(), "e", 394, 2);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, SELF_FENCING);
    }
}
