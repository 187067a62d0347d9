//! The invariants only the lock family judges, with their one-line
//! meanings (its [`ReportPart`](crate::family::ReportPart) lists them for
//! `--help`, `explore` and the report).

use crate::checker::Invariant;

/// Name of the fencing-token invariant.
pub(crate) const FENCING_TOKENS_INCREASE: Invariant = Invariant::new("fencing-tokens-increase");
/// Name of the mutual-exclusion invariant.
pub(crate) const MUTUAL_EXCLUSION: Invariant = Invariant::new("mutual-exclusion");
/// Name of the lock-replies invariant: every `Lock` answer (acquire,
/// extend, release, current_token, remaining_ttl, `Retry::run`) is
/// justified by the history, in both directions.
pub(crate) const LOCK_REPLIES: Invariant = Invariant::new("lock-replies");
/// Name of the lease-views invariant: a lease's local deadline runs from
/// its request's send, and its accessors say what it was granted.
pub(crate) const LEASE_VIEWS: Invariant = Invariant::new("lease-views");
/// Name of the corrupt-state invariant: a key holding what the library
/// never writes is refused with a typed error naming it, and nothing
/// changes; a counter it can advance gives the exact next token.
pub(crate) const CORRUPT_STATE: Invariant = Invariant::new("corrupt-state");

/// Each with what it means.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        FENCING_TOKENS_INCREASE,
        "per lock name, tokens are unique and an acquire that starts after another completed gets a larger token",
    ),
    (
        MUTUAL_EXCLUSION,
        "two holders never both hold a lease they may still trust (overlap of believed holds is measured, not hidden)",
    ),
    (
        LOCK_REPLIES,
        "every Lock reply is justified by the history both ways: true only if the lease could still be ours, false only if it could be gone; a refused acquire only if a lease could be present",
    ),
    (
        LEASE_VIEWS,
        "a Lock lease's local deadline is send + ttl − drift, measured from the acquire or extend that set it; is_trusted() is true exactly before it; name, key, token and ttl are those granted",
    ),
    (
        CORRUPT_STATE,
        "a lock counter or fenced entry holding what the library never writes is refused with WrongType or CorruptState naming the key, and nothing changes; a counter it can advance gives exactly the next token, past 2^53 too",
    ),
];
