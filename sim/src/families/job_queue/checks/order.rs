//! FIFO: claims take the oldest pending job, and a reaped job keeps its
//! place. Judged over the whole history, not job by job.

use super::Call;
use crate::checker::Violation;
use crate::families::job_queue::{CLAIM, ENQUEUE, JOB_QUEUE, PRODUCER, REAP};
use crate::history::Millis;

/// FIFO: a claim takes the pending job enqueued first, and a reaped job
/// goes back to its original place. The producer enqueues one job at a
/// time, so of two of its jobs added in turn the first has the lower
/// sequence number. A claim that ran (server clock) at `r` and returned
/// job J is wrong when an earlier job K was definitely pending at `r`: K
/// entered the pending set (its enqueue, or a reap that returned it) before
/// `r`, and no claim that returned K can have run from then to `r`. Any
/// claim of unknown outcome invoked by `r` may have taken K: then nothing
/// is judged.
pub(super) fn claimed_in_order(calls: &[Call<'_>], unknown_claims: &[Millis]) -> Vec<Violation> {
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
    let claimed: Vec<(&str, Millis, Millis, &Call<'_>)> = calls
        .iter()
        .filter(|c| c.verb == CLAIM)
        .filter_map(|c| {
            let id = c.ok()?.1.id.as_deref()?;
            Some((id, c.ran.unwrap_or(c.invoked), ran(c), c))
        })
        .collect();
    let mut out = Vec::new();
    for &(job, _, _, c) in &claimed {
        let (Some(j), Some(r)) = (place(job), c.ran) else { continue };
        if unknown_claims.iter().any(|&u| u <= r) {
            continue;
        }
        for earlier in &enqueued[..j] {
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
            let left = claimed.iter().any(|&(k, lo, hi, _)| k == *earlier && lo <= r && hi >= entered);
            if !left {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(c.returned()),
                    format!(
                        "{}'s claim ran at {r}ms (server clock) and took {job}, but {earlier}, enqueued before it, had been pending since {entered}ms and nobody claimed it meanwhile: claims take the oldest job first, and a reaped job keeps its place",
                        c.process
                    ),
                ));
                break;
            }
        }
    }
    out
}
