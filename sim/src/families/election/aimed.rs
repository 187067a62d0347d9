//! The once-per-run faults aimed at one leader at run time (a renewal held
//! past the response timeout, the lease key taken away), placed by the seed
//! in spans nothing else disturbs, so the plans stay as they were drawn.

use std::sync::{Arc, Mutex};

use rand::Rng;

use super::markers::Marker;
use super::node::lease_key;
use super::plan::{ElectionPlan, SLOWED_SPAN_MS};
use super::situations::LEASE_KEY_TAKEN;
use super::space::{quiet_start, QUIET_TAIL_MS, STOP_SPAN_MS};
use super::{ElectionVariant, LIVENESS_SLACK_MS};
use crate::history::Millis;
use crate::world::Actor;

/// How long the server holds the renewal aimed at by
/// [`renewal_timed_out_at`] (ms): past any response timeout the simulated
/// connections use (250 ms), so the caller sees a timeout, not a reply.
pub(super) const TIMED_OUT_HOLD_MS: u64 = 300;

/// From the injection of a timed-out renewal to the instant its leader must
/// have stopped leading: the renewal goes out within a renew interval (two
/// response timeouts if the one before it was slow), fails at its response
/// timeout, and the observer sees the demotion within a millisecond.
pub(super) fn timed_out_span(plan: &ElectionPlan, response_ms: u64) -> u64 {
    plan.renew_ms + 2 * response_ms + 20
}

/// On `election` and `election-renew-only`, every run with room for it
/// holds one leader's renewal at the server past the response timeout, at
/// an instant no
/// stall, `stop()`, slow renewals or nemesis fault touches (none when there
/// is no such room). A renewal that fails must end the term under both
/// demotions; a leader that takes the error for a passing one and renews
/// again keeps leading on, and nothing else in the run would show it.
/// Drawn from the seed's own stream, so the plans are unchanged.
fn renewal_timed_out_at(
    seed: u64,
    variant: ElectionVariant,
    plan: &ElectionPlan,
    faults: &[(u64, u64)],
    response_ms: u64,
) -> Option<Millis> {
    // The hold must outlast the response timeout, or the renewal is only
    // slow and the term may rightly go on.
    if !matches!(variant, ElectionVariant::Election | ElectionVariant::RenewOnly) || TIMED_OUT_HOLD_MS <= response_ms {
        return None;
    }
    let mut rng =
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(crate::world::derive_seed(seed, "renewal-timed-out"));
    let frac = rng.random_range(0..=1000u64);
    let need = timed_out_span(plan, response_ms) + plan.renew_ms + plan.campaign_ms + LIVENESS_SLACK_MS;
    let hi = plan.length_ms.saturating_sub(QUIET_TAIL_MS + need);
    quiet_start(300, hi, &busy_spans(plan, faults), frac, need)
}

/// What an aimed fault must stay clear of: the plan's stall, stop and slow
/// renewals (each with the time its checks watch after it) and the faults.
fn busy_spans(plan: &ElectionPlan, faults: &[(u64, u64)]) -> Vec<Option<(u64, u64)>> {
    let mut busy = vec![
        plan.stall.map(|s| (s.at, s.at + s.ms)),
        plan.stop_at.map(|s| (s, s + STOP_SPAN_MS)),
        plan.slow_renewals.map(|s| (s, s + SLOWED_SPAN_MS + plan.campaign_ms + LIVENESS_SLACK_MS)),
    ];
    busy.extend(faults.iter().map(|&f| Some(f)));
    busy
}

/// The once-per-run faults aimed at one leader, placed in quiet spans by
/// the seed ([`renewal_timed_out_at`], [`lease_key_taken_at`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Aimed {
    /// When a leader's next renewal is held past the response timeout.
    pub(super) timed_out_at: Option<Millis>,
    /// When a leader's lease key is overwritten with another owner.
    pub(super) taken_at: Option<Millis>,
}

/// The longest one-way link latency of the election's world (ms).
const MAX_ONE_WAY_MS: u64 = 10;

/// From a lease key taken away to the instant its leader must have stopped
/// leading: its next renewal goes out within a renewal interval and is
/// refused within a round trip; the observer's slack on top.
fn taken_away_span(plan: &ElectionPlan) -> u64 {
    plan.renew_ms + 2 * MAX_ONE_WAY_MS + LIVENESS_SLACK_MS
}

/// On `election` and `election-renew-only`, every run with room for it
/// overwrites the leader's lease key with another owner once, until the
/// leader must have heard of it (an operator's `SET`, a peer that ignored the election, a
/// failover that resurrected an old value), in a span nothing else
/// touches. The leader's next renewal is refused, and a refused renewal
/// ends the term (`DemotionReason::LeaseLost`) under both demotions. The
/// workload never sees a refusal otherwise under self-fencing: a key that
/// expired has passed its holder's deadline first. Drawn from the seed's
/// own stream, so the plans are unchanged.
fn lease_key_taken_at(
    seed: u64,
    variant: ElectionVariant,
    plan: &ElectionPlan,
    faults: &[(u64, u64)],
    timed_out: Option<(u64, u64)>,
) -> Option<Millis> {
    if !matches!(variant, ElectionVariant::Election | ElectionVariant::RenewOnly) {
        return None;
    }
    let mut rng =
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(crate::world::derive_seed(seed, "lease-key-taken"));
    let frac = rng.random_range(0..=1000u64);
    let need = 2 * taken_away_span(plan) + plan.campaign_ms + LIVENESS_SLACK_MS;
    let hi = plan.length_ms.saturating_sub(QUIET_TAIL_MS + need);
    // Clear of the timed-out renewal as well (the order does not matter).
    let mut busy = busy_spans(plan, faults);
    busy.push(timed_out);
    quiet_start(300, hi, &busy, frac, need)
}

/// Overwrites the election's lease key with another owner until the
/// leader must have heard of it ([`lease_key_taken_at`]), and marks when.
pub(super) async fn take_lease_key(actor: Actor, plan: ElectionPlan, markers: Arc<Mutex<Vec<Marker>>>) {
    let mut conn = actor.connection(0);
    let set = redis::cmd("SET")
        .arg(lease_key(&actor))
        .arg("someone-else")
        .arg("XX")
        .arg("PX")
        .arg(taken_away_span(&plan))
        .query_async::<Option<String>>(&mut conn)
        .await;
    if matches!(set, Ok(Some(ref ok)) if ok == "OK") {
        let at = actor.now();
        let until = at + taken_away_span(&plan);
        if let Ok(mut m) = markers.lock() {
            m.push(Marker::TakenAway { node: actor.name().to_string(), at, until, expires: until });
        }
        actor.reached(LEASE_KEY_TAKEN.name);
    }
}

/// Places the aimed faults of a run of `planned` (seed `seed`, nemesis
/// faults `faults`): the timed-out renewal first, then the taken-away key
/// clear of it.
pub(super) fn aim(
    seed: u64,
    variant: ElectionVariant,
    planned: &ElectionPlan,
    faults: &[(u64, u64)],
    response_ms: u64,
) -> Aimed {
    let timed_out_at = renewal_timed_out_at(seed, variant, planned, faults, response_ms);
    let timed_out = timed_out_at.map(|at| {
        (at, at + timed_out_span(planned, response_ms) + planned.renew_ms + planned.campaign_ms + LIVENESS_SLACK_MS)
    });
    let taken_at = lease_key_taken_at(seed, variant, planned, faults, timed_out);
    Aimed { timed_out_at, taken_at }
}
