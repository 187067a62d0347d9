//! Reaps judged in the server's own order. The history knows when a call
//! was invoked and answered, not when its script ran; reaps sent a
//! millisecond apart (the edge actors') overlap, and any of them may have
//! taken a job before another ran, so a rule over the history must excuse
//! them all. The execution log is the server's order itself: each script
//! as it ran, with the clock it ran under and its reply. Replayed queue by
//! queue, it gives every active job's lease end at each reap, exactly:
//!
//! - a reap leaves no lease whose end is at or before its clock
//!   (`score <= now`: a reap that reads its millisecond one too low leaves
//!   one, on the millisecond the lease ends);
//! - a reap takes no lease whose end is after its clock (one that reads it
//!   one too high takes it a millisecond early).
//!
//! A queue where a script answered an error (a `NOSCRIPT` aside: it ran
//! nothing) is not judged from there on: its effect is unknown. Scripts
//! are told apart by their first key (the layout in `src/job_queue`) and
//! the shape of their reply.

use std::collections::BTreeMap;

use crate::bridge::Execution;
use crate::checker::{Violation, LIVENESS};
use crate::families::job_queue::JOB_QUEUE;
use crate::reply::Reply;

/// One queue as the server's scripts left it: its active jobs' lease ends
/// (server unix ms), or `None` once an effect is unknown.
type Active = Option<BTreeMap<String, u64>>;

/// Judges every reap of the execution log against the active set the
/// server's earlier scripts left (see the module docs).
pub(super) fn reaps_in_server_order(executions: &[Execution]) -> Vec<Violation> {
    let mut queues: BTreeMap<&str, Active> = BTreeMap::new();
    let mut out = Vec::new();
    for x in executions.iter().filter(|x| x.command.starts_with("EVAL")) {
        let Some(key) = x.key.as_deref() else { continue };
        let Some((queue, rest)) = split(key) else { continue };
        if matches!(&x.reply, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            continue;
        }
        let state = queues.entry(queue).or_insert_with(|| Some(BTreeMap::new()));
        let Some(active) = state else { continue };
        if matches!(x.reply, Reply::Error(_) | Reply::Other) {
            *state = None;
            continue;
        }
        // The log keeps an array's first 16 elements: a longer reap's
        // moves (the probe's hundred lapsed leases) are not all known.
        if matches!(&x.reply, Reply::Array(ids) if ids.len() >= 16) {
            *state = None;
            continue;
        }
        match rest {
            "pending" => claimed(active, &x.reply),
            "active" => {
                if let Some(v) = reaped(active, x, queue) {
                    out.push(v);
                }
            }
            _ => match rest.strip_prefix("job:") {
                Some(id) => extended_or_completed(active, id, &x.reply),
                None => *state = None,
            },
        }
    }
    out
}

/// `jobq:{queue}:rest` → `(queue, rest)`.
fn split(key: &str) -> Option<(&str, &str)> {
    let inner = key.strip_prefix("jobq:{")?;
    let (queue, rest) = inner.split_once("}:")?;
    Some((queue, rest))
}

/// A claim's reply: `{id, payload, attempt, lease_until}`, or nil.
fn claimed(active: &mut BTreeMap<String, u64>, reply: &Reply) {
    if let Reply::Array(f) = reply {
        if let (Some(Reply::Text(id)), Some(until)) = (f.first(), f.get(3).and_then(ms)) {
            active.insert(id.clone(), until);
        }
    }
}

/// An extension's reply is the new lease end (nil: refused); a
/// completion's, `{1}` when accepted (`{0, …}` refused).
fn extended_or_completed(active: &mut BTreeMap<String, u64>, id: &str, reply: &Reply) {
    match reply {
        // Text: the extension's `string.format` (an enqueue on a job key
        // answers an integer).
        Reply::Text(_) => {
            if let (Some(until), Some(end)) = (ms(reply), active.get_mut(id)) {
                *end = until;
            }
        }
        Reply::Array(f) if f.first() == Some(&Reply::Int(1)) => {
            active.remove(id);
        }
        _ => {}
    }
}

/// A lease end as the scripts write it: a decimal (text or integer).
fn ms(r: &Reply) -> Option<u64> {
    match r {
        Reply::Text(t) => t.parse().ok(),
        Reply::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// Judges reap `x` on `queue` against `active`, then takes what it moved.
fn reaped(active: &mut BTreeMap<String, u64>, x: &Execution, queue: &str) -> Option<Violation> {
    let Reply::Array(ids) = &x.reply else { return None };
    let moved: Vec<&str> =
        ids.iter().filter_map(|r| if let Reply::Text(t) = r { Some(t.as_str()) } else { None }).collect();
    let now = x.server_unix_ms;
    let early = moved.iter().find_map(|id| active.get(*id).filter(|&&end| end > now).map(|end| (*id, *end)));
    let left = active
        .iter()
        .find(|(id, &end)| end <= now && !moved.contains(&id.as_str()))
        .map(|(id, end)| (id.clone(), *end));
    for id in &moved {
        active.remove(*id);
    }
    let at = Some(x.sim_ms);
    if let Some((id, end)) = early {
        return Some(Violation::new(
            JOB_QUEUE,
            at,
            format!("{queue}: {}'s reap ran at server ms {now} and took {id}, whose lease ran until {end}: a reap takes only a lease that has lapsed (score <= now)", x.client),
        ));
    }
    left.map(|(id, end)| {
        Violation::new(
            LIVENESS,
            at,
            format!("{queue}: {}'s reap ran at server ms {now} and left {id}, whose lease had lapsed at {end} (by the server's own order of scripts): a reap takes every lapsed lease", x.client),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(key: &str, server_ms: u64, reply: Reply) -> Execution {
        Execution {
            client: "edge-0".into(),
            command: "EVALSHA".into(),
            key: Some(key.into()),
            args: Vec::new(),
            server_unix_ms: server_ms,
            sim_ms: server_ms,
            taken_ms: server_ms,
            held_ms: 0,
            reply,
        }
    }

    fn text(s: &str) -> Reply {
        Reply::Text(s.into())
    }

    /// A claim of `j` leasing until 100, extended until 200, then `reap`.
    fn log(reap: Execution) -> Vec<Execution> {
        vec![
            run("jobq:{q}:pending", 10, Reply::Array(vec![text("j"), text("p"), text("1"), text("100")])),
            run("jobq:{q}:job:j", 50, text("200")),
            reap,
        ]
    }

    #[test]
    fn a_reap_takes_a_lease_at_its_end_and_not_before() {
        let on_time = log(run("jobq:{q}:active", 200, Reply::Array(vec![text("j")])));
        assert_eq!(reaps_in_server_order(&on_time), vec![]);
        let left = log(run("jobq:{q}:active", 200, Reply::Array(vec![])));
        assert!(reaps_in_server_order(&left)[0].detail.contains("left j"));
        let early = log(run("jobq:{q}:active", 199, Reply::Array(vec![text("j")])));
        assert!(reaps_in_server_order(&early)[0].detail.contains("took j"));
        // The extension moved the end: the claim's own end does not count.
        let before = log(run("jobq:{q}:active", 150, Reply::Array(vec![])));
        assert_eq!(reaps_in_server_order(&before), vec![]);
    }

    #[test]
    fn a_completed_job_or_a_queue_with_an_unknown_effect_is_not_judged() {
        let mut done = log(run("jobq:{q}:active", 300, Reply::Array(vec![])));
        done.insert(2, run("jobq:{q}:job:j", 60, Reply::Array(vec![Reply::Int(1)])));
        assert_eq!(reaps_in_server_order(&done), vec![]);
        let mut unknown = log(run("jobq:{q}:active", 300, Reply::Array(vec![])));
        unknown.insert(2, run("jobq:{q}:job:j", 60, Reply::Error("CORRUPT x".into())));
        assert_eq!(reaps_in_server_order(&unknown), vec![]);
        // A NOSCRIPT answer ran nothing: still judged.
        let mut noscript = log(run("jobq:{q}:active", 300, Reply::Array(vec![])));
        noscript.insert(2, run("jobq:{q}:job:j", 60, Reply::Error("NOSCRIPT No matching script".into())));
        assert_eq!(reaps_in_server_order(&noscript).len(), 1);
    }
}
