//! What the lock family's runs exist to reach: the named situations
//! (each a moment a bug would need, counted per run in the coverage table)
//! and the public operations the workload calls. Declared here, reached
//! by the actors (`client.rs`, `modes/`) and by the analysis (`judge.rs`).

use crate::api::{FENCED_STORE_READ, FENCED_STORE_WRITE};
use crate::families::lock::api::{
    LOCK_ACQUIRE, LOCK_CURRENT_TOKEN, LOCK_EXTEND, LOCK_KEEP_ALIVE, LOCK_RELEASE, LOCK_REMAINING_TTL, LOCK_WITH_LOCK,
    LOCK_WITH_LOCK_GUARDED, RETRY_RUN,
};
use crate::history::Api;
use crate::outcome::Situation;
use crate::path::Path;

/// Situations the correct lock scenarios declare (see `SITUATIONS`).
pub(crate) mod situation {
    use crate::outcome::SituationName;

    /// A guarded body's final release got a reply slower than the
    /// keep-alive interval (a targeted one-request delay).
    pub(crate) const FINAL_RELEASE_DELAYED: SituationName = SituationName::new("final-release-delayed");
    /// A guarded body was dropped and the release after it got a reply
    /// slower than the keep-alive interval (the same one-request delay).
    pub(crate) const CANCELLED_RELEASE_DELAYED: SituationName = SituationName::new("cancelled-release-delayed");
    /// A `FencedStore::read`'s span overlapped a write to the same key
    /// (reached by the analysis).
    pub(crate) const STORE_READ_OVERLAPPED_WRITE: SituationName = SituationName::new("store-read-overlapped-write");
    /// A holder asked `is_trusted()` at its local deadline or 1 ms before.
    pub(crate) const TRUST_CHECKED_AT_THE_DEADLINE: SituationName = SituationName::new("trust-checked-at-the-deadline");
    /// A holder's own pause ended after its lease's local deadline.
    pub(crate) const LEASE_EXPIRED_WHILE_PAUSED: SituationName = SituationName::new("lease-expired-while-paused");
    /// The fenced store rejected a write (a newer token had written).
    pub(crate) const STALE_WRITE_REFUSED: SituationName = SituationName::new("stale-write-refused");
    /// `Lock::extend` returned false.
    pub(crate) const EXTENSION_REFUSED: SituationName = SituationName::new("extension-refused");
    /// `Lock::extend` returned true.
    pub(crate) const EXTENSION_CONFIRMED: SituationName = SituationName::new("extension-confirmed");
    /// `Lock::release` after the TTL returned false.
    pub(crate) const RELEASE_AFTER_EXPIRY: SituationName = SituationName::new("release-after-expiry");
    /// A guarded body was dropped because the lease stopped being trusted.
    pub(crate) const GUARD_CANCELLED_BODY: SituationName = SituationName::new("guard-cancelled-body");
    /// A guarded body finished under its lease.
    pub(crate) const GUARDED_BODY_COMPLETED: SituationName = SituationName::new("guarded-body-completed");
    /// An acquire whose outcome was unknown consumed a token (a gap in the
    /// granted tokens).
    pub(crate) const ACQUIRE_TIMED_OUT_BUT_APPLIED: SituationName = SituationName::new("acquire-timed-out-but-applied");
    /// `Retry::run` was granted on a second or later attempt.
    pub(crate) const RETRY_ACQUIRED_AFTER_CONTENTION: SituationName =
        SituationName::new("retry-acquired-after-contention");
    /// `Retry::run`'s caller froze in its first backoff until the retry's
    /// deadline (the next attempt, if any, would start exactly on it).
    pub(crate) const RETRY_PAUSED_TO_DEADLINE: SituationName = SituationName::new("retry-paused-to-deadline");
    /// An extend confirmed after a pause, but past the local deadline: the
    /// holder treated the success as a loss.
    pub(crate) const STALE_SUCCESS_AFTER_PAUSE: SituationName = SituationName::new("stale-success-after-pause");
    /// The liveness probe got the lock after every fault healed.
    pub(crate) const LOCK_FREE_AFTER_HEAL: SituationName = SituationName::new("lock-free-after-heal");
    /// `with_lock`'s release got no answer in time (a targeted one-request
    /// delay past the response timeout), and the body's output still came
    /// back.
    pub(crate) const WITH_LOCK_RELEASE_UNANSWERED: SituationName = SituationName::new("with-lock-release-unanswered");
    /// A guarded body's first keep-alive extend was held at the server
    /// until after the lease had expired there.
    pub(crate) const KEEP_ALIVE_EXTEND_HELD: SituationName = SituationName::new("keep-alive-extend-held");
    /// An extend sent just before the lease's local deadline had its reply
    /// held at the server until after the lease expired there.
    pub(crate) const EXTEND_REPLY_HELD: SituationName = SituationName::new("extend-reply-held-across-expiry");
    /// A release sent just before the lease's local deadline had its reply
    /// held at the server until after the lease expired there.
    pub(crate) const RELEASE_REPLY_HELD: SituationName = SituationName::new("release-reply-held-across-expiry");
    /// `Lock::with_lock` answered `NotAcquired` (its body did not run).
    pub(crate) const WITH_LOCK_NOT_ACQUIRED: SituationName = SituationName::new("with-lock-not-acquired");
    /// A guarded body was dropped because an extension failed
    /// (`LeaseLoss::Failed`).
    pub(crate) const GUARD_EXTENSION_FAILED: SituationName = SituationName::new("guard-extension-failed");
}

/// The situations of `fencing`; `lock` declares all but the last (its
/// holders check their deadline before writing, so a refused stale write
/// is rare there).
const ALL: [Situation; 22] = [
    Situation {
        name: situation::LEASE_EXPIRED_WHILE_PAUSED,
        meaning: "a holder resumed from a pause after its lease's local deadline",
    },
    Situation { name: situation::EXTENSION_REFUSED, meaning: "Lock::extend returned false (lease expired or taken)" },
    Situation { name: situation::EXTENSION_CONFIRMED, meaning: "Lock::extend returned true" },
    Situation { name: situation::RELEASE_AFTER_EXPIRY, meaning: "Lock::release after the TTL returned false" },
    Situation {
        name: situation::GUARD_CANCELLED_BODY,
        meaning: "with_lock_guarded / keep_alive dropped a body when the lease stopped being trusted",
    },
    Situation { name: situation::GUARDED_BODY_COMPLETED, meaning: "a guarded body finished under its lease" },
    Situation {
        name: situation::ACQUIRE_TIMED_OUT_BUT_APPLIED,
        meaning: "an acquire of unknown outcome consumed a fencing token (gap in granted tokens)",
    },
    Situation {
        name: situation::RETRY_ACQUIRED_AFTER_CONTENTION,
        meaning: "Retry::run was granted on its second or later attempt",
    },
    Situation {
        name: situation::RETRY_PAUSED_TO_DEADLINE,
        meaning: "Retry::run's caller froze in its first backoff until exactly the retry's deadline",
    },
    Situation {
        name: situation::STALE_SUCCESS_AFTER_PAUSE,
        meaning: "an extend confirmed after the local deadline (paused between send and reply) was treated as a loss",
    },
    Situation {
        name: situation::LOCK_FREE_AFTER_HEAL,
        meaning: "after the faults healed, the liveness probe was granted the lock in time",
    },
    Situation {
        name: situation::TRUST_CHECKED_AT_THE_DEADLINE,
        meaning: "a holder asked is_trusted() exactly at its local deadline, or 1 ms before it",
    },
    Situation {
        name: situation::FINAL_RELEASE_DELAYED,
        meaning: "the final release of a with_lock_guarded body was answered slower than the keep-alive interval (one request delayed at the server)",
    },
    Situation {
        name: situation::CANCELLED_RELEASE_DELAYED,
        meaning: "a with_lock_guarded body was dropped and the release after it was answered slower than the keep-alive interval (one request delayed at the server)",
    },
    Situation {
        name: situation::STORE_READ_OVERLAPPED_WRITE,
        meaning: "a FencedStore::read was in flight while a write to the same key was (another client's, or its own pipelined beside it)",
    },
    Situation {
        name: situation::WITH_LOCK_RELEASE_UNANSWERED,
        meaning: "with_lock's release timed out (one request delayed past the response timeout) and the body's output still came back",
    },
    Situation {
        name: situation::KEEP_ALIVE_EXTEND_HELD,
        meaning: "a guarded body's first keep-alive extend was held at the server until 20-80 ms after the lease expired there",
    },
    Situation {
        name: situation::EXTEND_REPLY_HELD,
        meaning: "an extend sent just before the local deadline ran at once, and its reply was held until 20-80 ms after the lease expired at the server",
    },
    Situation {
        name: situation::RELEASE_REPLY_HELD,
        meaning: "a release sent just before the local deadline ran at once, and its reply was held until 20-80 ms after the lease expired at the server",
    },
    Situation {
        name: situation::WITH_LOCK_NOT_ACQUIRED,
        meaning: "Lock::with_lock answered NotAcquired, and its body did not run",
    },
    Situation {
        name: situation::GUARD_EXTENSION_FAILED,
        meaning: "with_lock_guarded dropped a body because an extension failed (LeaseLoss::Failed)",
    },
    Situation {
        name: situation::STALE_WRITE_REFUSED,
        meaning: "the fenced store refused a write carrying an older token",
    },
];

/// The public operations the lock workloads exist to call (every
/// operation of `Lock`, with `Retry` and the fenced store the holders
/// write through).
pub(crate) const OPERATIONS: &[Api] = &[
    LOCK_ACQUIRE,
    LOCK_RELEASE,
    LOCK_EXTEND,
    LOCK_WITH_LOCK,
    LOCK_WITH_LOCK_GUARDED,
    LOCK_KEEP_ALIVE,
    LOCK_CURRENT_TOKEN,
    LOCK_REMAINING_TTL,
    RETRY_RUN,
    FENCED_STORE_WRITE,
    FENCED_STORE_READ,
];

/// The situations of `lock`.
pub(crate) const SITUATIONS: &[Situation] = ALL.split_at(ALL.len() - 1).0;

/// The situations of `fencing`.
pub(crate) const FENCING_SITUATIONS: &[Situation] = &ALL;

/// Every path of the lock workload's operations that the promise table
/// judges and the pinned seeds take; the fenced store's refusal last
/// (`lock`'s holders check their deadline before writing, so a refused
/// write is rare there, as `stale-write-refused` is).
const ALL_PATHS: &[(Api, Path)] = &[
    (LOCK_ACQUIRE, Path::Ok),
    (LOCK_ACQUIRE, Path::Refused),
    (LOCK_ACQUIRE, Path::Failed),
    (LOCK_RELEASE, Path::Ok),
    (LOCK_RELEASE, Path::Refused),
    (LOCK_RELEASE, Path::Failed),
    (LOCK_EXTEND, Path::Ok),
    (LOCK_EXTEND, Path::Refused),
    (LOCK_EXTEND, Path::Failed),
    (LOCK_WITH_LOCK, Path::Ok),
    (LOCK_WITH_LOCK, Path::Refused),
    (LOCK_WITH_LOCK, Path::Failed),
    (LOCK_WITH_LOCK_GUARDED, Path::Ok),
    (LOCK_WITH_LOCK_GUARDED, Path::Failed),
    (LOCK_KEEP_ALIVE, Path::Ok),
    (LOCK_CURRENT_TOKEN, Path::Ok),
    (LOCK_CURRENT_TOKEN, Path::Failed),
    (LOCK_REMAINING_TTL, Path::Ok),
    (LOCK_REMAINING_TTL, Path::Failed),
    (RETRY_RUN, Path::Ok),
    (RETRY_RUN, Path::Refused),
    (RETRY_RUN, Path::Failed),
    (FENCED_STORE_READ, Path::Ok),
    (FENCED_STORE_READ, Path::Failed),
    (FENCED_STORE_WRITE, Path::Ok),
    (FENCED_STORE_WRITE, Path::Refused),
];

/// The paths of `lock` and `lock-floored`.
pub(crate) const PATHS: &[(Api, Path)] = ALL_PATHS.split_at(ALL_PATHS.len() - 1).0;

/// The paths of `fencing`.
pub(crate) const FENCING_PATHS: &[(Api, Path)] = ALL_PATHS;
