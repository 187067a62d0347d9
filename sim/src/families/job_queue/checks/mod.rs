//! The family's invariant, [`JOB_QUEUE`] (and `liveness`): the history's
//! job calls paired with when their scripts ran, judged job by job
//! ([`job`]), as a whole ([`order`]), each state read against the
//! writes in flight around it ([`state_reads`]), and every reap in the
//! server's own order of scripts ([`reaps`]).

mod job;
mod order;
mod reaps;
mod state_reads;

use std::collections::BTreeMap;

use job::Job;
use order::claimed_in_order;
use state_reads::state_reads;

use super::probe::UNKNOWN;
use super::record::{sim_ms, JobCall, JobOp, JobVerb};
use super::{CLAIM, COMPLETE, ENQUEUE, EXTEND, JOB_QUEUE, REAP};
use crate::bridge::Execution;
use crate::checker::Violation;
use crate::history::{Event, EventKind, Millis};
use crate::situation::SituationName;

/// One job operation of the history, paired.
struct Call<'a> {
    verb: JobVerb,
    process: &'a str,
    invoked: Millis,
    /// `(kind, time, data)` of its completion.
    done: Option<(EventKind, Millis, JobCall)>,
    args: JobCall,
    /// For an `Ok` call: when its script ran, by the server's clock
    /// ([`ran_at`]), looked up once.
    ran: Option<Millis>,
    /// How its script's first key ends ([`script_key_end`]), taken once at
    /// the invoke.
    key_end: Option<String>,
}

impl Call<'_> {
    fn ok(&self) -> Option<(Millis, &JobCall)> {
        match &self.done {
            Some((EventKind::Ok, t, d)) => Some((*t, d)),
            _ => None,
        }
    }

    /// It may have happened (ok, or outcome unknown).
    fn maybe(&self) -> bool {
        !matches!(self.done, Some((EventKind::Fail, ..)))
    }

    /// When it returned (an unanswered call: never).
    fn returned(&self) -> Millis {
        self.done.as_ref().map_or(Millis::MAX, |d| d.1)
    }
}

/// A claim that returned a job.
#[derive(Clone)]
struct Claimed<'a> {
    invoked: Millis,
    returned: Millis,
    attempt: Option<u64>,
    lease_until: Option<Millis>,
    process: &'a str,
    payload: Option<String>,
    ran: Option<Millis>,
}

/// How the first key of the script a call of `verb` runs ends (the
/// queue's documented layout, `jobq:{queue}` and a suffix; a process uses
/// one queue, whose name the history does not carry): what tells its
/// execution from another script the same process had in flight. `None`
/// for a call that runs none.
fn script_key_end(verb: JobVerb, args: &JobCall) -> Option<String> {
    match verb {
        CLAIM => Some("}:pending".into()),
        REAP => Some("}:active".into()),
        ENQUEUE | EXTEND | COMPLETE => args.id.as_ref().map(|id| format!("}}:job:{id}")),
        _ => None,
    }
}

/// When `process`'s script call on a key ending in `end` in `[from, to]`
/// ran, by the server's clock (the last such `EVAL*`: a `NOSCRIPT` answer
/// is followed by the `EVAL` that ran), as simulated ms.
///
/// A request whose caller gave up on it (an outcome unknown) may still
/// reach the server later, inside a newer call's window: a `complete` held
/// by latency ran a few ms after the same worker's next `claim` and was
/// taken for it (job-queue seed 80921962). So only the call's own script
/// key counts, and when an earlier call of the process on that key is
/// still unaccounted for (`stale_possible`), only a window that holds one
/// execution tells: with two, which ran for this call is unknown (`None`).
fn ran_at(
    executions: &[Execution],
    process: &str,
    end: &str,
    (from, to): (Millis, Millis),
    stale_possible: bool,
) -> Option<Millis> {
    let mut runs = executions.iter().filter(|x| {
        &*x.client == process
            && x.command.starts_with("EVAL")
            && x.key.as_deref().is_some_and(|k| k.starts_with("jobq:{") && k.ends_with(end))
            && (from..=to).contains(&x.sim_ms)
    });
    let first = runs.next()?;
    match runs.next_back() {
        None => Some(sim_ms(first.server_unix_ms)),
        Some(_) if stale_possible => None,
        Some(last) => Some(sim_ms(last.server_unix_ms)),
    }
}

/// What [`check`] found.
pub(crate) struct Judged {
    /// The violations.
    pub violations: Vec<Violation>,
    /// Situations the history shows.
    pub reached: Vec<SituationName>,
    /// Extra runs per job (claims − 1).
    pub double_runs: Vec<u64>,
}

/// Judges a job-queue history; `fenced` = the correct queue (attempts,
/// leases, payloads, the probe and the auditor's states are there to
/// judge), `lease_ms` its claims' lease, `executions` the node's execution
/// log (when each script really ran, by the server's clock).
pub(crate) fn check(events: &[Event], fenced: bool, lease_ms: u64, executions: &[Execution]) -> Judged {
    let (calls, mut out, mut reached) = pair_calls(events, executions);
    // A claim whose outcome is unknown may have taken any job.
    let unknown_claims: Vec<Millis> = calls
        .iter()
        .filter(|c| c.verb == CLAIM && c.done.as_ref().is_none_or(|d| d.0 == EventKind::Info))
        .map(|c| c.invoked)
        .collect();
    let jobs: Vec<String> = calls
        .iter()
        .filter(|c| c.verb == ENQUEUE && c.ok().is_some_and(|(_, d)| d.accepted == Some(true)))
        .filter_map(|c| c.args.id.clone())
        .collect();
    let mut double_runs = Vec::new();
    for id in &jobs {
        let job = Job::new(id, &calls, &unknown_claims, lease_ms);
        double_runs.push(job.claims.len().saturating_sub(1) as u64);
        job.judge(fenced, &mut out, &mut reached);
    }
    if fenced {
        out.extend(claimed_in_order(&calls, &unknown_claims, &mut reached));
        out.extend(state_reads(&calls, &mut reached));
        out.extend(reaps::reaps_in_server_order(executions));
    }
    out.truncate(10);
    reached.sort_unstable();
    reached.dedup();
    Judged { violations: out, reached, double_runs }
}

/// Pairs the history's job calls (each with when its script ran, by the
/// server's clock), and judges the probe's records on the way: their
/// violations, and the situations the cases answered as documented show.
fn pair_calls<'a>(
    events: &'a [Event],
    executions: &[Execution],
) -> (Vec<Call<'a>>, Vec<Violation>, Vec<SituationName>) {
    let mut calls: Vec<Call<'_>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut shown = Vec::new();
    for e in events {
        let Some(op) = e.op.family::<JobOp>() else { continue };
        if let JobOp::Probe(p) = op {
            // A fault may cut a probe short: an unknown answer, or keys that
            // could not be read back, judge nothing.
            if p.got == UNKNOWN || (p.before.is_some() && p.after.is_none()) {
                continue;
            }
            if p.got == p.expected && p.before == p.after {
                shown.extend(p.shows);
            }
            if p.got != p.expected {
                let v = Violation::new(
                    JOB_QUEUE,
                    Some(e.time),
                    format!("probe `{}`: expected {}, got {}", p.case, p.expected, p.got),
                );
                out.push(match p.missed_by {
                    Some(by) => v.missed_by(by),
                    None => v,
                });
            } else if p.before != p.after {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(e.time),
                    format!(
                        "probe `{}`: answered {} but changed the keys: {:?} became {:?}",
                        p.case, p.got, p.before, p.after
                    ),
                ));
            }
            continue;
        }
        let JobOp::Call { verb, call } = op else { continue };
        let (verb, data) = (*verb, call.clone());
        if e.kind == EventKind::Invoke {
            open.insert(e.op_id.0, calls.len());
            let key_end = script_key_end(verb, &data);
            calls.push(Call { verb, process: &e.process, invoked: e.time, done: None, args: data, ran: None, key_end });
        } else if let Some(i) = open.remove(&e.op_id.0) {
            if e.kind == EventKind::Ok {
                let c = &calls[i];
                let earlier_unknown = |o: &Call<'_>| {
                    o.process == c.process
                        && !matches!(o.done, Some((EventKind::Ok | EventKind::Fail, ..)))
                        && o.key_end == c.key_end
                };
                let stale_possible = calls[..i].iter().any(earlier_unknown);
                let ran = c
                    .key_end
                    .as_deref()
                    .and_then(|k| ran_at(executions, c.process, k, (c.invoked, e.time), stale_possible));
                calls[i].ran = ran;
            }
            calls[i].done = Some((e.kind, e.time, data));
        }
    }
    (calls, out, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::job_queue::record::{payload_of, record, JobCall};
    use crate::families::job_queue::QUEUE;
    use crate::history::History;
    use crate::world::DEFAULT_EPOCH_UNIX_MS;

    fn call(h: &History, at: Millis, done: Millis, who: &str, verb: JobVerb, args: JobCall, result: JobCall) {
        let id = h.invoke_at(at, who, record(verb, args));
        h.complete_at(done, id, who, EventKind::Ok, record(verb, result));
    }

    /// `p` enqueues `j` at 0 ms; `a` claims it at 2 ms (attempt 1, lease
    /// until 303 ms).
    fn enqueued_and_claimed(h: &History) {
        let enqueue = JobCall { id: Some("j".into()), ..JobCall::default() };
        call(h, 0, 1, "p", ENQUEUE, enqueue.clone(), JobCall { accepted: Some(true), ..enqueue });
        let claimed = JobCall { lease_until: Some(303), payload: Some(payload_of("j")), ..job("j", 1) };
        call(h, 2, 3, "a", CLAIM, JobCall::default(), claimed);
    }

    fn job(id: &str, attempt: u64) -> JobCall {
        JobCall { id: Some(id.into()), attempt: Some(attempt), ..JobCall::default() }
    }

    #[test]
    fn a_stale_completion_must_be_refused_and_a_refusal_justified() {
        let history = |second_accepted: bool, reaped: bool| {
            let h = History::new();
            enqueued_and_claimed(&h);
            if reaped {
                call(
                    &h,
                    400,
                    401,
                    "r",
                    REAP,
                    JobCall::default(),
                    JobCall { ids: vec!["j".into()], ..JobCall::default() },
                );
                call(
                    &h,
                    402,
                    403,
                    "b",
                    CLAIM,
                    JobCall::default(),
                    JobCall { lease_until: Some(703), payload: Some(payload_of("j")), ..job("j", 2) },
                );
                call(&h, 410, 411, "b", COMPLETE, job("j", 2), JobCall { accepted: Some(true), ..job("j", 2) });
            }
            call(&h, 900, 901, "a", COMPLETE, job("j", 1), JobCall { accepted: Some(second_accepted), ..job("j", 1) });
            check(&h.events(), true, 300, &[])
        };
        let ok = history(false, true);
        assert!(ok.violations.is_empty(), "{:?}", ok.violations);
        assert!(
            ok.reached.contains(&SituationName::new("stale-completion-refused"))
                && ok.reached.contains(&SituationName::new("job-run-twice"))
        );
        assert_eq!(ok.double_runs, vec![1]);
        let twice = history(true, true);
        assert!(twice.violations.iter().any(|v| v.detail.contains("2 completions accepted")), "{:?}", twice.violations);
        let unjustified = history(false, false);
        assert!(
            unjustified.violations.iter().any(|v| v.detail.contains("nothing in the history")),
            "{:?}",
            unjustified.violations
        );
    }

    /// One `EVALSHA` of `who` on `key`, run at `at` (simulated ms, the
    /// server's clock unstepped).
    fn ran(who: &str, key: &str, at: Millis) -> Execution {
        Execution {
            client: who.into(),
            command: "EVALSHA".into(),
            key: Some(key.into()),
            args: Vec::new(),
            server_unix_ms: DEFAULT_EPOCH_UNIX_MS + at,
            sim_ms: at,
            taken_ms: at,
            held_ms: 0,
            reply: crate::Reply::Other,
        }
    }

    #[test]
    fn a_claims_lease_is_timed_from_its_own_script_not_a_stale_request() {
        let pending = format!("jobq:{{{QUEUE}}}:pending");
        let judge = |executions: &[Execution], earlier_unknown: bool| {
            let h = History::new();
            let enqueue = JobCall { id: Some("j".into()), ..JobCall::default() };
            call(&h, 0, 1, "p", ENQUEUE, enqueue.clone(), JobCall { accepted: Some(true), ..enqueue });
            if earlier_unknown {
                let id = h.invoke_at(1, "a", record(CLAIM, JobCall::default()));
                h.complete_at(2, id, "a", EventKind::Info, record(CLAIM, JobCall::default()));
            }
            // The claim ran at 3 ms, so its lease ends at 303 ms.
            let claimed = JobCall { lease_until: Some(303), payload: Some(payload_of("j")), ..job("j", 1) };
            call(&h, 2, 8, "a", CLAIM, JobCall::default(), claimed);
            check(&h.events(), true, 300, executions).violations
        };
        let late_complete = ran("a", &format!("jobq:{{{QUEUE}}}:job:k"), 6);
        assert!(judge(&[ran("a", &pending, 3), late_complete.clone()], false).is_empty());
        let wrong = judge(&[ran("a", &pending, 5)], false);
        assert!(wrong.iter().any(|v| v.detail.contains("ran at 5ms")), "{wrong:?}");
        // An earlier claim of unknown outcome ran inside this one's window
        // too: which of the two was this claim's is unknown, so no verdict.
        assert!(judge(&[ran("a", &pending, 3), ran("a", &pending, 6)], true).is_empty());
        // With one execution in the window, it is this claim's.
        let alone = judge(&[ran("a", &pending, 5)], true);
        assert!(alone.iter().any(|v| v.detail.contains("ran at 5ms")), "{alone:?}");
    }

    #[test]
    fn a_reap_of_a_live_lease_is_a_violation() {
        let h = History::new();
        enqueued_and_claimed(&h);
        call(&h, 100, 101, "r", REAP, JobCall::default(), JobCall { ids: vec!["j".into()], ..JobCall::default() });
        let v = check(&h.events(), true, 300, &[]).violations;
        assert!(v.iter().any(|v| v.detail.contains("reaped by 101ms")), "{v:?}");
    }
}
