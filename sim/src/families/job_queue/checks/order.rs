//! FIFO: claims take the oldest pending job, a reaped job keeps its
//! place, and a claim finds nothing only when nothing is pending. Judged
//! over the whole history, not job by job.

use super::Call;
use crate::checker::Violation;
use crate::families::job_queue::{CLAIM, ENQUEUE, JOB_QUEUE, PRODUCER, REAP};
use crate::history::Millis;
use crate::outcome::SituationName;

/// FIFO: a claim takes the pending job enqueued first, a reaped job
/// goes back to its original place, and a claim returns `None` only when
/// no job is pending. The producer enqueues one job at a time, so of two
/// of its jobs added in turn the first has the lower sequence number. A
/// claim that ran (server clock) at `r` and returned job J (or nothing) is
/// wrong when an earlier job K (any job) was definitely pending at `r`: K
/// entered the pending set (its enqueue, or a reap that returned it)
/// before `r`, and no claim that returned K can have run from then to
/// `r`. Any claim of unknown outcome invoked by `r` may have taken K: then
/// nothing is judged.
///
/// Reaches `claim-found-nothing-after-an-enqueue` for a `None` judged
/// against at least one job that had entered the queue before it ran.
pub(super) fn claimed_in_order(
    calls: &[Call<'_>],
    unknown_claims: &[Millis],
    reached: &mut Vec<SituationName>,
) -> Vec<Violation> {
    // When a call ran: from the execution log, else no later than its return.
    let ran = |c: &Call<'_>| c.ran.unwrap_or(c.returned());
    let enqueued: Vec<&str> = calls
        .iter()
        .filter(|c| c.verb == ENQUEUE && c.process == PRODUCER)
        .filter(|c| c.ok().is_some_and(|(_, d)| d.accepted == Some(true)))
        .filter_map(|c| c.args.id.as_deref())
        .collect();
    let place = |id: &str| enqueued.iter().position(|j| *j == id);
    // Claims that returned a job: (job, earliest and latest run).
    let claimed: Vec<(&str, Millis, Millis)> = calls
        .iter()
        .filter(|c| c.verb == CLAIM)
        .filter_map(|c| {
            let id = c.ok()?.1.id.as_deref()?;
            Some((id, c.ran.unwrap_or(c.invoked), ran(c)))
        })
        .collect();
    let mut out = Vec::new();
    for c in calls.iter().filter(|c| c.verb == CLAIM) {
        let (Some((_, d)), Some(r)) = (c.ok(), c.ran) else { continue };
        // A claim that took J answers for the jobs ahead of J; one that
        // found nothing, for every job.
        let ahead = match d.id.as_deref() {
            Some(job) => match place(job) {
                Some(j) => &enqueued[..j],
                None => continue,
            },
            None => &enqueued[..],
        };
        if unknown_claims.iter().any(|&u| u <= r) {
            continue;
        }
        // Whether some job ahead had entered the queue before the claim ran.
        let mut weighed = false;
        for earlier in ahead {
            // The last time it entered the pending set before `r`.
            let entered = calls
                .iter()
                .filter(|e| match e.ok() {
                    Some((_, d)) if e.verb == ENQUEUE => {
                        e.args.id.as_deref() == Some(earlier) && d.accepted == Some(true)
                    }
                    Some((_, d)) if e.verb == REAP => d.ids.iter().any(|x| x == earlier),
                    _ => false,
                })
                .map(ran)
                .filter(|&t| t < r)
                .max();
            let Some(entered) = entered else { continue };
            weighed = true;
            let left = claimed.iter().any(|&(k, lo, hi)| k == *earlier && lo <= r && hi >= entered);
            if !left {
                let took = match d.id.as_deref() {
                    Some(job) => format!("took {job}, but {earlier}, enqueued before it,"),
                    None => format!("found nothing pending, but {earlier}"),
                };
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(c.returned()),
                    format!(
                        "{}'s claim ran at {r}ms (server clock) and {took} had been pending since {entered}ms and nobody claimed it meanwhile: claims take the oldest job first, a reaped job keeps its place, and a claim finds nothing only when nothing is pending",
                        c.process
                    ),
                ));
                break;
            }
        }
        if weighed && d.id.is_none() {
            reached.push(SituationName::new("claim-found-nothing-after-an-enqueue"));
        }
    }
    out
}
