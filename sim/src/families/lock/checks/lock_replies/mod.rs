//! `lock-replies`: every answer `Lock` gives is justified by the history,
//! in both directions.
//!
//! The bridge runs each command synchronously at simulated time, and the
//! server's clock is pinned to simulated time, so an operation that
//! completed executed at some instant in `[invoke, completion]`; one whose
//! outcome is unknown (`Info`, or an invoke with no completion: a dropped
//! future) executed at most once, at some instant after its invoke. A key
//! set at `s` with TTL `t` is visible up to and including `s + t` (Redis
//! keeps a key alive while `now <= expiry`). From these facts alone, per
//! lease (one granted acquire, identified by process and token):
//!
//! - **latest possible expiry** `alive_max`: the acquire's completion plus
//!   its TTL, pushed on by every other extend (confirmed or unknown) that
//!   could have run while the key was alive, and by extensions the history
//!   cannot see (a `keep_alive` loop or `with_lock_guarded` body:
//!   [`LockOp::Guarded`]) up to twice the TTL after that operation ended (the
//!   loop stops there; one extension may still be in flight);
//! - **earliest possible expiry** `alive_min`: the invoke of whichever
//!   setter could have run last, plus its TTL.
//!
//! The rules (none convicts on an unknown outcome):
//!
//! 1. `extend`/`release` returned true ⇒ the key could still be ours: it was
//!    invoked no later than `alive_max`, no release of ours had been
//!    confirmed, and no other client had been granted the lock after our
//!    acquire and before this invoke (a grant means the key was absent).
//! 2. `extend`/`release` returned false ⇒ the key could be gone: a refusal
//!    that completed before `alive_min`, with no release of ours sent, no
//!    server restart and no clock step, is a violation.
//! 3. `acquire` refused ⇒ some lease could be present during the call: a
//!    refusal while every earlier lease is definitely gone (expired past
//!    `alive_max`, or released) and every acquire of unknown outcome is
//!    definitely expired (it may land until the faults settle, plus its
//!    TTL) is a violation — it catches a lock that never grants or keeps
//!    keys too long. `acquire` granted ⇒ no other lease was definitely
//!    present throughout the call.
//! 4. `current_token` lies between the number of grants completed before it
//!    was invoked (and the highest such token) and the number of acquires
//!    (granted or unknown) invoked before it completed.
//! 5. `remaining_ttl` never exceeds the largest TTL requested so far;
//!    `None` only if no lease was definitely present, `Some` only if one
//!    could have been.
//! 6. `Retry::run` made its first attempt whatever its deadline, gave up
//!    (no deadline set) only after making all its attempts, and a grant it
//!    reports is its last attempt's; between attempts `n` and `n + 1` (from
//!    0) it slept at most `min(base × 2^n, max)` (when the history records
//!    its backoff), unless its caller was frozen meanwhile; an attempt that
//!    failed with an error is its last (an error is not a refusal: the
//!    policy returns it, and a `Retry::run` that answered a grant or gave
//!    up after one went on past it).
//!
//! 7. A definite answer (true, false, a grant, a refusal, a remaining
//!    time, a token) comes from the server: some request of the caller ran
//!    at the lock's server between the call's invoke and its answer (the
//!    bridge's execution log). A failure reported as a refusal (a timed-out
//!    release read as "already gone", a cached answer) has none.
//! 8. `acquire` is one attempt: at most one acquire script of the caller
//!    ran on the name between the call's invoke and its answer (the
//!    execution log again; a `NOSCRIPT` answer ran nothing).
//!
//! Rule 5 also bounds a `Some` by the lease that was definitely present
//! throughout the read: the key expired no earlier than that lease's
//! earliest possible expiry and no later than its latest, so the reading is
//! within a millisecond of `[alive_min − answer, alive_max − invoke]`.
//!
//! Rules 2, 3 (refusals) and 5 (`None`, and the bounds of a `Some`) assume
//! no server restart and no clock step in the history (both end leases
//! early); they are skipped otherwise.
//!
//! The files: `model` holds the views of the history every rule reads
//! (calls, leases, the bounds on a lease's life); `holder` rules 1 and 2,
//! `acquire` rule 3, `reads` rules 4 and 5, `retry` rule 6, `origin`
//! rule 7, `attempts` rule 8.

use crate::bridge::Execution;
use crate::checker::Violation;
use crate::families::lock::invariants::LOCK_REPLIES;
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind, Millis};

mod acquire;
mod attempts;
mod holder;
mod model;
mod origin;
mod reads;
mod retry;

use model::{Call, Model};

/// Checks every lock reply in `events`.
/// `executions` is the lock server's execution log (rule 7).
pub(crate) fn check(events: &[Event], executions: &[Execution]) -> Vec<Violation> {
    check_tokens(events, executions, None)
}

/// As [`check`], for a lock whose tokens are floored by the server's clock
/// (`Tokens::TimeFloored`; the simulation started at `epoch_unix_ms`): a
/// token is at most `max(the previous + 1, the clock)`, so the `k`-th
/// acquire possibly granted by simulated time `t` issued at most
/// `clock(t) + k`, the bound `current_token` is held to.
pub(crate) fn check_floored(events: &[Event], executions: &[Execution], epoch_unix_ms: u64) -> Vec<Violation> {
    check_tokens(events, executions, Some(epoch_unix_ms))
}

/// One completed call under judgement: its index among the model's calls,
/// the call, how and when it completed, and what it answered.
struct Reply<'m, 'a> {
    index: usize,
    call: &'m Call<'a>,
    kind: EventKind,
    done: Millis,
    result: &'a LockOp,
}

/// Records a `lock-replies` violation that became visible at `at`.
fn report(out: &mut Vec<Violation>, at: Millis, detail: String) {
    out.push(Violation::new(LOCK_REPLIES, Some(at), detail));
}

/// Every rule, call by call: rule 7 for any definite answer, then the rule
/// of the call's kind (in that order, the order of the violations
/// reported).
fn check_tokens(events: &[Event], executions: &[Execution], floor_epoch_ms: Option<u64>) -> Vec<Violation> {
    let m = Model::new(events);
    let mut out = Vec::new();
    for (index, call) in m.calls.iter().enumerate() {
        let Some((kind, done, result)) = call.done else { continue };
        let r = Reply { index, call, kind, done, result };
        origin::came_from_redis(&r, executions, &mut out);
        if let LockOp::Acquire { name, .. } = call.op {
            attempts::one_attempt(&m, &r, name, executions, &mut out);
        }
        match (call.op, kind) {
            (LockOp::Extend { .. } | LockOp::Release { .. }, EventKind::Ok) => holder::confirmed(&m, &r, &mut out),
            (LockOp::Extend { .. } | LockOp::Release { .. }, EventKind::Fail) => holder::refused(&m, &r, &mut out),
            (LockOp::Acquire { name, .. }, EventKind::Fail) => acquire::refused(&m, &r, name, &mut out),
            (LockOp::Acquire { name, .. }, EventKind::Ok) => acquire::granted(&m, &r, name, &mut out),
            (LockOp::CurrentToken { name, .. }, EventKind::Ok) => {
                reads::current_token(&m, &r, name, floor_epoch_ms, &mut out);
            }
            (LockOp::RemainingTtl { name, .. }, EventKind::Ok) => reads::remaining_ttl(&m, &r, name, &mut out),
            (LockOp::Retry { .. }, EventKind::Ok | EventKind::Fail) => retry::judge(events, &m, &r, &mut out),
            _ => {}
        }
    }
    crate::checker::capped(out, LOCK_REPLIES)
}

#[cfg(test)]
mod tests;
