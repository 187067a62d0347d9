//! `lock-failover`: the `lock` workload on a primary with one replica,
//! through a replication cut and a failover.
//!
//! Replication is asynchronous: a write the primary acknowledged may not
//! have reached its replica when the primary dies. Here the link to the
//! replica is cut at [`CUT_AT_MS`], the primary crashes at
//! [`FAILOVER_AT_MS`], and after [`FAILOVER_FOR_MS`] the replica is
//! promoted with what it had at the cut. Every token issued during the cut
//! is issued again, and the lease keys of the cut are gone, so a second
//! owner can take a lock its holder still trusts. `fencing-tokens-increase`
//! is violated: a documented non-guarantee of `Lock` (and of any lock on
//! asynchronously replicated Redis), found by the harness, not assumed.
//!
//! The variants are the two mitigations (ADRs 0016, 0017), each expected
//! to hold what it promises, and the limit of one of them:
//!
//! - `lock-failover-acknowledged`: an acquire is handed out only once the
//!   replica has acknowledged it (`WAIT 1`); during the cut every acquire is
//!   refused ([`situation::ACQUIRE_NOT_ACKNOWLEDGED`]). Whatever a client
//!   was given survives the failover, lease key and counter alike, so
//!   mutual exclusion is judged as in `lock`, and tokens keep increasing;
//! - `lock-failover-floored`: tokens are `max(counter + 1, server µs)`. The
//!   counter still goes back at the failover, and lease keys of the cut are
//!   lost (mutual exclusion is measured, not judged), but the promoted
//!   server's clock is past every token issued before, so tokens keep
//!   increasing and the store refuses the stale holder;
//! - `lock-failover-clock-back`: the same, with the promoted server's clock
//!   two seconds behind. The floor is then below the tokens issued during
//!   the cut, and they are issued again: the floor is only as good as the
//!   clock of the server that takes over (expected to violate).
//!
//! The resource lives on a second, unreplicated node, as in `counter-loss`.

use crate::families::lock::checks::mutual_exclusion::Policy;
use crate::families::lock::op::LockOp;
use crate::families::lock::{LockKind, LockWorkload, Protection, StoreKind};
use crate::history::EventKind;
use crate::nemesis::{Fault, FaultKind, Schedule, Target};
use crate::outcome::Outcome;

/// When the replication link of the lock's node is cut (ms).
pub(crate) const CUT_AT_MS: u64 = 800;
/// How long it stays cut (ms); the failover happens inside the cut.
pub(crate) const CUT_FOR_MS: u64 = 1400;
/// When the lock's primary crashes (ms).
pub(crate) const FAILOVER_AT_MS: u64 = 1500;
/// How long until its replica is promoted (ms).
pub(crate) const FAILOVER_FOR_MS: u64 = 150;
/// How far behind the promoted server's clock runs in `lock-failover-clock-back` (ms).
pub(crate) const CLOCK_BEHIND_MS: i64 = 2000;

/// Situations the failover scenarios declare.
pub(crate) mod situation {
    use crate::outcome::SituationName;

    /// An acknowledged acquire was refused: the replica did not acknowledge it.
    pub(crate) const ACQUIRE_NOT_ACKNOWLEDGED: SituationName = SituationName::new("acquire-not-acknowledged");
    /// A lease was granted by the promoted server.
    pub(crate) const GRANTED_AFTER_FAILOVER: SituationName = SituationName::new("granted-after-failover");
}

use crate::outcome::Situation;

const NOT_ACKNOWLEDGED: Situation = Situation {
    name: situation::ACQUIRE_NOT_ACKNOWLEDGED,
    meaning: "an acknowledged acquire was refused: the cut replica did not acknowledge it",
};
const GRANTED_AFTER: Situation = Situation {
    name: situation::GRANTED_AFTER_FAILOVER,
    meaning: "the promoted replica granted a lease (after the counter it had went back)",
};

/// What `lock-failover-acknowledged` exists to reach.
pub(crate) const ACKNOWLEDGED_SITUATIONS: &[Situation] = &[NOT_ACKNOWLEDGED, GRANTED_AFTER];
/// What `lock-failover-floored` exists to reach.
pub(crate) const FLOORED_SITUATIONS: &[Situation] = &[GRANTED_AFTER];

/// The cut and the failover every seed gets (and the search space keeps).
pub(crate) fn cut_and_failover_faults() -> Vec<Fault> {
    cut_and_failover()
}

/// The cut and the failover every seed gets.
fn cut_and_failover() -> Vec<Fault> {
    vec![
        Fault { at: CUT_AT_MS, duration: CUT_FOR_MS, kind: FaultKind::CutReplication, target: Target::Node(0) },
        Fault { at: FAILOVER_AT_MS, duration: FAILOVER_FOR_MS, kind: FaultKind::Failover, target: Target::Node(0) },
    ]
}

/// The `lock-failover` settings: plain `Lock`.
pub(crate) fn workload() -> LockWorkload {
    let base = LockWorkload::lock();
    LockWorkload {
        nodes: 2,
        lock_node: 0,
        replicas: 1,
        store_node: 1,
        lock: LockKind::Fenced,
        store: StoreKind::Fenced,
        // A failover also ends leases early: overlap is what the
        // mitigations are judged on, here it is measured.
        policy: Policy::MeasureOnly,
        always: cut_and_failover(),
        modes: false,
        ..base
    }
}

/// `lock-failover-acknowledged`: acquires wait for the replica.
pub(crate) fn acknowledged() -> LockWorkload {
    LockWorkload { protection: Protection::Acknowledged, policy: Policy::ForbidTrustedOverlap, ..workload() }
}

/// `lock-failover-floored`: time-floored tokens.
pub(crate) fn floored() -> LockWorkload {
    LockWorkload { protection: Protection::TimeFloored, ..workload() }
}

/// `lock-failover-clock-back`: time-floored tokens, the promoted server's
/// clock behind from the moment it takes over.
pub(crate) fn clock_back() -> LockWorkload {
    let mut w = floored();
    w.always.push(Fault {
        at: FAILOVER_AT_MS + FAILOVER_FOR_MS,
        duration: 1000,
        kind: FaultKind::ClockStep { offset_ms: -CLOCK_BEHIND_MS },
        target: Target::Node(0),
    });
    w
}

/// The situations a finished run reached that only its history shows.
pub(crate) fn reach(outcome: &mut Outcome, schedule: &Schedule) {
    let promoted = schedule.faults.iter().filter(|f| f.kind == FaultKind::Failover).map(Fault::end).min();
    let Some(promoted) = promoted else { return };
    let granted_after = outcome.history.iter().any(|e| {
        e.kind == EventKind::Ok
            && e.time > promoted
            && matches!(LockOp::of(&e.op), Some(LockOp::Acquire { token: Some(_), .. }))
    });
    if granted_after {
        outcome.reach(situation::GRANTED_AFTER_FAILOVER);
    }
}
