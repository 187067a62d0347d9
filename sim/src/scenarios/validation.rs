//! The validation probe: configuration values on both sides of every
//! documented edge, tried on the production constructors.
//!
//! Faults never reach a constructor, and a workload built with comfortable
//! settings never comes near an edge; a `>` that became `>=` in a
//! validation passes every run. Each correct family calls its part of the
//! probe once per run (with values drawn from the seed around the edge),
//! records every answer as an [`Op::Validated`], and `input-validation`
//! states the rule each answer must follow.

use core::time::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_primitives::election::Election;
use redis_primitives::rate_limit::Limit;
use redis_primitives::redlock::{Redlock, RedlockConfig};
use redis_primitives::{Drift, Error, KeepAlive, Lock, Ttl};

use crate::history::{Op, Validation};
use crate::net::SimConnection;
use crate::world::Actor;

const MS: u128 = 1_000_000;

fn record<T>(actor: &Actor, case: Validation, r: &Result<T, Error>) {
    let (accepted, invalid, refusal) = match r {
        Ok(_) => (true, false, None),
        Err(e) => (false, matches!(e, Error::InvalidInput { .. }), Some(e.to_string())),
    };
    actor.observe(Op::Validated { case, accepted, invalid, refusal });
}

fn drift_of(rng: &mut StdRng) -> (u32, u64) {
    (rng.random_range(0..=50), rng.random_range(0..=5))
}

fn drift((per_mille, constant_ms): (u32, u64)) -> Result<Drift, Error> {
    Drift::new(per_mille, Duration::from_millis(constant_ms))
}

/// Usable ms (floor) of `ttl_ms` under `d`, as the checker computes it.
fn usable_ms(ttl_ms: u64, (per_mille, constant_ms): (u32, u64)) -> u64 {
    let ttl = u128::from(ttl_ms) * MS;
    let allowance = ttl * u128::from(per_mille) / 1000 + u128::from(constant_ms) * MS;
    (ttl.saturating_sub(allowance) / MS) as u64
}

/// A drift allowance as `(‰, constant ms)`.
type Drift2 = (u32, u64);
/// Election timing as `(lease, renew, campaign)` ms.
type Timing3 = (u64, u64, u64);

/// Election timing around its edges: renew at, above and below half the
/// usable lease, renew at the lease itself, zero intervals, a lease the
/// drift swallows whole.
pub fn election(actor: &Actor, conn: &SimConnection) -> Result<(), Error> {
    let mut rng = StdRng::seed_from_u64(actor.seed_for("validation-election"));
    let d = drift_of(&mut rng);
    let lease = rng.random_range(20..=2000u64);
    let half = usable_ms(lease, d) / 2;
    let campaign = rng.random_range(1..=100u64);
    let mut cases = vec![
        (lease, half, campaign),
        (lease, half + 1, campaign),
        (lease, half.saturating_sub(1).max(1), campaign),
        (lease, 0, campaign),
        (lease, lease, campaign),
        (lease, half.max(1), 0),
        (0, 1, campaign),
    ];
    // All of a short lease eaten by the drift's constant part.
    if d.1 > 0 {
        cases.push((d.1, 1, campaign));
    }
    let mut with_drift: Vec<(Drift2, Timing3)> = cases.into_iter().map(|c| (d, c)).collect();
    // Exactly at the edge: no proportional drift and an even constant, so
    // half the usable lease is a whole number of milliseconds.
    let (c, lease) = (2 * rng.random_range(0..=3u64), 2 * rng.random_range(20..=500u64));
    let exact = (lease - c) / 2;
    with_drift.push(((0, c), (lease, exact, campaign)));
    with_drift.push(((0, c), (lease, exact + 1, campaign)));
    for (d, (lease_ms, renew_ms, campaign_ms)) in with_drift {
        let built = Election::builder(conn.clone(), "validation")
            .lease_ttl(Duration::from_millis(lease_ms))
            .renew_interval(Duration::from_millis(renew_ms))
            .campaign_interval(Duration::from_millis(campaign_ms))
            .drift(drift(d)?)
            .build();
        record(actor, Validation::ElectionTiming { lease_ms, renew_ms, campaign_ms, drift: d }, &built);
    }
    // The defaults: renew every third of the lease, campaign as often.
    let lease_ms = rng.random_range(20..=2000u64);
    let built = Election::builder(conn.clone(), "validation")
        .lease_ttl(Duration::from_millis(lease_ms))
        .drift(drift(d)?)
        .build();
    record(actor, Validation::ElectionDefaults { lease_ms, drift: d }, &built);
    if let Ok(e) = &built {
        let third = Duration::from_millis(lease_ms) / 3;
        actor.configured(
            "Election (default intervals)",
            &[
                ("renew_interval", format!("{:?}", e.renew_interval()), format!("{third:?}")),
                ("campaign_interval", format!("{:?}", e.campaign_interval()), format!("{third:?}")),
            ],
        );
    }
    Ok(())
}

/// `KeepAlive::new` around its edge: an interval just below, at and above
/// the usable TTL of `lock` (whose drift is `d`), and zero.
pub fn keep_alive(actor: &Actor, lock: &Lock<SimConnection>, d: (u32, u64)) -> Result<(), Error> {
    let mut rng = StdRng::seed_from_u64(actor.seed_for("validation-keep-alive"));
    let ttl_ms = rng.random_range(10..=1000u64);
    let u = usable_ms(ttl_ms, d);
    let ttl = Ttl::from_millis(ttl_ms)?;
    for every_ms in [0, u.saturating_sub(1), u, u + 1] {
        let r = KeepAlive::new(lock, ttl, Duration::from_millis(every_ms));
        record(actor, Validation::KeepAlive { ttl_ms, every_ms, drift: d }, &r);
    }
    Ok(())
}

/// `Limit::new` around `max × window ≤ 2^52` and its zero cases.
pub fn limits(actor: &Actor) {
    let mut rng = StdRng::seed_from_u64(actor.seed_for("validation-limit"));
    let k = rng.random_range(0..=52u32);
    let (max, window_ms) = (1u64 << k, 1u64 << (52 - k));
    for (max, window_ms) in [(max, window_ms), (max + 1, window_ms), (max, window_ms + 1), (0, 1000), (5, 0)] {
        record(actor, Validation::Limit { max, window_ms }, &Limit::new(max, Duration::from_millis(window_ms)));
    }
}

/// `check_at` refuses an instant a Lua number cannot hold exactly. Only
/// the refusals are tried here (an accepted call is an ordinary decision,
/// which the prober makes plenty of): they must not reach Redis.
pub async fn check_at<F, Fut, T>(actor: &Actor, check_at: F)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    for now_ms in [(1u64 << 53), u64::MAX] {
        let r = check_at(now_ms).await;
        record(actor, Validation::CheckAt { now_ms }, &r);
    }
}

/// `Redlock::connect`'s validation: no masters, a drift as long as the
/// TTL, a master timeout at and just below the TTL, zero timeouts. Only
/// the last valid case connects for real.
pub async fn redlock(actor: &Actor, masters: &[SimConnection]) -> Result<(), Error> {
    let mut rng = StdRng::seed_from_u64(actor.seed_for("validation-redlock"));
    let ttl_ms = rng.random_range(10..=1000u64);
    let d = drift_of(&mut rng);
    let cases = [
        (0, ttl_ms, d, ttl_ms / 2, 100),
        (masters.len() as u32, ttl_ms, (0, ttl_ms), ttl_ms / 2, 100),
        (masters.len() as u32, ttl_ms, d, 0, 100),
        (masters.len() as u32, ttl_ms, d, ttl_ms, 100),
        (masters.len() as u32, ttl_ms, d, ttl_ms / 2, 0),
        (masters.len() as u32, ttl_ms, d, ttl_ms - 1, 100),
    ];
    for (n, ttl_ms, d, master_timeout_ms, handshake_ms) in cases {
        let config = RedlockConfig::new(Ttl::from_millis(ttl_ms)?)
            .drift(drift(d)?)
            .master_timeout(Duration::from_millis(master_timeout_ms))
            .handshake_timeout(Duration::from_millis(handshake_ms));
        let given = masters[..n as usize].to_vec();
        let r = Redlock::connect(given, config).await;
        // A valid configuration connects; a fault in that handshake is not
        // an answer about the configuration.
        if matches!(&r, Err(e) if e.outcome_is_unknown()) {
            continue;
        }
        let case = Validation::Redlock { masters: n, ttl_ms, drift: d, master_timeout_ms, handshake_ms };
        record(actor, case, &r);
    }
    Ok(())
}
