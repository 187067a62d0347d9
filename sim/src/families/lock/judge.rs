//! The lock family's analysis of a finished run: which checkers judge the
//! history (every variant gets the overlap, token and stale-write checks;
//! the correct variants, which call every operation, get the rest), the
//! situations only the whole history shows, and the histograms. Kept
//! apart from the run itself (`run.rs`) so that what a variant is judged
//! by reads in one place.

use super::checks::mutual_exclusion::{self, Exclusion};
use super::checks::{corrupt_state, fencing_tokens, guarded_body, lease_views, lock_liveness, lock_replies};
use super::op::LockOp;
use super::variants;
use super::workload::DRIFT;
use super::{situation, LockKind, LockWorkload, Protection};
use crate::checker::key_lifetimes::{self, Life, Rule};
use crate::checker::{acknowledged_writes, stale_overwrite};
use crate::nemesis::Schedule;
use crate::outcome::Outcome;
use crate::stats::{self, Histograms, UNSAFE};
use crate::world::{RunOutcome, DEFAULT_EPOCH_UNIX_MS};

impl LockWorkload {
    /// `run` judged: its outcome with what every checker found, the
    /// situations its history shows, and its histograms. `stalls` are the
    /// workload's own faults, listed with the schedule.
    pub(super) fn judge(
        &self,
        run: &RunOutcome,
        schedule: &Schedule,
        stalls: Vec<crate::workload_fault::WorkloadFault>,
    ) -> Outcome {
        let mut outcome = crate::outcome::outcome_from(run, stalls);
        let me = mutual_exclusion::check(&outcome.history, self.policy);
        outcome.violations.extend(fencing_tokens::check(&outcome.history));
        outcome.violations.extend(me.violations.iter().cloned());
        outcome.violations.extend(stale_overwrite::check(&outcome.history));
        if self.lock == LockKind::Fenced && self.modes {
            self.check_every_operation(&mut outcome, run, schedule);
        }
        if self.replicas > 0 {
            variants::failover::reach(&mut outcome, schedule);
        }
        if self.protection == Protection::Acknowledged {
            outcome.violations.extend(acknowledged_writes::check_refusals(
                &outcome.history,
                &schedule.unlinked_spans(self.lock_node as u32),
            ));
        }
        outcome.histograms = histograms(&outcome, &me);
        outcome
    }

    /// The checks of the correct variants, whose actors call every public
    /// operation and run the probes: the replies, the guarded bodies, the
    /// planted keys, the lease views, the keys left at the end, liveness
    /// after the heal.
    fn check_every_operation(&self, outcome: &mut Outcome, run: &RunOutcome, schedule: &Schedule) {
        outcome.violations.extend(match self.protection {
            Protection::TimeFloored => {
                lock_replies::check_floored(&outcome.history, &run.executions[self.lock_node], DEFAULT_EPOCH_UNIX_MS)
            }
            _ => lock_replies::check(&outcome.history, &run.executions[self.lock_node]),
        });
        outcome.violations.extend(guarded_body::check(
            &outcome.history,
            &run.executions.concat(),
            &schedule.spans(),
            &schedule.freeze_spans(),
            &(0..self.plan.clients)
                .map(|i| (format!("client-{i}"), schedule.spans_reaching(i)))
                // The reader (whose probes run guarded calls) is reached
                // by the faults on the nodes only: no client index is its.
                .chain([("reader".to_string(), schedule.spans_reaching(u32::MAX))])
                .collect(),
        ));
        outcome.violations.extend(corrupt_state::check(&outcome.history));
        outcome.violations.extend(lease_views::check(&outcome.history, DRIFT));
        self.check_keys_at_end(outcome, run);
        let live = lock_liveness::check(&outcome.history, "reader", self.plan.ttl_ms);
        if live.is_empty()
            && outcome.history.iter().any(|e| {
                e.process == "reader" && matches!(LockOp::of(&e.op), Some(LockOp::Retry { token: Some(_), .. }))
            })
        {
            outcome.reach(situation::LOCK_FREE_AFTER_HEAL);
        }
        outcome.violations.extend(live);
        reach_post_hoc(outcome);
    }

    /// The keys every node holds at the end, against how long each kind
    /// may live: a fence counter and a fenced entry forever, a lease no
    /// longer than the longest TTL asked (the corruption probe's planted
    /// keys are left out).
    fn check_keys_at_end(&self, outcome: &mut Outcome, run: &RunOutcome) {
        let longest = outcome
            .history
            .iter()
            .filter_map(|e| match LockOp::of(&e.op)? {
                LockOp::Acquire { ttl_ms, .. } | LockOp::Extend { ttl_ms, .. } => Some(*ttl_ms),
                _ => None,
            })
            .max()
            .unwrap_or(self.plan.ttl_ms);
        let rules = [
            Rule { prefix: "lock:{", suffix: "}:fence", life: Life::Forever, what: "fence counter" },
            Rule { prefix: "lock:{", suffix: "}", life: Life::AtMost(longest), what: "lease" },
            Rule { prefix: "fenced:{", suffix: "}", life: Life::Forever, what: "fenced entry" },
        ];
        for (node, keys) in run.keys_at_end.iter().enumerate() {
            outcome.violations.extend(key_lifetimes::check(node, keys, &rules, &["probe-corrupt"]));
        }
    }
}

/// The run's histograms: acquire latency, and how long each overlap of
/// believed leases lasted (`unsafe-window`).
fn histograms(outcome: &Outcome, me: &Exclusion) -> Histograms {
    let mut h = Histograms::new();
    stats::record_latency(
        &outcome.history,
        stats::ACQUIRE_LATENCY,
        |op| matches!(LockOp::of(op), Some(LockOp::Acquire { .. })),
        &mut h,
    );
    h.declare(UNSAFE);
    for o in &me.overlaps {
        h.record(UNSAFE, o.believed_ms);
    }
    h
}

/// The situations the finished history shows (rather than an actor).
fn reach_post_hoc(outcome: &mut Outcome) {
    use crate::history::EventKind;
    let mut granted: Vec<u64> = Vec::new();
    let mut unknown = 0;
    for e in &outcome.history {
        match (LockOp::of(&e.op), e.kind) {
            (Some(LockOp::Acquire { token: Some(t), .. }), EventKind::Ok) => granted.push(*t),
            (Some(LockOp::Acquire { .. }), EventKind::Info) => unknown += 1,
            _ => {}
        }
    }
    granted.sort_unstable();
    let gap = granted.first().is_some_and(|&f| f > 1) || granted.windows(2).any(|w| w[1] > w[0] + 1);
    if unknown > 0 && gap {
        outcome.reach(situation::ACQUIRE_TIMED_OUT_BUT_APPLIED);
    }
    if crate::checker::store_reads::overlapped_a_write(&outcome.history) {
        outcome.reach(situation::STORE_READ_OVERLAPPED_WRITE);
    }
}
