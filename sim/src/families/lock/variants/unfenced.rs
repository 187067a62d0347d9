//! `fencing-unfenced`: `fencing` with a resource that ignores the token
//! (`redis_primitives_naive::UnfencedStore`, a plain `SET`).
//!
//! What breaks: the stalled holder's late write is accepted after the newer
//! holder's, and silently overwrites it. `no-stale-overwrite` reports the
//! store accepting a lower token after a higher one, and (when nothing newer
//! lands afterwards) a final value written with a stale token.

use crate::families::lock::checks::mutual_exclusion::Policy;
use crate::families::lock::{LockKind, LockWorkload, StoreKind};

/// The `fencing-unfenced` settings.
pub(crate) fn workload() -> LockWorkload {
    LockWorkload {
        lock: LockKind::Fenced,
        store: StoreKind::Unfenced,
        check_deadline: false,
        modes: false,
        policy: Policy::MeasureOnly,
        ..LockWorkload::lock()
    }
}
