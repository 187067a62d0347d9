//! The Redlock read-back probe: a Redlock with a drift and an owner source
//! of its own, whose settings, commands per master and lease it reads back
//! against what it was given (each an [`Op::Configured`](crate::history::Op::Configured),
//! judged by `configuration`), and whose lease it reads at `valid_until`.
//!
//! It needs the masters (each one's `run_id` and `COMMAND INFO`) and
//! simulated time (the lease's trust ends on a tick), so it stays in the
//! simulation. The configuration edges it once tried beside this, refused
//! before anything is sent or by the masters' `run_id`s, are the library's
//! own tests now (`tests/library/redlock/configuration.rs`,
//! `tests/library/documented_edges.rs`).

use core::time::Duration;

use rand::Rng;
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig, RefusalReason, OWNER_BYTES};
use redis_primitives::{CompareCommands, Drift, Error, Lock, OwnerSource, Ttl};

use crate::checker::key_lifetimes::{Life, Rule};
use crate::net::SimConnection;
use crate::world::Actor;

/// A drift allowance as `(‰, constant ms)`.
type Drift2 = (u32, u64);

fn drift((per_mille, constant_ms): Drift2) -> Result<Drift, Error> {
    Drift::new(per_mille, Duration::from_millis(constant_ms))
}

/// The read-back's longest TTL: its leases, on names of their own
/// (`validation`, `validation-expired`), live up to this long, longer than
/// the workload's, and a run may end while one is held.
const MAX_TTL_MS: u64 = 1000;

/// The keys the read-back leaves, by their longest life; listed before the
/// workload's rule, which would judge them by the workload's TTL.
pub(super) const KEY_RULE: Rule = Rule {
    prefix: "redlock:{validation",
    suffix: "}",
    life: Life::AtMost(MAX_TTL_MS),
    what: "read-back's Redlock key",
};

/// Connects a Redlock on `masters` with a TTL, drift and owner source drawn
/// from the seed and a master timeout one millisecond below the TTL (the
/// largest one accepted), and reads it back. A fault in the handshake is
/// not an answer about the configuration: then nothing is read. Any other
/// refusal fails the run (the library's tests pin the edges).
pub(super) async fn probe(actor: &Actor, masters: &[SimConnection]) -> Result<(), Error> {
    // The stream and the names keep the validation probe's labels, which
    // this probe was part of: the same draws and keys as before.
    let mut rng = actor.rng_for("validation-redlock");
    // A whole-millisecond allowance (ttl × ‰ a multiple of 1000), so that
    // `valid_until` falls on a tick and the lease can be read there.
    let ttl_ms = 200 * rng.random_range(1..=MAX_TTL_MS / 200);
    let d = (5 * rng.random_range(0..=10u32), rng.random_range(0..=5u64));
    let owners: u64 = rng.random();
    let master_timeout_ms = ttl_ms - 1;
    let config = RedlockConfig::new(Ttl::from_millis(ttl_ms)?)
        .drift(drift(d)?)
        .master_timeout(Duration::from_millis(master_timeout_ms))
        .handshake_timeout(Duration::from_millis(100))
        .owners(OwnerSource::seeded(owners));
    match Redlock::connect(masters.to_vec(), config).await {
        Ok(rl) => redlock_read_back(actor, &rl, masters, (ttl_ms, d, master_timeout_ms), owners).await,
        Err(e) if e.outcome_is_unknown() => Ok(()),
        Err(e) => Err(e),
    }
}

/// What a connected Redlock reports against what it was given (`ttl_ms`,
/// drift and master timeout; a drift drawn from the seed, rarely the
/// default the scenario's own Redlock uses), the
/// commands it sends each master against that master's own answer to
/// `COMMAND INFO` (as a single-instance lock asks it), and a granted
/// lease's owner against the first one the seeded source `owners` draws.
async fn redlock_read_back(
    actor: &Actor,
    rl: &Redlock<SimConnection>,
    given: &[SimConnection],
    (ttl_ms, d, master_timeout_ms): (u64, Drift2, u64),
    owners: u64,
) -> Result<(), Error> {
    let dr = drift(d)?;
    actor.configured(
        "Redlock (validation)",
        &[
            ("len", rl.len().to_string(), given.len().to_string()),
            ("is_empty", rl.is_empty().to_string(), given.is_empty().to_string()),
            ("quorum", rl.quorum().to_string(), (given.len() / 2 + 1).to_string()),
            ("ttl", rl.ttl().to_string(), Ttl::from_millis(ttl_ms)?.to_string()),
            ("drift", format!("{:?}", rl.drift()), format!("{dr:?}")),
            (
                "drift_allowance",
                format!("{:?}", rl.drift_allowance()),
                format!("{:?}", dr.allowance(Duration::from_millis(ttl_ms))),
            ),
            (
                "master_timeout",
                format!("{:?}", rl.master_timeout()),
                format!("{:?}", Duration::from_millis(master_timeout_ms)),
            ),
        ],
    );
    let got = rl.compare_commands().await;
    actor.configured("Redlock::compare_commands", &[("answers", got.len().to_string(), given.len().to_string())]);
    let unverified = rl.unverified_masters();
    for (i, (conn, got)) in given.iter().zip(&got).enumerate() {
        // A master left unverified keeps the scripts. Otherwise the
        // master's own answer, when it names a native command: a question
        // that failed (a fault on the link) answers Scripts too.
        let want = if unverified.contains(&i) {
            CompareCommands::Scripts
        } else {
            match Lock::new(conn.clone()).compare_commands().await {
                CompareCommands::Scripts => continue,
                native => native,
            }
        };
        actor.configured(
            &format!("Redlock::compare_commands, master {i}"),
            &[("commands", format!("{got:?}"), format!("{want:?}"))],
        );
    }
    // Under a fault the probe's acquire may be refused: nothing to read.
    if let Ok(Acquisition::Held(lease)) = rl.acquire("validation").await {
        let want = OwnerSource::seeded(owners).next_owner(OWNER_BYTES);
        let remaining = lease.remaining();
        let expected = lease.validity().saturating_sub(lease.acquired_at().elapsed());
        // Two readings of the clock, the library's then the probe's: one
        // instant in the simulation, a few microseconds apart live.
        let apart = remaining.saturating_sub(expected).max(expected.saturating_sub(remaining));
        actor.configured_reading(
            "RedlockLease (validation)",
            &[
                ("owner", lease.owner().as_str().to_string(), want.as_str().to_string()),
                ("name", lease.name().to_string(), "validation".to_string()),
                ("key", lease.key().to_string(), rl.key("validation")?),
                ("is_trusted", lease.is_trusted().to_string(), true.to_string()),
                // The validity less what has passed since T2.
                ("remaining", format!("{remaining:?}"), format!("{expected:?}")),
            ],
            &["remaining"],
            apart,
        );
        rl.release(&lease).await;
        // From `valid_until` on (at it exactly, unless the actor was paused
        // past it) the lease is no longer trusted. Checked beside the
        // workload, which must not wait for it; a run that ends first drops
        // the check.
        let (a, until) = (actor.clone(), lease.valid_until());
        drop(actor.spawn(async move {
            tokio::time::sleep_until(until).await;
            let at = if until.elapsed().is_zero() { "at valid_until" } else { "after valid_until" };
            a.configured(
                &format!("RedlockLease {at}"),
                &[
                    ("is_trusted", lease.is_trusted().to_string(), false.to_string()),
                    ("remaining", format!("{:?}", lease.remaining()), format!("{:?}", Duration::ZERO)),
                ],
            );
        }));
    }
    // An extend that starts once the validity has passed is refused as
    // `Expired` without asking the masters, whatever they would say: the
    // keys usually outlive the validity by the drift allowance and the
    // round's time, so re-arming them then would revive a lease its
    // holder already had to stop trusting. (Usually only the first case's
    // lease gets this far: the next cases find the name still held.)
    if let Ok(Acquisition::Held(mut lease)) = rl.acquire("validation-expired").await {
        let (a, rl) = (actor.clone(), rl.clone());
        drop(actor.spawn(async move {
            tokio::time::sleep_until(lease.valid_until()).await;
            let outcome = extension_text(&rl.extend(&mut lease).await);
            a.configured("Redlock::extend from valid_until on", &[("outcome", outcome, expired_text())]);
            rl.release(&lease).await;
        }));
    }
    Ok(())
}

/// An extension's outcome as a read-back records it: `Refused(reason)` or
/// `Extended { validity }`.
pub(crate) fn extension_text(extension: &Extension) -> String {
    match extension {
        Extension::Refused(refusal) => format!("Refused({:?})", refusal.reason),
        Extension::Extended { validity } => format!("Extended {{ validity: {validity:?} }}"),
    }
}

/// What [`extension_text`] gives for an extend refused as expired.
pub(crate) fn expired_text() -> String {
    format!("Refused({:?})", RefusalReason::Expired)
}
