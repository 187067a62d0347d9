//! The situations the election scenarios exist to reach, and those
//! recognised in a finished history (the rest are reached by the actors as
//! they happen).

use super::markers::Marker;
use super::op::{ElectionOp, Role};
use super::reigns::reigns;
use super::{ElectionVariant, ELECTION_NAME};
use crate::history::{Op, WriteResult};
use crate::nemesis::FaultClass;
use crate::outcome::{Outcome, Situation, SituationName};

/// Situations every election variant reaches.
const COMMON: [Situation; 3] = [
    Situation {
        name: SituationName::new("failover-during-stall"),
        meaning: "the leader froze longer than its lease and another node led before it woke",
    },
    Situation { name: SituationName::new("hand-over-after-stop"), meaning: "a leader called stop() and another node took over" },
    Situation {
        name: SituationName::new("campaign-answered-past-its-deadline"),
        meaning: "every node froze right after sending its first campaign, so the winner saw its grant only after its own deadline",
    },
];

/// What `election` exists to reach.
pub(crate) const SITUATIONS: &[Situation] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    Situation {
        name: SituationName::new("stalled-leader-stopped-believing"),
        meaning: "a frozen leader's reign ended at its local deadline, while it was still frozen",
    },
    Situation {
        name: SituationName::new("renewal-confirmed"),
        meaning: "a leader's renewal was confirmed and its deadline moved on",
    },
    EPOCHS_PAST_2_POW_53,
    Situation {
        name: SituationName::new("stale-leader-write-refused"),
        meaning: "the fenced store refused a write carrying an older epoch",
    },
    Situation {
        name: SituationName::new("demoted-deadline-reached"),
        meaning: "a leader stepped down because no renewal was confirmed before its local deadline",
    },
    Situation { name: SituationName::new("demoted-stopped"), meaning: "a leader's term ended through stop()" },
    HAND_BACK_HELD,
    CAMPAIGN_HELD_AT_STOP,
    RENEWAL_TIMED_OUT,
    LEASE_KEY_TAKEN,
];

/// A leader's lease key overwritten with another owner (`election` and
/// `election-renew-only`).
pub(super) const LEASE_KEY_TAKEN: Situation = Situation {
    name: SituationName::new("lease-key-taken-away"),
    meaning:
        "a leader's lease key was overwritten with another owner: its next renewal is refused and must end its term",
};

/// A leader's renewal held past the response timeout (`election` and
/// `election-renew-only`).
pub(super) const RENEWAL_TIMED_OUT: Situation = Situation {
    name: SituationName::new("renewal-timed-out"),
    meaning:
        "a leader's renewal was held at the server past the response timeout: the failed renewal must end its term",
};

/// A follower's campaign answered late, across its `stop()` (`election` only).
pub(super) const CAMPAIGN_HELD_AT_STOP: Situation = Situation {
    name: SituationName::new("stop-during-a-held-campaign"),
    meaning: "a follower called stop() while the reply to its campaign (sent after the leader handed back) was held at the server: a won lease must be handed back, not led on",
};

/// A stop()'s hand-back held at the server (`election` only).
pub(super) const HAND_BACK_HELD: Situation = Situation {
    name: SituationName::new("hand-back-held-at-the-server"),
    meaning: "a leader called stop() and the server held the reply to its hand-back 30-150 ms: it stopped believing before the key went, not when it heard",
};

/// Epochs past the exact range of a Lua number (a double).
const EPOCHS_PAST_2_POW_53: Situation = Situation {
    name: SituationName::new("epochs-past-2-pow-53"),
    meaning: "a leader was elected with an epoch above 2^53 (the counter was preset just below it)",
};

/// What `election-renew-only` exists to reach.
pub(crate) const RENEW_ONLY_SITUATIONS: &[Situation] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    EPOCHS_PAST_2_POW_53,
    Situation {
        name: SituationName::new("stale-leader-write-refused"),
        meaning: "the fenced store refused a write carrying an older epoch",
    },
    Situation {
        name: SituationName::new("demoted-lease-lost"),
        meaning: "a woken leader's renewal found the lease gone or someone else's, and it stepped down",
    },
    Situation { name: SituationName::new("demoted-stopped"), meaning: "a leader's term ended through stop()" },
    RENEWAL_TIMED_OUT,
    LEASE_KEY_TAKEN,
];

/// What `election-no-epoch` exists to reach.
pub(crate) const NO_EPOCH_SITUATIONS: &[Situation] = &[COMMON[0], COMMON[1]];

const LEADER_AFTER_FAILOVER: Situation = Situation {
    name: SituationName::new("leader-after-failover"),
    meaning: "a node was elected by the promoted replica (after the epoch counter it had went back)",
};

/// What the mitigated `election-failover-*` scenarios exist to reach.
pub(crate) const FAILOVER_SITUATIONS: &[Situation] = &[LEADER_AFTER_FAILOVER];

pub(super) const WRITE_NOT_ACKNOWLEDGED: Situation = Situation {
    name: SituationName::new("write-not-acknowledged"),
    meaning: "an acknowledged fenced write made during the replication cut was reported unconfirmed (NotAcknowledged)",
};

/// What `election-failover-acknowledged` exists to reach.
pub(crate) const ACKNOWLEDGED_FAILOVER_SITUATIONS: &[Situation] = &[LEADER_AFTER_FAILOVER, WRITE_NOT_ACKNOWLEDGED];

/// When the failover's promotion happened, from the run's fault log.
fn fault_spans_of_failover(outcome: &Outcome) -> Option<u64> {
    outcome.history.iter().find_map(|e| match &e.op {
        Op::Fault(fault) if fault.nemesis().is_some_and(|s| s.undoes(FaultClass::Failover)) => Some(e.time),
        _ => None,
    })
}

/// Situations recognised in the finished history.
pub(super) fn reach_from_history(
    outcome: &mut Outcome,
    variant: ElectionVariant,
    failovers: &[u64],
    handovers: &[u64],
    markers: &[Marker],
    lease_ms: u64,
) {
    if !failovers.is_empty() {
        outcome.reach(SituationName::new("failover-during-stall"));
    }
    if !handovers.is_empty() {
        outcome.reach(SituationName::new("hand-over-after-stop"));
    }
    let reigns = reigns(&outcome.history, ELECTION_NAME);
    let stalled_past_deadline = markers.iter().any(|m| match m {
        Marker::Stall { node, at, duration } => {
            *duration > lease_ms
                && reigns.iter().any(|r| &r.process == node && r.from <= *at && r.to > *at && r.to < at + duration)
        }
        Marker::Stop { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => false,
    });
    if variant.at_deadline() && stalled_past_deadline {
        outcome.reach(SituationName::new("stalled-leader-stopped-believing"));
    }
    let mut refused = false;
    let mut renewed = false;
    let mut past_2_pow_53 = false;
    let mut deadlines: std::collections::BTreeMap<(&str, Option<u64>), u64> = Default::default();
    for e in &outcome.history {
        if matches!(&e.op, Op::Write { result: Some(WriteResult::Rejected { .. }), .. }) {
            refused = true;
        }
        if let Some(ElectionOp::Role { role: Role::Leader, epoch, deadline, .. }) = e.op.family::<ElectionOp>() {
            past_2_pow_53 |= epoch.is_some_and(|e| e > 1 << 53);
            if let Some(d) = deadline {
                if let Some(old) = deadlines.insert((e.process.as_str(), *epoch), *d) {
                    renewed |= *d > old;
                }
            }
        }
    }
    if refused {
        outcome.reach(SituationName::new("stale-leader-write-refused"));
    }
    if renewed {
        outcome.reach(SituationName::new("renewal-confirmed"));
    }
    if past_2_pow_53 {
        outcome.reach(EPOCHS_PAST_2_POW_53.name);
    }
}

/// `leader-after-failover`: a node was elected after the failover's
/// promotion.
pub(super) fn reach_after_failover(outcome: &mut Outcome) {
    let promoted = fault_spans_of_failover(outcome);
    let elected_after = outcome.history.iter().any(|e| {
        promoted.is_some_and(|t| e.time > t)
            && matches!(e.op.family::<ElectionOp>(), Some(ElectionOp::ElectionCallback { elected: true, .. }))
    });
    if elected_after {
        outcome.reach(LEADER_AFTER_FAILOVER.name);
    }
}
