//! One Redlock client actor from start to end: its connection settings,
//! `connect` with the settings read back, the probes client-0 runs beside
//! its workload, and the loop of attempts.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use core::time::Duration;
use rand::Rng;
use redis_primitives::redlock::{Redlock, RedlockConfig};
use redis_primitives::{Error, OwnerSource, Retry, Ttl};
use redis_primitives_naive::NaiveRedlock;
use tokio::task::JoinHandle;

use super::attempts::{correct_attempt, naive_attempt};
use super::op::RedlockOp;
use super::plan::RedlockStart;
use super::timing::{net_for, Timing};
use super::{refusal, trust, RedlockVariant, MASTERS, NAME};
use crate::families::redlock::api::{NAIVE_REDLOCK_CONNECT, REDLOCK_CONNECT};
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The Redlock a client contends with: the production one or the naive one.
enum Client {
    Correct(Redlock<SimConnection>),
    Naive(NaiveRedlock<SimConnection>),
}

/// One client: connects, starts the probes beside its workload (client-0 of
/// `redlock`), waits for its start, then attempts until the run's end.
pub(super) async fn client(
    actor: Actor,
    variant: RedlockVariant,
    start: RedlockStart,
    first_grant: Arc<AtomicBool>,
    timing: Timing,
) -> ActorResult {
    let masters: Vec<SimConnection> = match variant {
        RedlockVariant::Correct => {
            (0..MASTERS).map(|i| actor.connection_with(i, net_for(timing.master_timeout_ms))).collect()
        }
        _ => (0..MASTERS).map(|i| actor.connection(i)).collect(),
    };
    let config = RedlockConfig::new(Ttl::from_millis(timing.ttl_ms)?)
        .master_timeout(Duration::from_millis(timing.master_timeout_ms))
        .owners(OwnerSource::seeded(actor.seed()));
    // The read-back and refused-extend probes run beside client-0's
    // workload, on connections of its own (the same links, so the same
    // faults): their waits on slow links must not take phase 1's time from
    // client-0's rounds.
    let probe = (variant == RedlockVariant::Correct && actor.index() == 0).then(|| spawn_probes(&actor, timing));
    let client = connect(&actor, variant, masters, config, timing).await?;
    let mut rng = actor.rng_for("redlock-work");
    wait_for_start(&actor, start, &first_grant).await;
    // Extends, retries, pauses and late releases: the production Redlock in
    // `redlock` only (the broken and non-guarantee variants keep the plain
    // acquire–work–release that their pinned seeds were found with).
    let full = variant == RedlockVariant::Correct;
    let attempts = NonZeroU32::new(6).unwrap_or(NonZeroU32::MIN);
    let retry = Retry::new(attempts, Duration::from_millis(10), Duration::from_millis(40))?;
    let retry = retry.deadline(Duration::from_millis(400)).seeded(actor.seed_for("redlock-retry"));
    while actor.now() < timing.length_ms {
        match &client {
            Client::Correct(r) => correct_attempt(&actor, r, full, &retry, &mut rng, &first_grant, timing).await,
            Client::Naive(r) => naive_attempt(&actor, r, &mut rng, &first_grant).await,
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..=30))).await;
    }
    // Long finished by now; its error (a constructor refusing what it must
    // take) fails the run like the workload's own.
    if let Some(probe) = probe {
        probe.await.map_err(|e| format!("the probes panicked: {e}"))??;
    }
    Ok(())
}

/// Client-0's probes, on connections of its own: the refused-extend probe,
/// the read-back probe and the timed-out majority one after the other,
/// and the trust-edge probe beside them.
fn spawn_probes(actor: &Actor, timing: Timing) -> JoinHandle<Result<(), Error>> {
    let own: Vec<SimConnection> =
        (0..MASTERS).map(|i| actor.connection_with(i, net_for(timing.master_timeout_ms))).collect();
    let a = actor.clone();
    // The trust-edge probe runs beside the others, on the same
    // connections: it tries until it gets a clean edge, which must not
    // take their time.
    let links = own.clone();
    let trust = actor.spawn(async move { trust::probe(&a, &links, timing.master_timeout_ms, timing.length_ms).await });
    let a = actor.clone();
    actor.spawn(async move {
        // One Redlock for the refusal probes; the timed-out one connects
        // anew only when a fault failed the first handshake.
        let timeout = timing.master_timeout_ms;
        let r = refusal::connect(&a, &own, timeout).await?;
        if let Some(r) = &r {
            refusal::refused_extend(&a, r, &own, timing.length_ms).await?;
        }
        super::readback::probe(&a, &own).await?;
        let r = match r {
            Some(r) => Some(r),
            None => refusal::connect(&a, &own, timeout).await?,
        };
        if let Some(r) = r {
            refusal::timed_out_majority(&a, &r).await?;
        }
        // Its panic is this task's, which the client reports.
        match trust.await {
            Ok(result) => result,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    })
}

/// `connect` of `variant`'s Redlock, recorded with the masters it could not
/// verify; the production Redlock's settings are read back.
async fn connect(
    actor: &Actor,
    variant: RedlockVariant,
    masters: Vec<SimConnection>,
    config: RedlockConfig,
    timing: Timing,
) -> turmoil::Result<Client> {
    let connect_op = |unverified| RedlockOp::RedlockConnect { masters: MASTERS as u32, unverified };
    let (api, client) = match variant {
        RedlockVariant::NoValidity => (NAIVE_REDLOCK_CONNECT, None),
        _ => (REDLOCK_CONNECT, Some(())),
    };
    let id = actor.call(api, connect_op(None));
    let client = match client {
        None => match NaiveRedlock::connect(masters, config).await {
            Ok(r) => {
                actor.ok(id, connect_op(Some(Vec::new())));
                Client::Naive(r)
            }
            Err(e) => {
                actor.fail(id, connect_op(None));
                return Err(e.into());
            }
        },
        Some(()) => match Redlock::connect(masters, config).await {
            Ok(r) => {
                let unverified = r.unverified_masters().into_iter().map(|m| m as u32).collect();
                actor.ok(id, connect_op(Some(unverified)));
                report_config(actor, &r, timing)?;
                Client::Correct(r)
            }
            Err(e) => {
                actor.fail(id, connect_op(None));
                return Err(e.into());
            }
        },
    };
    Ok(client)
}

/// Records what a connected Redlock reports of its configuration (judged by
/// `configuration`).
fn report_config(actor: &Actor, r: &Redlock<SimConnection>, timing: Timing) -> turmoil::Result {
    // drift_allowance: 10 ‰ of the TTL plus 2 ms (Drift::DEFAULT).
    let allowance = Duration::from_millis(timing.ttl_ms) / 100 + Duration::from_millis(2);
    let run_ids_read = r.run_ids().iter().filter(|id| id.is_some()).count();
    actor.configured(
        "Redlock",
        &[
            ("len", r.len().to_string(), MASTERS.to_string()),
            ("is_empty", r.is_empty().to_string(), "false".to_string()),
            ("quorum", r.quorum().to_string(), (MASTERS / 2 + 1).to_string()),
            ("ttl", r.ttl().to_string(), Ttl::from_millis(timing.ttl_ms)?.to_string()),
            ("drift", format!("{:?}", r.drift()), format!("{:?}", redis_primitives::Drift::DEFAULT)),
            ("drift factor_per_mille", r.drift().factor_per_mille().to_string(), "10".to_string()),
            ("drift constant", format!("{:?}", r.drift().constant()), format!("{:?}", Duration::from_millis(2))),
            ("drift_allowance", format!("{:?}", r.drift_allowance()), format!("{allowance:?}")),
            (
                "master_timeout",
                format!("{:?}", r.master_timeout()),
                format!("{:?}", Duration::from_millis(timing.master_timeout_ms)),
            ),
            ("key", r.key(NAME)?, format!("redlock:{{{NAME}}}")),
            (
                "run_ids read + unverified",
                (run_ids_read + r.unverified_masters().len()).to_string(),
                MASTERS.to_string(),
            ),
        ],
    );
    Ok(())
}

/// Waits for the client's start: a fixed time, or client-0's first grant.
async fn wait_for_start(actor: &Actor, start: RedlockStart, first_grant: &AtomicBool) {
    match start {
        RedlockStart::At(at) => {
            let now = actor.now();
            if at > now {
                tokio::time::sleep(Duration::from_millis(at - now)).await;
            }
        }
        RedlockStart::AfterFirstGrant { delay, latest } => {
            while !first_grant.load(Ordering::Acquire) && actor.now() < latest {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }
}
