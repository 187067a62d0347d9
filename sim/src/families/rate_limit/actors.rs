//! The workload's actors: the clients that fire the plan's bursts at the
//! shared limited name (client 0 also starts the probes), and the
//! `SCRIPT FLUSH` that makes the limiters reload their scripts.

use std::sync::Arc;

use core::time::Duration;
use rand::Rng;
use redis_primitives::rate_limit::Limit;

use super::limiter::{one_request, Limiter, Setup};
use super::plan::Burst;
use super::planted::plant_all;
use super::probes::{lowered_limit, mass_expiry, pinned_ahead, probe, skewed_clocks};
use super::{RateLimitVariant, MASS_LIMIT, NAME};
use crate::history::Millis;
use crate::world::{Actor, ActorResult};

pub(super) async fn client(
    actor: Actor,
    variant: RateLimitVariant,
    bursts: Vec<Burst>,
    setup: Setup,
    flush_at: Option<Millis>,
) -> ActorResult {
    let limit = Limit::new(setup.max, Duration::from_millis(setup.window_ms))?;
    // One multiplexed connection per actor, shared by all its requests.
    let limiter = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
    limiter.report(&actor, setup)?;
    let prober = if actor.index() == 0 && matches!(variant, RateLimitVariant::Log | RateLimitVariant::Counter) {
        // Its own connection (and limiter), so its sequential pinned
        // requests never queue behind a burst.
        let own = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
        Some(actor.spawn(probe(actor.clone(), own, setup)))
    } else {
        None
    };
    let planter = if actor.index() == 0 && matches!(variant, RateLimitVariant::Log | RateLimitVariant::Counter) {
        // Its own connection and limiter: error replies are expected there.
        let own = Limiter::new(variant, actor.connection_expecting_errors(0), limit, actor.seed());
        Some(actor.spawn(plant_all(actor.clone(), variant, own, setup)))
    } else {
        None
    };
    let mass = if actor.index() == 0 && matches!(variant, RateLimitVariant::Log | RateLimitVariant::Counter) {
        let base = setup;
        let setup = Setup { max: MASS_LIMIT, ..setup };
        let limit = Limit::new(setup.max, Duration::from_millis(setup.window_ms))?;
        let own = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
        let ahead = Arc::new(Limiter::new(
            variant,
            actor.connection(0),
            Limit::new(base.max, Duration::from_millis(base.window_ms))?,
            actor.seed(),
        ));
        let skew = Arc::new(Limiter::new(
            variant,
            actor.connection(0),
            Limit::new(base.max, Duration::from_millis(base.window_ms))?,
            actor.seed(),
        ));
        let lowered =
            base.max.checked_sub(1).filter(|&m| m > 0).map(|m| actor.rng_for("rate-limit-lowered").random_range(1..=m));
        let lowered = match lowered {
            Some(m) => Some((
                m,
                Arc::new(Limiter::new(
                    variant,
                    actor.connection(0),
                    Limit::new(m, Duration::from_millis(base.window_ms))?,
                    actor.seed(),
                )),
            )),
            None => None,
        };
        let full = Arc::new(Limiter::new(
            variant,
            actor.connection(0),
            Limit::new(base.max, Duration::from_millis(base.window_ms))?,
            actor.seed(),
        ));
        Some((
            actor.spawn(mass_expiry(actor.clone(), own, setup)),
            actor.spawn(pinned_ahead(actor.clone(), ahead, base)),
            actor.spawn(skewed_clocks(actor.clone(), skew, base)),
            lowered.map(|(m, low)| actor.spawn(lowered_limit(actor.clone(), full, low, m, base))),
        ))
    } else {
        None
    };
    let flusher = flush_at.map(|at| actor.spawn(script_flush(actor.clone(), at)));
    for burst in bursts {
        let now = actor.now();
        if burst.at > now {
            tokio::time::sleep(Duration::from_millis(burst.at - now)).await;
        }
        let mut tasks = Vec::new();
        for _ in 0..burst.size {
            let request = one_request(actor.clone(), Arc::clone(&limiter), setup, NAME.to_string(), None);
            tasks.push(actor.spawn(request));
        }
        for t in tasks {
            let _ = t.await;
        }
    }
    if let Some(f) = flusher {
        let _ = f.await;
    }
    if let Some(p) = prober {
        let _ = p.await;
    }
    if let Some(p) = planter {
        let _ = p.await;
    }
    if let Some((m, a, k, l)) = mass {
        let _ = m.await;
        let _ = a.await;
        let _ = k.await;
        if let Some(l) = l {
            let _ = l.await;
        }
    }
    Ok(())
}

/// `SCRIPT FLUSH` at simulated `at`: every cached limiter script is gone, and
/// the next `EVALSHA` of each must recover from `NOSCRIPT`.
async fn script_flush(actor: Actor, at: Millis) {
    let now = actor.now();
    if at > now {
        tokio::time::sleep(Duration::from_millis(at - now)).await;
    }
    let mut conn = actor.connection(0);
    let r: redis::RedisResult<()> = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await;
    if r.is_ok() {
        actor.note(SCRIPT_FLUSHED);
    }
}

/// The note recorded when a `SCRIPT FLUSH` succeeded.
pub(super) const SCRIPT_FLUSHED: &str = "SCRIPT FLUSH done";
