//! The acknowledgement probe: a `WAIT` that gives up in time.
//!
//! [`redis_primitives::Acknowledgement`] promises a bounded wait: the
//! `WAIT` after an acknowledged acquire or write returns once the replicas
//! confirmed or its timeout passed, and a call its replicas did not confirm
//! is refused `NotAcknowledged` then. `WAIT n 0` blocks for ever, so a
//! timeout sent in the wrong unit (50 ms as whole seconds is 0) or not at
//! all turns that refusal into a connection that hangs until its response
//! timeout, with every request on it queued behind the `WAIT`. Random
//! timing cannot tell the two apart: a call made during a replication cut
//! ends in an error either way, and a timeout is an unknown outcome every
//! checker accepts.
//!
//! So once per run, when the schedule cuts the node's replication for long
//! enough and nothing else reaches the prober meanwhile, the prober (a
//! process of its own, on a connection and a name of its own) makes one
//! acknowledged call a few milliseconds into the cut and records how it
//! ended and how long it took, as an
//! [`Op::Configured`](crate::history::Op::Configured) read-back judged by
//! `configuration`: refused `NotAcknowledged` within the acknowledgement's
//! timeout plus a few round trips.

use std::future::Future;

use tokio::time::sleep;

use crate::history::Millis;
use crate::nemesis::{FaultKind, Schedule, Target};
use crate::world::Actor;

/// How far into the cut the call is sent, ms.
const INTO_CUT_MS: Millis = 10;
/// The round trips an acknowledged call makes besides the `WAIT`'s own
/// timeout, at the simulation's longest link latency (10 ms each way): the
/// call itself, the `PTTL` + `WAIT` pipeline, and a refused acquire's
/// release. A call that takes longer waited past its timeout.
const ROUND_TRIPS_MS: Millis = 3 * 20 + 20;
/// Slack between a call that ends at its bound and the end of the cut, ms:
/// the replicas must not have caught up by the time the call's last reply
/// is read, or "confirmed" would be a right answer too.
const AFTER_BOUND_MS: Millis = 20;

/// The longest a correct call takes, for an acknowledgement timeout of
/// `ack_ms`.
fn bound(ack_ms: Millis) -> Millis {
    ack_ms + ROUND_TRIPS_MS
}

/// What the probe expects, for an acknowledgement timeout of `ack_ms`.
fn expected(ack_ms: Millis) -> String {
    format!("refused NotAcknowledged within {} ms", bound(ack_ms))
}

/// When the probe sends its call: a few milliseconds into the first replication
/// cut of `node` that lasts the whole call and that no other fault reaching
/// process `client` (its own, or any node's) overlaps. `None`: no such cut.
pub(crate) fn send_at(schedule: &Schedule, node: u32, client: Option<u32>, ack_ms: Millis) -> Option<Millis> {
    let need = INTO_CUT_MS + bound(ack_ms) + AFTER_BOUND_MS;
    schedule.unreplicated_spans(node).into_iter().find_map(|(start, end)| {
        let (from, to) = (start, start + need);
        let disturbed = schedule.faults.iter().any(|f| {
            let reaches = match f.target {
                Target::Client(c) | Target::Link { client: c, .. } => Some(c) == client,
                Target::Node(n) => !(n == node && f.kind == FaultKind::CutReplication),
            };
            reaches && f.at <= to && f.felt_until() + 10 >= from
        });
        (end >= to && !disturbed).then_some(start + INTO_CUT_MS)
    })
}

/// Sends `call` at `at` (see [`send_at`]) and records how it ended.
/// `call` is one acknowledged library call whose answer the caller has
/// turned into `Ok(true)` (confirmed), `Ok(false)` (refused for another
/// reason) or the library's error. Returns whether the call was refused
/// `NotAcknowledged` (in time or not), for a caller that checks what such
/// a refusal leaves behind.
pub(crate) async fn probe<F, Fut>(
    actor: &Actor,
    at: Millis,
    ack_ms: Millis,
    what: &str,
    call: F,
) -> turmoil::Result<bool>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = redis_primitives::Result<bool>>,
{
    let now = actor.now();
    if at > now {
        sleep(core::time::Duration::from_millis(at - now)).await;
    }
    let sent = actor.now();
    let r = call().await;
    let took = actor.now() - sent;
    let refused = matches!(r, Err(redis_primitives::Error::NotAcknowledged { .. }));
    // A refusal past the bound missed it by a measure of time (live, the
    // run's jitter weighs it); any other answer is wrong in every tier.
    let over = (refused && took > bound(ack_ms)).then(|| took - bound(ack_ms));
    let got = match r {
        Err(redis_primitives::Error::NotAcknowledged { .. }) if took <= bound(ack_ms) => expected(ack_ms),
        Err(redis_primitives::Error::NotAcknowledged { .. }) => format!("refused NotAcknowledged after {took} ms"),
        Err(e) if e.outcome_is_unknown() => format!("outcome unknown after {took} ms ({e})"),
        Err(e) => format!("error after {took} ms: {e}"),
        Ok(true) => format!("confirmed after {took} ms, with replication cut"),
        Ok(false) => format!("refused after {took} ms"),
    };
    let primitive = format!("{what} during a replication cut");
    let fields = [("the call sent into the cut", got, expected(ack_ms))];
    match over {
        Some(ms) => {
            actor.configured_reading(&primitive, &fields, &[fields[0].0], core::time::Duration::from_millis(ms))
        }
        None => actor.configured(&primitive, &fields),
    }
    Ok(refused)
}
