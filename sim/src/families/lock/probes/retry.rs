//! The retry probe: `Retry::run`'s edges, staged on every run.
//!
//! The workload wraps some acquires in `Retry::run` with drawn settings, and
//! `checks::lock_replies` judges each run from its attempts: none starts
//! at or past the deadline, no sleep is longer than its cap, no more
//! attempts than configured, an error ends the retry, and the run returns
//! at once after its last attempt. But each rule bites only when the
//! workload's draws line up: a deadline, a refusal, a pause that ends on
//! the deadline's millisecond, a backoff that reaches its cap, a sleep
//! drawn past the deadline. This probe lines them up once per run, on a
//! name of its own that it holds itself for the whole probe, so that every
//! attempt is refused:
//!
//! 1. **On the deadline.** A 60 ms deadline; after the first refusal the
//!    reader freezes until exactly the deadline's millisecond. The attempt
//!    a `>` where `>=` belongs would start there must not be made.
//! 2. **A sleep past the deadline.** A 30 ms deadline with backoffs drawn
//!    up to a second: the policy must give up rather than sleep past the
//!    deadline, so the run returns right after its first attempt (almost
//!    always; a short draw sleeps and attempts again, inside the deadline).
//! 3. **The cap.** Eight attempts, a 2 ms base and a 3 ms maximum: every
//!    sleep is at most 3 ms however far the doubling has gone.
//! 4. **An error.** The first attempt's request is held at the server past
//!    the response timeout: the attempt fails, and the run must return that
//!    error, not try again.
//!
//! Everything is recorded as the workload records its retries
//! ([`LockOp::Retry`] around [`LockOp::Acquire`]s); the checker is the judge. A
//! fault that ends the probe's own hold early (a restart) lets an attempt
//! win: that lease is released, and the rules still apply to what was
//! recorded.

use core::num::NonZeroU32;
use core::time::Duration;
use std::cell::Cell;
use std::rc::Rc;

use redis_primitives::{Lock, Retry, Ttl};

use super::release_race::{acquire, release};
use crate::families::lock::api::{LOCK_ACQUIRE, RETRY_RUN};
use crate::families::lock::op::LockOp;
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The probe's own lock name.
const NAME: &str = "retry-probe";
/// The probe's own hold on [`NAME`]: past its four cases.
const HOLD_TTL_MS: u64 = 2_000;

/// One staged `Retry::run`.
#[derive(Debug, Clone, Copy)]
struct Case {
    attempts: u32,
    base_ms: u64,
    max_ms: u64,
    deadline_ms: Option<u64>,
    /// Freeze after the first refusal until exactly the deadline.
    to_deadline: bool,
    /// Hold the first attempt's request at the server this long.
    hold_first_ms: Option<u64>,
}

/// Runs the four cases (see the module docs) through `lock` on node
/// `node`, under the probe's own hold of its own name.
pub(crate) async fn probe(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    let Some(held) = acquire(actor, lock, NAME, HOLD_TTL_MS).await? else { return Ok(()) };
    let timeout = actor.net().response_timeout.as_millis() as u64;
    let cases = [
        Case { attempts: 4, base_ms: 5, max_ms: 5, deadline_ms: Some(60), to_deadline: true, hold_first_ms: None },
        Case {
            attempts: 3,
            base_ms: 1000,
            max_ms: 1000,
            deadline_ms: Some(30),
            to_deadline: false,
            hold_first_ms: None,
        },
        Case { attempts: 8, base_ms: 2, max_ms: 3, deadline_ms: None, to_deadline: false, hold_first_ms: None },
        Case {
            attempts: 3,
            base_ms: 5,
            max_ms: 5,
            deadline_ms: None,
            to_deadline: false,
            hold_first_ms: Some(timeout + 10),
        },
    ];
    for (n, case) in cases.into_iter().enumerate() {
        run(actor, lock, node, n, case).await?;
    }
    // The held request of the last case runs 10 ms after its timeout: the
    // hold is handed back after it, so that request is refused too.
    tokio::time::sleep(Duration::from_millis(20)).await;
    release(actor, lock, &held).await;
    Ok(())
}

/// One `Retry::run` of `case` around recorded acquires of [`NAME`].
async fn run(actor: &Actor, lock: &Lock<SimConnection>, node: usize, n: usize, case: Case) -> ActorResult {
    let Some(attempts) = NonZeroU32::new(case.attempts) else { return Ok(()) };
    let (base, max) = (Duration::from_millis(case.base_ms), Duration::from_millis(case.max_ms));
    let mut retry = Retry::new(attempts, base, max)?.seeded(actor.seed_for(&format!("retry-probe-{n}")));
    if let Some(d) = case.deadline_ms {
        retry = retry.deadline(Duration::from_millis(d));
    }
    let backoff_ms = Some((case.base_ms, case.max_ms));
    let rop = |token| LockOp::Retry {
        name: NAME.into(),
        attempts: case.attempts,
        deadline_ms: case.deadline_ms,
        token,
        backoff_ms,
    };
    let rid = actor.call(RETRY_RUN, rop(None));
    let started = actor.now();
    if let Some(ms) = case.hold_first_ms {
        actor.delay_next_request_mentioning(node, ms, &lock.key(NAME)?);
    }
    let tries = Rc::new(Cell::new(0u32));
    let r = retry
        .run(|| {
            let tries = Rc::clone(&tries);
            async move {
                tries.set(tries.get() + 1);
                let op = |token, deadline| LockOp::Acquire { name: NAME.into(), ttl_ms: HOLD_TTL_MS, token, deadline };
                let id = actor.call(LOCK_ACQUIRE, op(None, None));
                let r = lock.acquire(NAME, Ttl::from_millis(HOLD_TTL_MS)?).await;
                match &r {
                    Ok(Some(l)) => actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline())))),
                    Ok(None) => {
                        actor.fail(id, op(None, None));
                        // Past the first backoff's cap, so the freeze
                        // covers the sleep and ends on the deadline.
                        let left = case.deadline_ms.map(|d| (started + d).saturating_sub(actor.now()));
                        if let (true, Some(ms), 1) = (case.to_deadline, left, tries.get()) {
                            if ms > case.max_ms {
                                actor.stall(ms, "in Retry::run's backoff, until its deadline");
                            }
                        }
                    }
                    Err(e) => actor.errored(id, op(None, None), e),
                }
                r
            }
        })
        .await;
    match r {
        Ok(Some(lease)) => {
            actor.ok(rid, rop(Some(lease.token().get())));
            release(actor, lock, &lease).await;
        }
        Ok(None) => actor.fail(rid, rop(None)),
        Err(e) => actor.errored(rid, rop(None), &e),
    }
    Ok(())
}
