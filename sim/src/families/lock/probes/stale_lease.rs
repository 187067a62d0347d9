//! The stale-lease probe: a lease that expired, and a newer one taken
//! through the same `Lock`, must not be mistaken for each other.
//!
//! `Lock` is `Clone` and meant to be shared by a service's tasks. Its safety
//! rests on every acquire drawing a fresh owner value: a release or extend of
//! a lease must act on that lease only. An owner drawn once per `Lock` (a
//! "client id", as several lock libraries do) passes every workload in which
//! each client acquires, works and releases in turn, because a client's
//! stale lease and its newer one never meet. They meet when one `Lock`
//! serves two tasks: one task's late release deletes the other's lease.
//! So once per run the reader (idle while the clients run the workload)
//! takes a lease on a name of its own,
//! lets it expire, takes a second through a clone of the same `Lock`, and
//! then releases and extends the expired one (a refused extend must leave
//! the lease's deadline where it was); each answer is recorded as an
//! `Op::Configured` read-back (judged by `configuration`). Before the second
//! lease, while the name is free, it also extends the expired lease: an
//! extend must refuse a key that is gone, never take it again (an extend
//! that "re-acquires" would hand a holder that stopped trusting its lease a
//! lock nobody else can take, without a new token). The newer lease is
//! extended once asking another TTL, and must report that TTL afterwards
//! (the workload's extends mostly ask the acquire's own), with the extend's
//! send instant and the deadline they give. Last, a third
//! lease is extended asking a much shorter TTL, with the reply held past
//! the response timeout: the extend runs (the key now lives only that long) and the
//! caller gets an error. An extend of unknown outcome must leave the lease
//! trusting itself no longer than the shorter TTL would allow, or it
//! outlives its key while someone else takes the name (the workload meets
//! an errored extend asking less than the lease has left in about one run
//! of a thousand).
//!
//! First of all, a lease of its own is read a millisecond before its local
//! deadline and exactly at it: trusted, then not; and an acquire sent on a
//! connection the server has closed must fail with an unknown outcome.
//!
//! A fault that makes a step fail or be refused (a partition, a paused
//! server, a stepped clock that has not expired the first lease yet) ends
//! the probe without a verdict: it only judges the answers it got.

use core::time::Duration;
use redis_primitives::{Lease, Lock, Ttl};

use crate::net::SimConnection;
use crate::world::Actor;

/// The probe's own lock name: apart from the workload's.
const NAME: &str = "stale-lease-probe";
/// The name the acquire on a killed connection asks for.
const KILLED_NAME: &str = "stale-lease-probe-killed";
/// The name of the lease whose trust is read at its deadline.
const TRUST_NAME: &str = "stale-lease-probe-trust";
/// The first lease's TTL; the probe waits a little longer for it to expire.
const EXPIRED_TTL_MS: u64 = 20;
/// The second lease's TTL: long enough to outlast the probe's own requests.
const HELD_TTL_MS: u64 = 2_000;
/// What the second lease's extension asks instead.
const RESIZED_TTL_MS: u64 = 1_500;
/// How long after its acquire the second lease is extended: long enough
/// that a lease still timed from the acquire shows.
const RESIZE_AFTER_MS: u64 = 10;
/// What the second lease's extension of unknown outcome asks: far less
/// than the lease has left.
const SHORTENED_TTL_MS: u64 = 300;

/// A lease's trust read a millisecond before its local deadline and
/// exactly at it: `true`, then `false`. The workload's reads land on the
/// deadline only when its draws line up (a `<=` for `<` in
/// `Lease::is_trusted` showed on a third of the seeds), so the probe first
/// takes a lease whose deadline falls on a whole millisecond, where a timer
/// wakes exactly at it: the shortest TTL, in steps of 50 ms, whose drift
/// allowance is whole milliseconds (1000 ms always is, for a drift of whole
/// milliseconds and per-mille). No verdict when no such TTL exists or the
/// acquire is refused or fails.
async fn trust_at_deadline(actor: &Actor, lock: &Lock<SimConnection>) -> Result<(), redis_primitives::Error> {
    let whole = |ttl: u64| lock.drift().allowance(Duration::from_millis(ttl)).subsec_nanos() % 1_000_000 == 0;
    let Some(ttl_ms) = (1..=20).map(|k| 50 * k).find(|&ttl| whole(ttl)) else { return Ok(()) };
    let Ok(Some(lease)) = lock.acquire(TRUST_NAME, Ttl::from_millis(ttl_ms)?).await else { return Ok(()) };
    let deadline = lease.local_deadline();
    if deadline > tokio::time::Instant::now() + Duration::from_millis(1) {
        let aim = deadline - Duration::from_millis(1);
        tokio::time::sleep_until(aim).await;
        let before = lease.is_trusted();
        // How late the read a millisecond before woke (live; 0 simulated).
        let late = tokio::time::Instant::now().saturating_duration_since(aim);
        tokio::time::sleep_until(deadline).await;
        let at = lease.is_trusted();
        actor.configured_reading(
            "Lease read at its local deadline",
            &[
                ("is_trusted() a millisecond before the deadline", before.to_string(), "true".into()),
                ("is_trusted() at the deadline", at.to_string(), "false".into()),
            ],
            &["is_trusted() a millisecond before the deadline"],
            late,
        );
    }
    let _ = lock.release(&lease).await;
    Ok(())
}

/// An acquire sent on a connection the server has closed (`CLIENT KILL`
/// of its real connection, from another one): the caller cannot know
/// whether a request on a dropped connection ran, so the error must say its
/// outcome is unknown (`Error::outcome_is_unknown`). The workload meets a
/// dropped connection only when a fault drops one (a quarter of the
/// seeds); this case meets it on every run. No verdict when the kill or
/// the lookup fails, or the acquire is answered after all.
async fn killed_connection(actor: &Actor, node: usize, ttl: Ttl) {
    let mut victim = actor.connection(node);
    let mut admin = actor.connection(node);
    let Ok(id) = redis::cmd("CLIENT").arg("ID").query_async::<i64>(&mut victim).await else { return };
    let killed = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query_async::<i64>(&mut admin).await;
    if !matches!(killed, Ok(1)) {
        return;
    }
    let got = match Lock::new(victim).acquire(KILLED_NAME, ttl).await {
        Err(e) if e.outcome_is_unknown() => "an error of unknown outcome".to_string(),
        Err(e) => format!("an error of known outcome: {e}"),
        Ok(_) => return,
    };
    actor.configured(
        "Lock::acquire on a connection the server closed",
        &[("the answer", got, "an error of unknown outcome".into())],
    );
}

/// Runs the probe on `lock` (see the module docs).
pub(crate) async fn probe(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    node: usize,
) -> Result<(), redis_primitives::Error> {
    trust_at_deadline(actor, lock).await?;
    let (short, long) = (Ttl::from_millis(EXPIRED_TTL_MS)?, Ttl::from_millis(HELD_TTL_MS)?);
    killed_connection(actor, node, long).await;
    let resized_ttl = Ttl::from_millis(RESIZED_TTL_MS)?;
    let Ok(Some(mut expired)) = lock.acquire(NAME, short).await else { return Ok(()) };
    tokio::time::sleep(Duration::from_millis(EXPIRED_TTL_MS + 5)).await;
    // The server agrees it expired (a stepped clock may not have yet: then
    // no verdict); an extend must not bring the key back.
    if let Ok(None) = lock.remaining_ttl(NAME).await {
        let revived = lock.extend(&mut expired, long).await;
        let after = lock.remaining_ttl(NAME).await;
        if revived.is_ok() && after.is_ok() {
            actor.configured(
                "Lock::extend of a lease whose key expired (nobody holds the name)",
                &[
                    ("extend of the expired lease", format!("{revived:?}"), "Ok(false)".into()),
                    ("the name's remaining TTL afterwards", format!("{after:?}"), "Ok(None)".into()),
                ],
            );
        }
        if !matches!(after, Ok(None)) {
            // Revived (the verdict above) or unknown: the rest would judge
            // the consequence again.
            return Ok(());
        }
    }
    let shared = lock.clone();
    let Ok(Some(mut held)) = shared.acquire(NAME, long).await else { return Ok(()) };
    // The newer lease asks another TTL when extended, a little after the
    // acquire: the lease must then describe the extend, not the acquire —
    // the TTL its key was last set with, counted from the extend's send,
    // and the deadline that gives (the workload's views of a lease after a
    // confirmed extend show it only when its draws pick an extend mode).
    tokio::time::sleep(Duration::from_millis(RESIZE_AFTER_MS)).await;
    let sent = tokio::time::Instant::now();
    let resized = shared.extend(&mut held, resized_ttl).await;
    if let Ok(true) = resized {
        let deadline = sent + (resized_ttl.as_duration() - shared.drift().allowance(resized_ttl.as_duration()));
        let relative = |at: tokio::time::Instant| match at.checked_duration_since(sent) {
            Some(after) => format!("{after:?} after the extend was sent"),
            None => format!("{:?} before the extend was sent", sent - at),
        };
        // The library reads the clock for its send a moment after the probe
        // did (no time passes between them in the simulation).
        let apart = held.sent_at().saturating_duration_since(sent).max(sent.saturating_duration_since(held.sent_at()));
        actor.configured_reading(
            "Lock::extend asking a TTL other than the acquire's",
            &[
                ("Lease::ttl afterwards", format!("{}ms", held.ttl().as_millis()), format!("{RESIZED_TTL_MS}ms")),
                ("Lease::sent_at afterwards", relative(held.sent_at()), relative(sent)),
                ("Lease::local_deadline afterwards", relative(held.local_deadline()), relative(deadline)),
            ],
            &["Lease::sent_at afterwards", "Lease::local_deadline afterwards"],
            apart,
        );
    }
    let stale_release = lock.release(&expired).await;
    let before = expired.local_deadline();
    let stale_extend = lock.extend(&mut expired, long).await;
    // A refused extend must leave the lease as it was, not trusted anew.
    let deadline = if expired.local_deadline() == before { "unchanged" } else { "moved" };
    let release = shared.release(&held).await;
    if [&stale_release, &stale_extend, &release].iter().any(|r| r.is_err()) {
        return Ok(());
    }
    actor.configured(
        "Lock shared by two tasks (a lease that expired, then a newer one through a clone)",
        &[
            ("release of the expired lease", format!("{stale_release:?}"), "Ok(false)".into()),
            ("extend of the expired lease", format!("{stale_extend:?}"), "Ok(false)".into()),
            ("the expired lease's deadline after that extend", deadline.into(), "unchanged".into()),
            ("release of the newer lease afterwards", format!("{release:?}"), "Ok(true)".into()),
        ],
    );
    // Last, on a third lease (the shortened key is left to expire).
    let Ok(Some(mut third)) = shared.acquire(NAME, long).await else { return Ok(()) };
    shorten_unanswered(actor, &shared, &mut third, node).await
}

/// Extends `held` asking [`SHORTENED_TTL_MS`] with the reply held past the
/// response timeout, and reads the lease's local deadline back when the
/// extend errs (see the module docs). An extend that was answered after
/// all (a fault moved the timeout) gives no verdict.
async fn shorten_unanswered(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    held: &mut Lease,
    node: usize,
) -> Result<(), redis_primitives::Error> {
    let hold = actor.net().response_timeout.as_millis() as u64 + 10;
    actor.delay_next_reply_mentioning(node, hold, held.key());
    let sent = actor.now();
    let shortened = lock.extend(held, Ttl::from_millis(SHORTENED_TTL_MS)?).await;
    if shortened.is_err() {
        let after_send = actor.millis_of(held.local_deadline()).saturating_sub(sent);
        let bound = format!("at most {SHORTENED_TTL_MS}ms after the send");
        let reported =
            if after_send <= SHORTENED_TTL_MS { bound.clone() } else { format!("{after_send}ms after the send") };
        actor.configured(
            "Lock::extend asking a shorter TTL whose reply was lost",
            &[("Lease::local_deadline afterwards", reported, bound)],
        );
    }
    Ok(())
}
