//! The lock family's checkers: the invariants only a lock's history
//! speaks to, each a pure function of the events (and, for some, the
//! lock server's execution log), read through [`LockOp`](super::LockOp).
//! Which of them judge a run is `judge.rs`'s business; the invariant names
//! are listed with the others in `crate::checker`.
//!
//! | module | invariant |
//! |---|---|
//! | `mutual_exclusion` | `mutual-exclusion`: holds, their overlaps, and which overlaps a lock promised away |
//! | `fencing_tokens` | `fencing-tokens-increase`: fresh, larger tokens in real-time order |
//! | `lock_replies/` | `lock-replies`: every `Lock` answer justified by the history, both ways |
//! | `guarded_body/` | `self-fencing` and `liveness` of guarded bodies and their keep-alive |
//! | `lease_views` | `lease-views`: a lease's deadline and accessors |
//! | `lock_liveness` | `liveness`: a free lock granted promptly after the heal |
//! | `corrupt_state` | `corrupt-state`: planted keys refused with a typed error naming them |

pub(crate) mod corrupt_state;
pub(crate) mod fencing_tokens;
pub(crate) mod guarded_body;
pub(crate) mod lease_views;
pub(crate) mod lock_liveness;
pub(crate) mod lock_replies;
pub mod mutual_exclusion;
