//! What the family judges of one run: which of its checks apply to which
//! variant, and the spans each may judge (those no fault, stall or held
//! request disturbs), from the run's schedule and the workload's markers.

use super::aimed::TIMED_OUT_HOLD_MS;
use super::checks::{liveness, self_fencing, terms, views};
use super::markers::Marker;
use super::plan::ElectionPlan;
use super::{ElectionVariant, ELECTION_NAME, LIVENESS_SLACK_MS, RESOURCE};
use crate::checker::key_lifetimes::{Life, Rule};
use crate::checker::{self, Violation};
use crate::history::{Event, Millis};
use crate::world::RunOutcome;

/// One finished run, as the checks need it.
pub(super) struct Evidence<'a> {
    /// The run's history.
    pub(super) events: &'a [Event],
    /// The run itself (the servers' executions, keys and schedule).
    pub(super) run: &'a RunOutcome,
    /// What the workload did.
    pub(super) markers: &'a [Marker],
    /// The plan it ran.
    pub(super) plan: &'a ElectionPlan,
    /// The election under test.
    pub(super) variant: ElectionVariant,
    /// The nemesis faults' spans.
    pub(super) schedule_spans: &'a [(Millis, Millis)],
    /// Those, and the spans of the requests the workload held.
    pub(super) fault_spans: &'a [(Millis, Millis)],
    /// The spans of the faults that freeze a client process.
    pub(super) freeze_spans: &'a [(Millis, Millis)],
    /// When the last nemesis fault ends.
    pub(super) schedule_end: Option<Millis>,
    /// The connections' response timeout, ms.
    pub(super) response_ms: u64,
}

/// Every violation the family's checks find in the run, in a fixed order.
pub(super) fn judge(x: &Evidence<'_>) -> Vec<Violation> {
    let mut violations = safety(x);
    if x.variant != ElectionVariant::NoEpoch {
        violations.extend(views_and_keys(x));
    }
    if x.variant.at_deadline() {
        violations.extend(held_renewals(x));
        violations.extend(self_fencing(x));
    }
    violations.extend(timed_out_renewals(x));
    violations.extend(taken_away_keys(x));
    if matches!(x.variant, ElectionVariant::Election | ElectionVariant::RenewOnly) {
        violations.extend(superseded(x));
    }
    violations.extend(liveness(x));
    if x.variant != ElectionVariant::NoEpoch {
        violations.extend(handovers(x));
    }
    violations
}

/// The `election` invariant, stale overwrites, and on
/// `election-failover-acknowledged` the acknowledged writes.
fn safety(x: &Evidence<'_>) -> Vec<Violation> {
    let (events, run) = (x.events, x.run);
    let mut violations = terms::check(events, ELECTION_NAME, RESOURCE, x.variant != ElectionVariant::RenewOnly);
    violations.extend(checker::stale_overwrite::check(events));
    if x.variant == ElectionVariant::FailoverAcknowledged {
        violations.extend(checker::acknowledged_writes::check(events, &run.schedule.unreplicated_spans(0)));
        violations.extend(checker::acknowledged_writes::check_refusals(events, &run.schedule.unlinked_spans(0)));
    }
    violations
}

/// `election-views`, and what the keys at the end of the run say.
fn views_and_keys(x: &Evidence<'_>) -> Vec<Violation> {
    let planned = x.plan;
    let built = views::Built {
        name: ELECTION_NAME,
        lease_ms: planned.lease_ms,
        renew_ms: planned.renew_ms,
        campaign_ms: planned.campaign_ms,
        at_deadline: x.variant.at_deadline(),
        allowance: checker::Allowance::DEFAULT,
        faults: x.fault_spans,
        freezes: x.freeze_spans,
        sampled_until: planned.length_ms,
    };
    let mut violations = views::check(x.events, built);
    let rules = [
        Rule { prefix: "election:{", suffix: "}:fence", life: Life::Forever, what: "epoch counter" },
        Rule { prefix: "election:{", suffix: "}", life: Life::AtMost(planned.lease_ms), what: "leadership lease" },
        Rule { prefix: "fenced:{", suffix: "}", life: Life::Forever, what: "fenced entry" },
    ];
    violations.extend(checker::key_lifetimes::check(0, &x.run.keys_at_end[0], &rules, &[]));
    violations
}

/// Held renewals end the term at its deadline; the lease is handed back
/// once the late reply has landed. Judged only when nothing else (a
/// nemesis fault, a stall, a stop()) touches that span.
fn held_renewals(x: &Evidence<'_>) -> Vec<Violation> {
    let (events, markers, planned) = (x.events, x.markers, x.plan);
    let mut violations = Vec::new();
    let stop_held_ms = markers
        .iter()
        .filter_map(|m| match m {
            Marker::Stop { held_ms, .. } => Some(*held_ms),
            Marker::Stall { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => None,
        })
        .max()
        .unwrap_or(0);
    for m in markers {
        let Marker::Slowed { at, until } = *m else { continue };
        let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
        let span = (at, until.saturating_add(bound));
        let touched = |(s, e): (u64, u64)| s <= span.1 && e >= span.0;
        let quiet = until < planned.length_ms
            && span.1 < planned.length_ms
            && !x.schedule_spans.iter().any(|&f| touched(f))
            && !markers
                .iter()
                .filter(|x| !matches!(x, Marker::Slowed { .. }))
                .filter_map(Marker::disturbs)
                .any(touched)
            && planned.stop_at.is_none_or(|s| !touched((s, s + stop_held_ms + bound)));
        if quiet {
            let after = "a leader's held renewal landed";
            violations.extend(liveness::check_hand_back(events, ELECTION_NAME, until, bound, after));
        }
    }
    violations
}

/// `self-fencing`: no two nodes believe at once, and no deadline is
/// measured from the wrong instant.
fn self_fencing(x: &Evidence<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    // Time-floored epochs keep epochs ordered, not the lease: a leader
    // elected inside the cut is unknown to the promoted replica, which
    // elects another while the first may still believe (until its
    // deadline). That overlap is the floor's documented limit, measured
    // in the split-brain histogram; the fenced store still refuses the
    // older epoch (the `election` invariant, judged above).
    if x.variant != ElectionVariant::FailoverFloored {
        violations.extend(self_fencing::check_self_fencing(x.events, ELECTION_NAME));
    }
    violations.extend(self_fencing::check_deadlines(
        x.events,
        ELECTION_NAME,
        trusted_ms(x.plan.lease_ms),
        MIN_ROUND_TRIP_MS,
    ));
    violations
}

/// A renewal held past the response timeout fails, and a failed renewal
/// ends the term (`DemotionReason::RedisError`) under both demotions:
/// judged when no nemesis fault or stall touches the span (a frozen node
/// cannot act on its timeout).
/// The leader that stepped down hands its lease back, so some node leads
/// within a campaign interval and a round trip of the renewal's timeout
/// (the held renewal ran `TIMED_OUT_HOLD_MS` after it reached the
/// server, and timed out `response_ms` after it was sent), not once the
/// key has expired.
fn timed_out_renewals(x: &Evidence<'_>) -> Vec<Violation> {
    let (events, markers, planned, response_ms) = (x.events, x.markers, x.plan, x.response_ms);
    let mut violations = Vec::new();
    for m in markers {
        let Marker::TimedOut { node, at, until } = m else { continue };
        let ran = x.run.executions[0].iter().find(|x| {
            x.held_ms == TIMED_OUT_HOLD_MS && &*x.client == node.as_str() && x.sim_ms >= *at + TIMED_OUT_HOLD_MS
        });
        let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
        let due = ran.map_or(*until, |x| x.sim_ms - TIMED_OUT_HOLD_MS + response_ms + bound);
        let end = due.max(*until);
        let touched = |(s, e): (u64, u64)| s <= end && e >= *at;
        let stalled = markers.iter().any(|x| matches!(x, Marker::Stall { .. }) && x.disturbs().is_some_and(touched));
        if stalled || x.schedule_spans.iter().any(|&f| touched(f)) {
            continue;
        }
        let why = format!("the renewal it sent after {at}ms was held at the server past its response timeout");
        violations.extend(terms::check_failed_renewal(events, ELECTION_NAME, node, *at, *until, &why));
        if let Some(x) = ran.filter(|_| end < planned.length_ms) {
            let timed_out = x.sim_ms - TIMED_OUT_HOLD_MS + response_ms;
            let after = "a leader's renewal timed out";
            violations.extend(liveness::check_hand_back(events, ELECTION_NAME, timed_out, bound, after));
        }
    }
    violations
}

/// A lease key taken away: the leader's next renewal is refused, and a
/// refused renewal ends the term under both demotions.
fn taken_away_keys(x: &Evidence<'_>) -> Vec<Violation> {
    let markers = x.markers;
    let mut violations = Vec::new();
    for m in markers {
        let Marker::TakenAway { node, at, until, .. } = m else { continue };
        let touched = |(s, e): (u64, u64)| s <= *until && e >= *at;
        let stalled = markers.iter().any(|x| matches!(x, Marker::Stall { .. }) && x.disturbs().is_some_and(touched));
        if stalled || x.schedule_spans.iter().any(|&f| touched(f)) {
            continue;
        }
        let why =
            format!("its lease key was overwritten with another owner at {at}ms, so its next renewal was refused");
        violations.extend(terms::check_failed_renewal(x.events, ELECTION_NAME, node, *at, *until, &why));
    }
    violations
}

/// A newer epoch means the older leader's key is gone: its next renewal
/// is refused and its term ends, under either demotion (under
/// `OnRenewTick` nothing else bounds a woken leader's reign). Any fault,
/// freeze or held request postpones the bound to its end.
fn superseded(x: &Evidence<'_>) -> Vec<Violation> {
    let planned = x.plan;
    let mut disturbed = x.fault_spans.to_vec();
    disturbed.extend(x.freeze_spans.iter().copied());
    disturbed.extend(checker::interruptions(x.events).into_iter().map(|(_, start, end)| (start, end)));
    let bound = planned.renew_ms + x.response_ms + LIVENESS_SLACK_MS;
    terms::check_superseded(x.events, ELECTION_NAME, bound, &disturbed, planned.length_ms)
}

/// Liveness after healing: the last fault, stall or stop() ends at
/// `healed`; a leader must hold from `healed + bound` on. And `run()`
/// campaigns until `stop()`.
fn liveness(x: &Evidence<'_>) -> Vec<Violation> {
    let (markers, planned) = (x.markers, x.plan);
    // The stall's actual end (from the markers): a stall handed to the
    // writer lands at its next write, which may be later than planned.
    let stall_end = markers.iter().filter_map(|m| m.disturbs().map(|(_, end)| end));
    // A stop() comes when a node leads at or after its planned instant.
    let stop_end = markers.iter().filter_map(|m| m.stop().map(|(_, from)| from));
    let healed = stall_end.chain(stop_end).chain(planned.stop_at).chain(x.schedule_end).max().unwrap_or(0);
    let bound = planned.lease_ms + planned.campaign_ms + LIVENESS_SLACK_MS;
    let mut violations = liveness::check_liveness(x.events, ELECTION_NAME, healed, bound, planned.length_ms);
    violations.extend(liveness::check_runs_until_stopped(x.events));
    violations
}

/// stop() hands the lease back: with no fault around it, the next node
/// takes over within a campaign interval and a round trip, not a whole
/// lease later.
fn handovers(x: &Evidence<'_>) -> Vec<Violation> {
    let (markers, planned) = (x.markers, x.plan);
    // A request sent during a fault may still be waiting for its reply,
    // or its response timeout, that long after the fault ends; the run
    // loop sees `stop()` only once that renewal has returned.
    let mut busy: Vec<(u64, u64)> = x.fault_spans.iter().map(|&(s, e)| (s, e + x.response_ms)).collect();
    busy.extend(markers.iter().filter_map(Marker::disturbs));
    let stops: Vec<(&str, u64)> = markers.iter().filter_map(Marker::stop).collect();
    let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
    liveness::check_handover(x.events, ELECTION_NAME, &stops, &busy, bound, planned.length_ms)
}

/// The shortest round trip on the scenario's links (1 ms each way at least).
const MIN_ROUND_TRIP_MS: u64 = 2;

/// `lease − drift` in whole milliseconds, rounded up, for the default drift
/// every node uses: its documented rule is a factor of the lease (per mille)
/// plus a constant.
fn trusted_ms(lease_ms: u64) -> u64 {
    let d = redis_primitives::Drift::DEFAULT;
    let allowance_us = lease_ms * 1000 * u64::from(d.factor_per_mille()) / 1000 + d.constant().as_micros() as u64;
    (lease_ms * 1000).saturating_sub(allowance_us).div_ceil(1000)
}
