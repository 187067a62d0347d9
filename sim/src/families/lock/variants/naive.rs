//! `lock-naive`: the `lock` workload with the lock everyone writes first,
//! `SET NX PX` to acquire and a bare `DEL` to release
//! (`redis_primitives_naive::NaiveLock`).
//!
//! What breaks: a holder that stalls inside its critical section outlives
//! its lease; another client acquires; the stalled holder wakes, writes,
//! and its `DEL` deletes the *second* holder's lock, so a third client gets
//! in while the second still trusts its lease. The `mutual-exclusion`
//! checker reports the overlap of the second and third holders. (No tokens,
//! so writes go to a plain store and prove nothing either.)

use crate::families::lock::{LockKind, LockWorkload, StoreKind};

/// The `lock-naive` settings: `lock`'s, with the naive lock, an unfenced
/// store, and a client that never checks its deadline (a naive lock gives
/// it nothing to check against but the TTL it asked for).
pub(crate) fn workload() -> LockWorkload {
    LockWorkload {
        lock: LockKind::Naive,
        store: StoreKind::Unfenced,
        modes: false,
        check_deadline: false,
        ..LockWorkload::lock()
    }
}
