//! State reads judged against the writes around them. `JobQueue::state`
//! runs at one instant between its invoke and its return, so it must
//! return a state the job had at some instant of that window. The workers
//! read while other workers claim, extend and complete the same jobs and
//! the reaper reaps them, so a script that writes a job's `state` out of
//! step with its sets (or a read that looks somewhere else) shows here.
//!
//! A job's state moves `unknown → pending` (enqueue), `pending → active`
//! (claim), `active → pending` (reap) and `active → done` (complete); an
//! extension changes no state, nothing leaves `done`, and nothing makes a
//! job unknown again (the family runs no restarts). Each write may take
//! effect anywhere in its window: from its invoke to its return, or, its
//! outcome unknown, any time from its invoke on, or never. The rules are
//! necessary conditions of a read's state, each sound on its own: they
//! count every write that may have happened (an unknown claim may have
//! taken any job, an unknown reap returned any), and convict only on
//! writes that certainly happened before the read began. Times are whole
//! milliseconds, so "before" is strict and "could have" is not.

use super::Call;
use crate::checker::Violation;
use crate::families::job_queue::record::JobCall;
use crate::families::job_queue::{CLAIM, COMPLETE, ENQUEUE, EXTEND, JOB_QUEUE, REAP, STATE};
use crate::history::{EventKind, Millis};
use crate::situation::SituationName;

/// A read's state as the workload records it (`record::state_name`).
const DONE: &str = "done";
const UNKNOWN: &str = "unknown";

/// When a write may have taken effect, and whether it certainly did.
#[derive(Clone, Copy)]
struct Window<'a> {
    process: &'a str,
    from: Millis,
    /// Its return; `Millis::MAX` when its outcome is unknown.
    to: Millis,
    /// Answered, and the answer says it took effect.
    certain: bool,
}

impl<'a> Window<'a> {
    fn of(c: &'a Call<'a>, certain: bool) -> Window<'a> {
        Window { process: c.process, from: c.invoked, to: c.ok().map_or(Millis::MAX, |(t, _)| t), certain }
    }

    /// It may have taken effect by `t`.
    fn by(&self, t: Millis) -> bool {
        self.from <= t
    }

    /// It certainly took effect before `t`.
    fn before(&self, t: Millis) -> bool {
        self.certain && self.to < t
    }

    /// It may have taken effect after `w` took effect and by `t`.
    fn after(&self, w: &Window<'_>, t: Millis) -> bool {
        self.from <= t && self.to >= w.from
    }
}

/// The writes of one job that may have moved its state, and the earliest
/// evidence of what it certainly was.
struct Writes<'a> {
    enqueues: Vec<Window<'a>>,
    claims: Vec<Window<'a>>,
    completes: Vec<Window<'a>>,
    reaps: Vec<Window<'a>>,
    /// When the job certainly existed by, and what says so.
    known: Option<(Millis, String)>,
    /// When the job was certainly done by, and what says so.
    done: Option<(Millis, String)>,
}

impl<'a> Writes<'a> {
    fn of(id: &str, calls: &'a [Call<'a>]) -> Writes<'a> {
        let names = |c: &Call<'_>| c.args.id.as_deref() == Some(id);
        let holds = |d: &JobCall| d.id.as_deref() == Some(id) || d.ids.iter().any(|x| x == id);
        let unknown = |c: &Call<'_>| c.done.as_ref().is_none_or(|d| d.0 == EventKind::Info);
        let (mut enqueues, mut claims, mut completes, mut reaps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut known, mut done) = (None, None);
        let earliest = |slot: &mut Option<(Millis, String)>, t: Millis, what: String| {
            if slot.as_ref().is_none_or(|(s, _)| t < *s) {
                *slot = Some((t, what));
            }
        };
        for c in calls {
            let ok = c.ok();
            let accepted = ok.and_then(|(_, d)| d.accepted);
            match c.verb {
                ENQUEUE if names(c) && c.maybe() => {
                    if let Some((t, _)) = ok {
                        earliest(&mut known, t, format!("{}'s enqueue returned", c.process));
                    }
                    if accepted != Some(false) {
                        enqueues.push(Window::of(c, accepted == Some(true)));
                    }
                }
                CLAIM if unknown(c) => claims.push(Window::of(c, false)),
                CLAIM if ok.is_some_and(|(_, d)| holds(d)) => {
                    let w = Window::of(c, true);
                    earliest(&mut known, w.to, format!("{}'s claim returned it", c.process));
                    claims.push(w);
                }
                COMPLETE if names(c) && c.maybe() && accepted != Some(false) => {
                    let w = Window::of(c, accepted == Some(true));
                    if w.certain {
                        earliest(&mut done, w.to, format!("{}'s completion was accepted", c.process));
                        earliest(&mut known, w.to, format!("{}'s completion was accepted", c.process));
                    }
                    completes.push(w);
                }
                REAP if unknown(c) => reaps.push(Window::of(c, false)),
                REAP if ok.is_some_and(|(_, d)| holds(d)) => {
                    let w = Window::of(c, true);
                    earliest(&mut known, w.to, format!("{}'s reap returned it", c.process));
                    reaps.push(w);
                }
                EXTEND if names(c) && accepted == Some(true) => {
                    earliest(&mut known, c.returned(), format!("{}'s extension was accepted", c.process));
                }
                STATE if names(c) => match ok.and_then(|(t, d)| d.state.as_deref().map(|s| (t, s))) {
                    Some((t, DONE)) => {
                        earliest(&mut done, t, format!("{} read it done", c.process));
                        earliest(&mut known, t, format!("{} read it done", c.process));
                    }
                    Some((t, s)) if s != UNKNOWN => earliest(&mut known, t, format!("{} read it {s}", c.process)),
                    _ => {}
                },
                _ => {}
            }
        }
        Writes { enqueues, claims, completes, reaps, known, done }
    }

    /// Why `state`, read in `[from, to]`, was impossible; `None` when some
    /// order of the writes gives it.
    fn impossible(&self, state: &str, (from, to): (Millis, Millis)) -> Option<String> {
        let may = |ws: &[Window<'_>]| ws.iter().any(|w| w.by(to));
        if let Some((t, what)) = self.done.as_ref().filter(|(t, _)| *t < from && state != DONE) {
            return Some(format!("it was done by {t}ms ({what}), and done is final"));
        }
        match state {
            UNKNOWN => {
                let (t, what) = self.known.as_ref().filter(|(t, _)| *t < from)?;
                Some(format!("it existed by {t}ms ({what}), and a job is never forgotten"))
            }
            DONE if !may(&self.completes) => Some("no completion of it could have taken effect by then".into()),
            "active" if !may(&self.claims) => Some("no claim could have taken it by then".into()),
            "active" => {
                // Reaped back to pending before the read began: active again
                // only through a claim that may have run after that reap.
                let r = self.reaps.iter().find(|r| r.before(from) && !self.claims.iter().any(|k| k.after(r, to)))?;
                Some(format!(
                    "{}'s reap returned it to the queue by {}ms, and no claim could have taken it since",
                    r.process, r.to
                ))
            }
            "pending" if !may(&self.enqueues) => Some("no enqueue of it could have taken effect by then".into()),
            "pending" => {
                // Claimed before the read began: pending again only through
                // a reap that may have run after that claim.
                let c = self.claims.iter().find(|c| c.before(from) && !self.reaps.iter().any(|r| r.after(c, to)))?;
                Some(format!(
                    "{}'s claim took it by {}ms, and no reap could have returned it to the queue since",
                    c.process, c.to
                ))
            }
            _ => None,
        }
    }
}

/// Judges every answered state read of the history against the writes of
/// its job (the correct queue's only: the naive twin has no state), and
/// notes `state-read-overlapped-write` when a read ran while another
/// actor's write of the same job was in flight.
pub(super) fn state_reads(calls: &[Call<'_>], reached: &mut Vec<SituationName>) -> Vec<Violation> {
    let mut ids: Vec<&str> = calls.iter().filter(|c| c.verb == STATE).filter_map(|c| c.args.id.as_deref()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    for id in ids {
        let writes = Writes::of(id, calls);
        for r in calls.iter().filter(|c| c.verb == STATE && c.args.id.as_deref() == Some(id)) {
            let Some((t, d)) = r.ok() else { continue };
            let Some(state) = d.state.as_deref() else { continue };
            if overlaps_a_write(r, id, calls) {
                reached.push(SituationName::new("state-read-overlapped-write"));
            }
            if let Some(why) = writes.impossible(state, (r.invoked, t)) {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(t),
                    format!("{id}: {} read it {state} in [{}ms, {t}ms], but {why}", r.process, r.invoked),
                ));
            }
        }
    }
    out
}

/// Whether read `r` of `id` was in flight while another actor's claim,
/// extension, completion or reap of `id` was.
fn overlaps_a_write(r: &Call<'_>, id: &str, calls: &[Call<'_>]) -> bool {
    calls.iter().any(|w| {
        let of_id = match w.verb {
            CLAIM | REAP => w.ok().is_some_and(|(_, d)| d.id.as_deref() == Some(id) || d.ids.iter().any(|x| x == id)),
            EXTEND | COMPLETE => w.args.id.as_deref() == Some(id),
            _ => false,
        };
        of_id && w.process != r.process && w.invoked <= r.returned() && r.invoked <= w.returned()
    })
}

#[cfg(test)]
mod tests {
    use super::super::{check, pair_calls};
    use super::*;
    use crate::families::job_queue::record::{payload_of, record, JobVerb};
    use crate::history::History;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// A call of the history: invoked at `at`, completed (`Ok` or `Info`)
    /// at `done` with `result`.
    struct Planned {
        at: Millis,
        done: Millis,
        kind: EventKind,
        who: &'static str,
        verb: JobVerb,
        args: JobCall,
        result: JobCall,
    }

    /// A history of job `j` written call by call, in any order (the history
    /// itself takes its events in time order: [`H::history`] sorts them).
    struct H(RefCell<Vec<Planned>>);

    impl H {
        /// `p` enqueued `j` in [0, 1] ms; `a` claims it in [10, 14] ms.
        fn claimed() -> H {
            let h = H(RefCell::new(Vec::new()));
            h.ok(0, 1, "p", ENQUEUE, of("j"), JobCall { accepted: Some(true), ..of("j") });
            h.claim(10, 14, "a", "j");
            h
        }

        fn ok(&self, at: Millis, done: Millis, who: &'static str, verb: JobVerb, args: JobCall, result: JobCall) {
            self.0.borrow_mut().push(Planned { at, done, kind: EventKind::Ok, who, verb, args, result });
        }

        fn claim(&self, at: Millis, done: Millis, who: &'static str, id: &str) {
            let got =
                JobCall { attempt: Some(1), lease_until: Some(done + 300), payload: Some(payload_of(id)), ..of(id) };
            self.ok(at, done, who, CLAIM, JobCall::default(), got);
        }

        fn complete(&self, at: Millis, done: Millis, who: &'static str) {
            let args = JobCall { attempt: Some(1), ..of("j") };
            self.ok(at, done, who, COMPLETE, args.clone(), JobCall { accepted: Some(true), ..args });
        }

        /// A call of `verb` answered `Info` at `done`: its outcome unknown.
        fn unknown(&self, at: Millis, done: Millis, who: &'static str, verb: JobVerb, args: JobCall) {
            let result = args.clone();
            self.0.borrow_mut().push(Planned { at, done, kind: EventKind::Info, who, verb, args, result });
        }

        fn read(&self, at: Millis, done: Millis, who: &'static str, id: &str, state: &str) {
            self.ok(at, done, who, STATE, of(id), JobCall { state: Some(state.into()), ..of(id) });
        }

        fn history(&self) -> History {
            let planned = self.0.borrow();
            let mut steps: Vec<(Millis, bool, usize)> =
                planned.iter().enumerate().flat_map(|(i, p)| [(p.at, false, i), (p.done, true, i)]).collect();
            steps.sort_by_key(|&(t, completes, i)| (t, completes, i));
            let h = History::new();
            let mut ids = BTreeMap::new();
            for (t, completes, i) in steps {
                let p = &planned[i];
                if completes {
                    h.complete_at(t, ids[&i], p.who, p.kind, record(p.verb, p.result.clone()));
                } else {
                    ids.insert(i, h.invoke_at(t, p.who, record(p.verb, p.args.clone())));
                }
            }
            h
        }

        /// The rule's verdicts and whether the overlap situation was reached.
        fn judge(&self) -> (Vec<String>, bool) {
            let events = self.history().events();
            let (calls, _, _) = pair_calls(&events, &[]);
            let mut reached = Vec::new();
            let v = state_reads(&calls, &mut reached);
            let overlapped = reached.contains(&SituationName::new("state-read-overlapped-write"));
            (v.into_iter().map(|v| v.detail).collect(), overlapped)
        }
    }

    fn of(id: &str) -> JobCall {
        JobCall { id: Some(id.into()), ..JobCall::default() }
    }

    #[test]
    fn a_read_may_return_any_state_its_window_allows() {
        let h = H::claimed();
        h.read(0, 2, "b", "j", "unknown");
        h.read(9, 12, "b", "j", "pending");
        h.read(9, 12, "b", "j", "active");
        h.complete(100, 104, "a");
        h.read(99, 101, "b", "j", "active");
        h.read(99, 101, "b", "j", "done");
        h.read(200, 201, "b", "j", "done");
        let (v, overlapped) = h.judge();
        assert!(v.is_empty(), "{v:?}");
        assert!(overlapped);
    }

    #[test]
    fn only_another_actors_write_in_flight_is_an_overlap() {
        let h = H::claimed();
        h.read(9, 12, "a", "j", "pending");
        h.read(20, 21, "b", "j", "active");
        let (v, overlapped) = h.judge();
        assert!(v.is_empty(), "{v:?}");
        assert!(!overlapped);
    }

    #[test]
    fn done_only_after_a_completion_could_run_and_then_for_good() {
        let early = H::claimed();
        early.complete(100, 104, "a");
        early.read(50, 60, "b", "j", "done");
        let (v, _) = early.judge();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("read it done in [50ms, 60ms], but no completion"), "{v:?}");
        let h = H::claimed();
        h.complete(100, 104, "a");
        h.read(110, 111, "b", "j", "active");
        let (v, _) = h.judge();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("done by 104ms (a's completion was accepted)"), "{v:?}");
        // A completion of unknown outcome may have run: a read saw it done,
        // so a later read must too.
        let h = H::claimed();
        h.unknown(100, 120, "a", COMPLETE, JobCall { attempt: Some(1), ..of("j") });
        h.read(125, 131, "b", "j", "done");
        h.read(125, 131, "c", "j", "active");
        h.read(140, 141, "c", "j", "pending");
        let (v, _) = h.judge();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("done by 131ms (b read it done)"), "{v:?}");
    }

    #[test]
    fn an_enqueued_job_is_never_unknown_again() {
        let h = H::claimed();
        h.read(1, 3, "b", "j", "unknown");
        h.read(5, 6, "b", "j", "unknown");
        let (v, _) = h.judge();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("existed by 1ms (p's enqueue returned)"), "{v:?}");
    }

    #[test]
    fn active_only_through_a_claim_since_the_last_reap() {
        let h = H::claimed();
        h.read(5, 8, "b", "j", "active");
        h.ok(400, 402, "r", REAP, JobCall::default(), JobCall { ids: vec!["j".into()], ..JobCall::default() });
        h.read(403, 404, "b", "j", "active");
        let (v, _) = h.judge();
        assert!(v.iter().any(|v| v.contains("[5ms, 8ms], but no claim could have taken it")), "{v:?}");
        assert!(v.iter().any(|v| v.contains("r's reap returned it to the queue by 402ms")), "{v:?}");
        assert_eq!(v.len(), 2, "{v:?}");
        // A claim of unknown outcome may have taken it again.
        h.unknown(401, 420, "c", CLAIM, JobCall::default());
        let (v, _) = h.judge();
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn pending_only_through_an_enqueue_or_a_reap_since_the_last_claim() {
        let h = H::claimed();
        h.read(20, 21, "b", "j", "pending");
        h.read(20, 21, "b", "k", "pending");
        let (v, _) = h.judge();
        assert!(v.iter().any(|v| v.contains("a's claim took it by 14ms, and no reap")), "{v:?}");
        assert!(v.iter().any(|v| v.contains("k: b read it pending in [20ms, 21ms], but no enqueue")), "{v:?}");
        assert_eq!(v.len(), 2, "{v:?}");
        // A reap of unknown outcome may have returned it.
        h.unknown(15, 30, "r", REAP, JobCall::default());
        let (v, _) = h.judge();
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn the_family_check_judges_state_reads_and_notes_the_overlap() {
        let h = H::claimed();
        h.read(9, 12, "b", "j", "active");
        h.read(20, 21, "b", "j", "pending");
        let judged = check(&h.history().events(), true, 300, &[]);
        assert!(
            judged.violations.iter().any(|v| v.detail.contains("no reap could have returned it")),
            "{:?}",
            judged.violations
        );
        assert!(judged.reached.contains(&SituationName::new("state-read-overlapped-write")));
    }
}
