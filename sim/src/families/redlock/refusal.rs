//! The refused-extend probe: a Redlock lease whose extend is refused must
//! stop being trusted at once.
//!
//! A refused extend releases the lease's keys on every master, so from
//! that moment another client may take the lock. A lease that keeps its old
//! `valid_until` lets its holder act beside the next one for the rest of
//! its validity. The workload meets a refused extend only when a fault or a
//! slow round happens to land on one (about one run in five); this probe
//! makes one in every run it can: beside client 0's workload, on
//! connections of its own (the same links, so the same faults), it
//! acquires a name of its own (trying again until the workload's end), overwrites the key on a majority of the
//! masters with another owner (`SET … XX`), extends, and when the
//! extend is refused reads the lease back (an
//! [`Op::Configured`](crate::history::Op::Configured), judged by
//! `configuration`). The extend cannot be granted (at most a minority of
//! the keys is still ours), and any refusal counts, whatever else caused
//! it: the lease's trust must end no later than the extend began. An
//! acquire that faults keep refusing ends the probe without a verdict.
//!
//! Then it acquires another name of its own with its requests to a
//! majority of the masters held at the servers past the master timeout:
//! those votes time out, and a vote that timed out is no yes, so the
//! acquire must be refused (the workload meets timed-out votes only where a
//! fault slows a link, beside answers that would refuse it anyway).

use core::time::Duration;
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig};
use redis_primitives::{Error, OwnerSource, Ttl};
use tokio::time::Instant;

use crate::checker::key_lifetimes::{Life, Rule};
use crate::net::SimConnection;
use crate::world::Actor;

/// The probe's own Redlock name and key prefix: apart from the
/// workload's (whose keys the Redlock key rule holds to the workload's
/// TTL).
const NAME: &str = "refused-extend-probe";
/// The name of the acquire whose majority of votes time out.
const TIMED_OUT_NAME: &str = "timed-out-probe";
/// The key prefix of every Redlock probe of client 0 (this one and
/// `trust.rs`), whose keys [`KEY_RULE`] bounds.
pub(crate) const PREFIX: &str = "redlock-probe";
/// The probe's lease: long enough that the overwrites, one master after
/// another on links a fault may slow, land while it lives.
const TTL_MS: u64 = 2_000;

/// The probe's keys, for the scenario's key-lifetime rules: its lease's
/// and the overwrites live at most its lease's 2 s.
pub(crate) const KEY_RULE: Rule =
    Rule { prefix: "redlock-probe:{", suffix: "}", life: Life::AtMost(TTL_MS), what: "refused-extend probe's key" };
/// The pause between two acquires, ms.
const RETRY_MS: u64 = 50;

/// The probes' one Redlock on `masters`, with the workload's master
/// timeout; `None` when a fault fails its handshake.
pub(crate) async fn connect(
    actor: &Actor,
    masters: &[SimConnection],
    master_timeout_ms: u64,
) -> Result<Option<Redlock<SimConnection>>, Error> {
    let config = RedlockConfig::new(Ttl::from_millis(TTL_MS)?)
        .prefix(PREFIX)
        .master_timeout(Duration::from_millis(master_timeout_ms))
        .owners(OwnerSource::seeded(actor.seed_for(NAME)));
    Ok(Redlock::connect(masters.to_vec(), config).await.ok())
}

/// An acquire whose requests to a majority of the masters are held at the
/// servers past the master timeout: those votes time out, and a timed-out
/// vote is not a yes (the key may or may not have been set), so the acquire
/// must be refused whatever the other masters answer. Any refusal or error
/// passes; only a granted lease is recorded against it. Run after every
/// other probe of the client, so that its holds move nobody else's
/// timeline, with the probes' Redlock `r`.
pub(crate) async fn timed_out_majority(actor: &Actor, r: &Redlock<SimConnection>) -> Result<(), Error> {
    let key = r.key(TIMED_OUT_NAME)?;
    // Twice the timeout and a round trip: the vote has timed out well
    // before the held request runs. (The timeout was set from whole
    // milliseconds, so `as_millis` gives it back exactly.)
    let hold_ms = 2 * r.master_timeout().as_millis() as u64 + 20;
    for node in 0..r.quorum() {
        actor.delay_next_request_mentioning(node, hold_ms, &key);
    }
    let got = match r.acquire(TIMED_OUT_NAME).await {
        Ok(Acquisition::Held(_)) => "held",
        Ok(Acquisition::Refused(_)) => "refused",
        Err(_) => return Ok(()),
    };
    actor.configured(
        "Redlock acquire with a majority of its masters' requests held past the master timeout",
        &[("the acquire", got.into(), "refused".into())],
    );
    Ok(())
}

/// The refused extend (see the module docs), with `r`, the probes'
/// Redlock on `masters`, trying to acquire until simulated time `until`.
pub(crate) async fn refused_extend(
    actor: &Actor,
    r: &Redlock<SimConnection>,
    masters: &[SimConnection],
    until: u64,
) -> Result<(), Error> {
    // A fault on a link or a master may refuse an acquire (client 0's
    // links are often slowed or cut): tries until `until`.
    let mut held = None;
    while held.is_none() && actor.now() < until {
        match r.acquire(NAME).await {
            Ok(Acquisition::Held(lease)) => held = Some(lease),
            _ => tokio::time::sleep(Duration::from_millis(RETRY_MS)).await,
        }
    }
    let Some(mut lease) = held else { return Ok(()) };
    let key = r.key(NAME)?;
    let mut taken = 0;
    for conn in masters {
        if taken == r.quorum() {
            break;
        }
        let mut c = conn.clone();
        let set =
            redis::cmd("SET").arg(&key).arg("someone-else").arg("XX").arg("PX").arg(TTL_MS).query_async(&mut c).await;
        // Only a confirmed overwrite counts; one whose answer a fault lost
        // may have overwritten our key too, which refuses the extend all
        // the same.
        if matches!(set, Ok(Some::<String>(ref ok)) if ok == "OK") {
            taken += 1;
        }
    }
    if taken < r.quorum() {
        return Ok(());
    }
    let began = Instant::now();
    let Extension::Refused(_) = r.extend(&mut lease).await else { return Ok(()) };
    let until = if lease.valid_until() <= began { "no later than the extend began" } else { "after the extend began" };
    // The library ends the lease at its own reading of the clock, made
    // after `began` (at the same instant, in the simulation).
    actor.configured_reading(
        "Redlock extend refused (its key overwritten on a majority of masters)",
        &[
            ("RedlockLease::valid_until afterwards", until.into(), "no later than the extend began".into()),
            ("RedlockLease::is_trusted() afterwards", lease.is_trusted().to_string(), "false".into()),
        ],
        &["RedlockLease::valid_until afterwards"],
        lease.valid_until().saturating_duration_since(began),
    );
    Ok(())
}
