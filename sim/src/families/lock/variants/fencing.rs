//! `fencing`: the `lock` workload written by clients that rely on fencing
//! alone — they do not check their lease's deadline before writing — into a
//! `FencedStore`.
//!
//! One client stalls inside its critical section past its lease; another
//! acquires (with a higher token) and writes; the stalled client wakes and
//! writes late. The store must refuse that write (rejected token, highest
//! seen), and the final value must carry the highest accepted token:
//! `no-stale-overwrite` holds. Believed overlap between the stalled holder
//! and the new one is expected and measured (`unsafe-window`), not forbidden.

use crate::families::lock::checks::mutual_exclusion::Policy;
use crate::families::lock::{LockKind, LockWorkload, StoreKind};

/// The `fencing` settings.
pub(crate) fn workload() -> LockWorkload {
    LockWorkload {
        lock: LockKind::Fenced,
        store: StoreKind::Fenced,
        check_deadline: false,
        // The stalled holder still believes; that is the point. Only the
        // resource's verdict matters here.
        policy: Policy::MeasureOnly,
        ..LockWorkload::lock()
    }
}
