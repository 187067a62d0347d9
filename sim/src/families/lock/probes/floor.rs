//! The floor probe: a time-floored token is stored in the fence counter
//! exactly as it was issued.
//!
//! `Tokens::TimeFloored` issues max(counter + 1, the server's `TIME` in
//! microseconds) and stores what it issued as the counter, so that the next
//! token is past it even if the clock is not. A floor stored wrong reads
//! back wrong from `Lock::current_token`, which `lock-replies` judges
//! against the grants before the read. Two things hide it from the
//! workload's own reads: a later acquire overwrites the stored value, and a
//! floor stored without the microseconds' zero padding differs from the
//! token only when they are below 100 000, in the first tenth of a second.
//! So this probe acquires a name of its own a few milliseconds into a
//! second of simulated time, which the server's clock reads too (the run
//! starts on a whole second; a step of the server's clock, where a
//! schedule has one, moves it off and the probe shows less), reads the
//! name's counter back at once, and releases, each call recorded. It runs
//! as a process of its own beside the reader, so the reader's moments stay
//! where they were.

use redis_primitives::{Error, Lock};

use super::release_race::{acquire, release};
use crate::net::SimConnection;
use crate::world::Actor;

/// The probe's lock name: apart from the workload's.
const NAME: &str = "floor-probe";
/// Milliseconds into a second at which the acquire is sent: its microseconds
/// are then well below 100 000 when it runs.
const INTO_SECOND_MS: u64 = 5;
/// The probe's lease: it is released at once.
const TTL_MS: u64 = 1_000;

/// Runs the probe on `lock` (a `Tokens::TimeFloored` lock; see the module
/// docs).
pub(crate) async fn probe(actor: &Actor, lock: &Lock<SimConnection>) -> Result<(), Error> {
    let now = actor.now();
    let at = (now / 1000 + 1) * 1000 + INTO_SECOND_MS;
    tokio::time::sleep(core::time::Duration::from_millis(at - now)).await;
    // Held by nobody else, so only a fault refuses it: no verdict.
    let Some(lease) = acquire(actor, lock, NAME, TTL_MS).await? else { return Ok(()) };
    crate::families::lock::record::read_current_token(actor, lock, NAME).await;
    release(actor, lock, &lease).await;
    Ok(())
}
