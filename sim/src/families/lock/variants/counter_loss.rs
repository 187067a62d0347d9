//! `counter-loss`: the `lock` workload across a restart of the lock's
//! redis-server without persistence.
//!
//! The fence counter lives in the lock server's memory. A restart without
//! persistence (or an eviction, or a failover to a replica that had not yet
//! received the last `INCR`) loses it, and the next acquire is handed a
//! token that was already issued: `fencing-tokens-increase` is violated.
//! This is a documented non-guarantee (reference case 15: the counter must
//! never be lost), kept as a scenario so the harness proves it can see it.
//!
//! The resource lives on a second node that is not restarted, as a real
//! downstream system would: it keeps its highest token and refuses the
//! reissued lower ones (a liveness loss), while a reissued token *equal* to
//! its highest is accepted — the stale write fencing cannot stop here.
//!
//! `counter-loss-floored` is the same restart with time-floored tokens
//! (`Tokens::TimeFloored`, ADR 0017): the counter is lost all the same, but
//! the next token is the server's clock in µs, above every token issued
//! before, so `fencing-tokens-increase` holds.

use crate::families::lock::checks::mutual_exclusion::Policy;
use crate::families::lock::{LockKind, LockWorkload, Protection, StoreKind};
use crate::nemesis::{Fault, FaultKind, Target};

/// When the lock server restarts (ms) and how long it stays down.
pub(crate) const RESTART_AT_MS: u64 = 1500;
/// Downtime of the restart (ms).
pub(crate) const RESTART_FOR_MS: u64 = 100;

/// The `counter-loss` settings.
pub(crate) fn workload() -> LockWorkload {
    let base = LockWorkload::lock();
    LockWorkload {
        nodes: 2,
        lock_node: 0,
        store_node: 1,
        lock: LockKind::Fenced,
        store: StoreKind::Fenced,
        // Mutual exclusion is not what this scenario is about (a restart
        // also ends every lease early); it is measured only.
        policy: Policy::MeasureOnly,
        // Drawn faults stay on the client side; the restart is fixed.
        faults: base.faults.clone(),
        always: vec![Fault {
            at: RESTART_AT_MS,
            duration: RESTART_FOR_MS,
            kind: FaultKind::ServerRestart,
            target: Target::Node(0),
        }],
        modes: false,
        ..base
    }
}

/// The `counter-loss-floored` settings: the same restart, time-floored tokens.
pub(crate) fn floored() -> LockWorkload {
    LockWorkload { protection: Protection::TimeFloored, ..workload() }
}
