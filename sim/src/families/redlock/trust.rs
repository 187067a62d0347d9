//! The trust-edge probe: a Redlock lease is trusted up to its
//! `valid_until` and not at it, and an extend that starts there is refused
//! as expired.
//!
//! `valid_until` is the first instant at which another client may hold the
//! lock, so a `<=` for `<` in `RedlockLease::is_trusted`, or a `>` for `>=`
//! in `Redlock::extend`'s expiry test, lets a holder act beside the next one
//! for a millisecond. The workload and the read-back probe read a lease at
//! its edge only when nothing delays them there, and client 0, which runs
//! them, has the most faulted links and pauses of the scenario: a `<=` in
//! `is_trusted` showed on 74 of 100 seeds. So this probe tries until it
//! gets a clean read: beside client 0's workload, on connections of its own
//! (the same links, so the same faults), it takes a short lease of its own,
//! reads its trust a millisecond before `valid_until` and exactly at it,
//! then extends it at that same instant. Every instant here is a whole
//! number of simulated milliseconds (the round's ends, and a drift
//! allowance of 1 % of a TTL of whole hundreds of milliseconds plus 2 ms),
//! so a timer wakes exactly at the edge unless something held the probe
//! up; then it releases the lease and takes another. Only an exact read is
//! recorded, as an [`Op::Configured`](crate::history::Op::Configured)
//! judged by `configuration`; a run whose faults never leave it a clean
//! edge gets no verdict.

use core::time::Duration;
use redis_primitives::redlock::{Acquisition, Redlock, RedlockConfig};
use redis_primitives::{Error, OwnerSource, Ttl};
use tokio::time::Instant;

use super::readback::{expired_text, extension_text};
use crate::net::SimConnection;
use crate::world::Actor;

/// The probe's own Redlock name, under the probes' prefix (whose keys
/// `refusal::KEY_RULE` bounds).
const NAME: &str = "trust-edge-probe";
/// The pause after a refused or failed acquire, ms.
const RETRY_MS: u64 = 50;
const ONE_MS: Duration = Duration::from_millis(1);

/// The probe (see the module docs) on `masters`, with the workload's master
/// timeout, trying until simulated time `until`.
pub(crate) async fn probe(
    actor: &Actor,
    masters: &[SimConnection],
    master_timeout_ms: u64,
    until: u64,
) -> Result<(), Error> {
    // The lease's TTL: the whole hundred of milliseconds after the master
    // timeout (which a TTL must exceed), so that several tries fit in a run
    // and the drift allowance is whole milliseconds.
    let ttl_ms = 100 * (master_timeout_ms / 100 + 1);
    let config = RedlockConfig::new(Ttl::from_millis(ttl_ms)?)
        .prefix(super::refusal::PREFIX)
        .master_timeout(Duration::from_millis(master_timeout_ms))
        .owners(OwnerSource::seeded(actor.seed_for(NAME)));
    let Ok(r) = Redlock::connect(masters.to_vec(), config).await else { return Ok(()) };
    while actor.now() < until {
        let Ok(Acquisition::Held(mut lease)) = r.acquire(NAME).await else {
            tokio::time::sleep(Duration::from_millis(RETRY_MS)).await;
            continue;
        };
        let edge = lease.valid_until();
        if edge > Instant::now() + ONE_MS {
            tokio::time::sleep_until(edge - ONE_MS).await;
            let before = (Instant::now() == edge - ONE_MS).then(|| lease.is_trusted());
            tokio::time::sleep_until(edge).await;
            if let (Some(before), true) = (before, Instant::now() == edge) {
                let (at, remaining) = (lease.is_trusted(), lease.remaining());
                let extension = extension_text(&r.extend(&mut lease).await);
                actor.configured(
                    "RedlockLease read and extended at its valid_until",
                    &[
                        ("is_trusted() a millisecond before valid_until", before.to_string(), "true".into()),
                        ("is_trusted() at valid_until", at.to_string(), "false".into()),
                        ("remaining() at valid_until", format!("{remaining:?}"), format!("{:?}", Duration::ZERO)),
                        ("Redlock::extend at valid_until", extension, expired_text()),
                    ],
                );
                r.release(&lease).await;
                return Ok(());
            }
        }
        // A slow round left no millisecond before the edge, or a fault
        // held the probe past it: hand the lease back and try again.
        r.release(&lease).await;
    }
    Ok(())
}
