//! The checks of one job: its claims, completions, extensions and reaps
//! against each other, and its state at the end. Each check is one method
//! of [`Job`], in the order they report.

use super::{Call, Claimed};
use crate::checker::{Violation, LIVENESS};
use crate::families::job_queue::record::{payload_of, JobVerb};
use crate::families::job_queue::{AUDITOR, CLAIM, COMPLETE, ENQUEUE, EXTEND, JOB_QUEUE, PRODUCER, REAP, STATE};
use crate::history::{EventKind, Millis};
use crate::situation::SituationName;

/// Everything the history says about one accepted job, gathered once for
/// the job's checks.
pub(super) struct Job<'a> {
    pub(super) id: &'a str,
    calls: &'a [Call<'a>],
    unknown_claims: &'a [Millis],
    lease_ms: u64,
    /// Claims that returned it.
    pub(super) claims: Vec<Claimed<'a>>,
    completes: Vec<&'a Call<'a>>,
    /// Completions accepted.
    accepted: Vec<&'a Call<'a>>,
    /// Reaps that may have returned it.
    reaps: Vec<&'a Call<'a>>,
}

impl<'a> Job<'a> {
    /// Gathers job `id` from `calls`.
    pub(super) fn new(id: &'a str, calls: &'a [Call<'a>], unknown_claims: &'a [Millis], lease_ms: u64) -> Job<'a> {
        let claims: Vec<Claimed<'a>> = calls
            .iter()
            .filter(|c| c.verb == CLAIM)
            .filter_map(|c| {
                c.ok().filter(|(_, d)| d.id.as_deref() == Some(id)).map(|(t, d)| Claimed {
                    invoked: c.invoked,
                    returned: t,
                    attempt: d.attempt,
                    lease_until: d.lease_until,
                    process: c.process,
                    payload: d.payload.clone(),
                    ran: c.ran,
                })
            })
            .collect();
        let completes = of(calls, COMPLETE, id);
        let accepted: Vec<&Call<'_>> =
            completes.iter().copied().filter(|c| c.ok().is_some_and(|(_, d)| d.accepted == Some(true))).collect();
        let reaps: Vec<&Call<'_>> = calls
            .iter()
            .filter(|c| c.verb == REAP && (c.ok().is_none_or(|(_, d)| d.ids.iter().any(|x| x == id))) && c.maybe())
            .collect();
        Job { id, calls, unknown_claims, lease_ms, claims, completes, accepted, reaps }
    }

    /// Judges the job; `fenced` adds what only the correct queue promises.
    pub(super) fn judge(&self, fenced: bool, out: &mut Vec<Violation>, reached: &mut Vec<SituationName>) {
        if self.claims.len() > 1 {
            reached.push(SituationName::new("job-run-twice"));
        }
        self.completed_at_most_once(out);
        if !fenced {
            return;
        }
        self.claimed_attempts(out);
        self.attempts_increase(out);
        self.completions(out, reached);
        self.extensions(out, reached);
        self.reaps_of_live_leases(out, reached);
        self.lapsed_leases_left(out);
        self.final_state(out);
    }

    /// Something in the history may have ended `attempt`'s claim before `by`.
    fn superseded(&self, attempt: Option<u64>, by: Millis) -> bool {
        self.claims.iter().any(|c| c.invoked < by && c.attempt > attempt)
            || self.unknown_claims.iter().any(|&t| t < by)
            || self.reaps.iter().any(|r| r.invoked < by)
            || self.completes.iter().any(|c| c.invoked < by && c.maybe() && c.args.attempt != attempt)
    }

    /// At most one completion is accepted per job (judged for both queues).
    fn completed_at_most_once(&self, out: &mut Vec<Violation>) {
        let id = self.id;
        if self.accepted.len() > 1 {
            out.push(wrong(
                self.accepted[1].returned(),
                format!(
                    "{id}: {} completions accepted ({}): a job is completed at most once",
                    self.accepted.len(),
                    self.accepted
                        .iter()
                        .map(|c| format!("{} at {}ms", c.process, c.returned()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }

    /// Each claim's attempt, payload and lease are the ones its place in
    /// the history gives.
    fn claimed_attempts(&self, out: &mut Vec<Violation>) {
        let id = self.id;
        let lease_ms = self.lease_ms;
        // Each claim adds one to the attempt: the k-th claim of a job has
        // attempt k, counted with the claims that may have run first.
        for k in &self.claims {
            let before = self.claims.iter().filter(|o| o.returned < k.invoked).count() as u64;
            let maybe = self.claims.iter().filter(|o| !std::ptr::eq(*o, k) && o.invoked < k.returned).count() as u64
                + self.unknown_claims.iter().filter(|&&t| t < k.returned).count() as u64;
            if let Some(a) = k.attempt.filter(|&a| a < before + 1 || a > maybe + 1) {
                out.push(wrong(k.returned, format!("{id}: {} claimed attempt {a} at {}ms; {before} claim(s) had returned before it began and at most {maybe} may have run before it, so it must be between {} and {}", k.process, k.returned, before + 1, maybe + 1)));
            }
            if k.payload.as_deref() != Some(payload_of(id).as_str()) {
                out.push(wrong(
                    k.returned,
                    format!(
                        "{id}: {} claimed it with payload {:?}, enqueued as {:?}",
                        k.process,
                        k.payload,
                        payload_of(id)
                    ),
                ));
            }
            // The lease runs from when the script ran, by the server's clock.
            if let (Some(until), Some(ran)) = (k.lease_until, k.ran) {
                if until != ran + lease_ms {
                    // Live, `ran` is the proxy's reading of the server's
                    // clock as the reply passed it: weighed by the miss.
                    let why = format!("{id}: {}'s claim ran at {ran}ms (server clock) with a {lease_ms}ms lease, but its lease ends at {until}ms", k.process);
                    out.push(wrong(k.returned, why).missed_by_ms(until.abs_diff(ran + lease_ms)));
                }
            }
        }
    }

    /// Attempts increase in real-time order.
    fn attempts_increase(&self, out: &mut Vec<Violation>) {
        let id = self.id;
        // Attempts increase in real-time order.
        for a in &self.claims {
            for b in &self.claims {
                if a.returned < b.invoked && a.attempt >= b.attempt {
                    out.push(wrong(b.returned, format!("{id}: claimed with attempt {:?} at {}ms after a claim with attempt {:?} had returned at {}ms", b.attempt, b.returned, a.attempt, a.returned)));
                }
            }
        }
    }

    /// An accepted completion carries the latest attempt; a refused one was
    /// superseded.
    fn completions(&self, out: &mut Vec<Violation>, reached: &mut Vec<SituationName>) {
        let id = self.id;
        for c in &self.completes {
            let Some((t, d)) = c.ok() else { continue };
            match d.accepted {
                Some(true) => {
                    if let Some(newer) =
                        self.claims.iter().find(|k| k.returned < c.invoked && k.attempt > c.args.attempt)
                    {
                        out.push(wrong(t, format!("{id}: {} completed attempt {:?} at {t}ms, accepted, though attempt {:?} was claimed by {} at {}ms", c.process, c.args.attempt, newer.attempt, newer.process, newer.returned)));
                    }
                }
                Some(false) => {
                    reached.push(SituationName::new("stale-completion-refused"));
                    let done_before =
                        self.completes.iter().any(|o| !std::ptr::eq(*o, *c) && o.invoked < t && o.maybe());
                    if !self.superseded(c.args.attempt, t) && !done_before {
                        out.push(wrong(t, format!("{id}: {} had its completion of attempt {:?} refused at {t}ms ({:?}), with nothing in the history that superseded its claim", c.process, c.args.attempt, d.state)));
                    }
                }
                None => {}
            }
        }
    }

    /// An accepted extension sets the lease from when it ran, for a live
    /// claim of the latest attempt; a refused one was superseded.
    fn extensions(&self, out: &mut Vec<Violation>, reached: &mut Vec<SituationName>) {
        let id = self.id;
        let lease_ms = self.lease_ms;
        for x in of(self.calls, EXTEND, id) {
            let Some((t, d)) = x.ok() else { continue };
            match d.accepted {
                Some(true) => {
                    reached.push(SituationName::new("claim-extended"));
                    if let (Some(until), Some(ran)) = (d.lease_until, x.ran) {
                        let lease_ms = x.args.lease_ms.unwrap_or(lease_ms);
                        if until != ran + lease_ms {
                            let why = format!("{id}: {}'s extension ran at {ran}ms (server clock) for {lease_ms}ms, but the lease ends at {until}ms", x.process);
                            out.push(wrong(t, why).missed_by_ms(until.abs_diff(ran + lease_ms)));
                        }
                    }
                    if let Some(newer) =
                        self.claims.iter().find(|k| k.returned < x.invoked && k.attempt > x.args.attempt)
                    {
                        out.push(wrong(
                            t,
                            format!(
                                "{id}: {} extended attempt {:?} at {t}ms though attempt {:?} had been claimed at {}ms",
                                x.process, x.args.attempt, newer.attempt, newer.returned
                            ),
                        ));
                    }
                    if let Some(done) = self.accepted.iter().find(|c| c.returned() < x.invoked) {
                        out.push(wrong(
                            t,
                            format!("{id}: {} extended a job completed at {}ms", x.process, done.returned()),
                        ));
                    }
                }
                Some(false) => {
                    reached.push(SituationName::new("stale-extend-refused"));
                    if !self.superseded(x.args.attempt, t) {
                        out.push(wrong(t, format!("{id}: {} had its extension of attempt {:?} refused at {t}ms with nothing in the history that superseded its claim", x.process, x.args.attempt)));
                    }
                }
                None => {}
            }
        }
    }

    /// No reap takes a lease that had not lapsed.
    fn reaps_of_live_leases(&self, out: &mut Vec<Violation>, reached: &mut Vec<SituationName>) {
        let id = self.id;
        // A reap runs on the server between its invoke and its return; if it
        // returned before the lease it took had lapsed, it took a live one.
        for r in self.reaps.iter().filter(|r| r.ok().is_some()) {
            reached.push(SituationName::new("lapsed-lease-reaped"));
            let current = self.claims.iter().filter(|k| k.returned < r.invoked).max_by_key(|k| k.attempt);
            let Some(&Claimed { attempt, lease_until: Some(until), process: holder, .. }) =
                current.as_ref().map(|c| *c)
            else {
                continue;
            };
            // Only extensions confirmed before the reap began convict; one
            // in flight may or may not have run first. The last one to run
            // set the lease's end (an extension may shorten it); of two in
            // one millisecond, the earlier end, so as not to convict falsely.
            let extended = of(self.calls, EXTEND, id)
                .into_iter()
                .filter(|x| x.args.attempt == attempt)
                .filter_map(|x| {
                    let until = x.ok().filter(|(t, _)| *t < r.invoked).and_then(|(_, d)| d.lease_until)?;
                    Some((x.ran.unwrap_or(0), core::cmp::Reverse(until)))
                })
                .max()
                .map(|(_, core::cmp::Reverse(until))| until);
            let until = extended.unwrap_or(until);
            let completed_meanwhile =
                self.completes.iter().any(|c| c.args.attempt == attempt && c.invoked < r.returned() && c.maybe());
            // A newer claim that ran no later than this reap may hold the
            // lease it took; one that ran after it claimed what it returned.
            let ran = r.ran;
            let newer_before = self.claims.iter().any(|k| {
                k.invoked < r.returned() && k.attempt > attempt && k.ran.is_none_or(|kr| ran.is_none_or(|rr| kr <= rr))
            });
            if ran.unwrap_or(r.returned()) < until && !completed_meanwhile && !newer_before {
                out.push(wrong(
                    r.returned(),
                    format!(
                        "{id}: reaped by {}ms while {holder}'s lease of attempt {attempt:?} ran until {until}ms",
                        r.returned()
                    ),
                ));
            }
        }
    }

    /// A reap takes every lease that had lapsed when it ran.
    fn lapsed_leases_left(&self, out: &mut Vec<Violation>) {
        let id = self.id;
        // A reap takes every lease that had lapsed when it ran (by the
        // server's clock), unless the job was done, extended, claimed
        // again or reaped by then, for all the history knows.
        // The producer's jobs are reaped by the reaper; an edge actor's, on
        // its own queue, by that actor.
        let reaper = match self.calls.iter().find(|c| c.verb == ENQUEUE && c.args.id.as_deref() == Some(id)) {
            Some(c) if c.process != PRODUCER => c.process,
            _ => "reaper",
        };
        for r in self.calls.iter().filter(|c| c.verb == REAP && c.process == reaper) {
            let Some((t, d)) = r.ok() else { continue };
            let Some(ran) = r.ran else { continue };
            if d.ids.iter().any(|x| x == id) {
                continue;
            }
            let Some(current) =
                self.claims.iter().filter(|k| k.ran.is_some_and(|kr| kr < ran)).max_by_key(|k| k.attempt)
            else {
                continue;
            };
            let Some(until) = current.lease_until else { continue };
            let moved = |c: &&Call<'_>| c.invoked < t && c.maybe();
            // Confirmed extensions move the lease's end; one whose outcome
            // is unknown may have moved it anywhere.
            let extensions: Vec<&Call<'_>> = of(self.calls, EXTEND, id)
                .into_iter()
                .filter(|x| x.args.attempt == current.attempt && moved(x))
                .collect();
            let extended = extensions.iter().any(|x| x.ok().is_none());
            // The last confirmed one to run set the end (of two in one
            // millisecond, the later end: a lapse must be certain).
            let until = extensions
                .iter()
                .filter_map(|x| x.ok().and_then(|(_, d)| d.lease_until).map(|u| (x.ran.unwrap_or(0), u)))
                .max()
                .map_or(until, |(_, u)| u);
            let done = self
                .completes
                .iter()
                .filter(|c| moved(c))
                .any(|c| c.ok().is_none_or(|(_, d)| d.accepted != Some(false)));
            let taken = self.claims.iter().any(|k| k.attempt > current.attempt && k.invoked < t)
                || self.unknown_claims.iter().any(|&u| u < t)
                || self.calls.iter().any(|o| {
                    o.verb == REAP
                        && !std::ptr::eq(o, r)
                        && o.invoked < t
                        && o.ok().is_none_or(|(_, d)| d.ids.iter().any(|x| x == id))
                });
            if until <= ran && !extended && !done && !taken {
                out.push(Violation::new(
                    LIVENESS,
                    Some(t),
                    format!("{id}: a reap ran at {ran}ms (server clock) and left {}'s lease of attempt {:?}, lapsed at {until}ms", current.process, current.attempt),
                ));
            }
        }
    }

    /// Liveness: after the quiet tail every job is done, and a done job had a
    /// completion accepted.
    fn final_state(&self, out: &mut Vec<Violation>) {
        let id = self.id;
        // Liveness: after the quiet tail every job is done. Only the
        // auditor reads then; the workers' reads, mid-run, are judged by
        // `state_reads`.
        let state = of(self.calls, STATE, id)
            .into_iter()
            .filter(|s| s.process == AUDITOR)
            .find_map(|s| s.ok().and_then(|(t, d)| d.state.clone().map(|s| (t, s))));
        if let Some((t, s)) = state {
            if s != "done" {
                out.push(Violation::new(
                    LIVENESS,
                    Some(t),
                    format!("{id} was still {s} at {t}ms, after the faults healed and a quiet tail passed"),
                ));
            } else if self.accepted.is_empty()
                && !self.completes.iter().any(|c| matches!(c.done, Some((EventKind::Info, ..)) | None))
            {
                out.push(wrong(t, format!("{id} is done at {t}ms, but no completion of it was accepted")));
            }
        }
    }
}

/// The calls of `verb` on job `id`.
fn of<'a>(calls: &'a [Call<'a>], verb: JobVerb, id: &str) -> Vec<&'a Call<'a>> {
    calls
        .iter()
        .filter(|c| c.verb == verb && c.args.id.as_deref().or(c.ok().and_then(|(_, d)| d.id.as_deref())) == Some(id))
        .collect()
}

/// A violation of [`JOB_QUEUE`] at `at`.
fn wrong(at: Millis, why: String) -> Violation {
    Violation::new(JOB_QUEUE, Some(at), why)
}
