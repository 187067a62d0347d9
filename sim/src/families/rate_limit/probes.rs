//! Requests aimed at the instants that matter, beside the bursts: the
//! prober's `check_at` walk, the trim batch's edge, the server clock's
//! last millisecond of a second, skewed application clocks, a lowered
//! limit and instants pinned ahead of the server. Random bursts alone
//! would almost never meet these.

use std::sync::Arc;

use core::time::Duration;
use rand::Rng;
use redis_primitives::rate_limit::{Decision, Limit};

use super::limiter::{one_request, Limiter, Setup};
use super::{until, RateLimitVariant, MASS_LIMIT, MASS_SECOND, PROBE_END_MS};
use crate::history::Millis;
use crate::outcome::SituationName;
use crate::world::{Actor, ActorResult};

/// Mass expiry: `MASS_LIMIT` requests pinned at one seeded instant `t`, then
/// `MASS_SECOND` pinned at `t + W`, when the whole first burst leaves the
/// window at once. The log trims at most 64 entries per call, so the calls
/// of that millisecond must count the stale rest correctly and name new
/// entries around the ones already there; random timing never lines up
/// more than a handful of entries like this.
/// Then the same edge one request at a time ([`trim_then_back`]).
pub(super) async fn mass_expiry(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
    burst_then_expiry(&actor, &limiter, setup).await;
    trim_then_back(&actor, &limiter, setup).await;
}

/// The trim batch's edge, one request at a time: `64 + k` admissions pinned
/// at `t`, one at `t + W` (all `64 + k` are stale; the log trims 64 and
/// counts the `k` left as stale), then one at `t + W − 1`, an instant
/// behind: there the `k` untrimmed entries are back in the window, and how
/// many there are says exactly how many the call before trimmed. The
/// requests never overlap, so `rate-limit-exact` replays them in order.
async fn trim_then_back(actor: &Actor, limiter: &Arc<Limiter>, setup: Setup) {
    let mut rng = actor.rng_for("rate-limit-trim-edge");
    let w = setup.window_ms;
    let start = actor.now();
    let t = start + rng.random_range(0..w);
    let n = 64 + rng.random_range(1..=6u64);
    let instants = (0..n).map(|_| t).chain([t + w, t + w - 1]);
    for at in instants {
        if one_request(actor.clone(), Arc::clone(limiter), setup, "probe-trim".to_string(), Some(at)).await.is_none() {
            return;
        }
    }
    if actor.now() - start < w {
        actor.reached(SituationName::new("trim-batch-edge"));
    }
}

async fn burst_then_expiry(actor: &Actor, limiter: &Arc<Limiter>, setup: Setup) {
    let mut rng = actor.rng_for("rate-limit-mass-expiry");
    let first = rng.random_range(100..=PROBE_END_MS - setup.window_ms - 200);
    let mut known = true;
    let mut admitted_late = 0;
    for (at, n) in [(first, MASS_LIMIT as u32), (first + setup.window_ms, MASS_SECOND)] {
        until(actor, at).await;
        let at = actor.now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                actor.spawn(one_request(actor.clone(), Arc::clone(limiter), setup, "probe-mass".to_string(), Some(at)))
            })
            .collect();
        for t in tasks {
            match t.await {
                Ok(Some(d)) => admitted_late += u32::from(at > first && d.is_allowed()),
                _ => known = false,
            }
        }
    }
    if known && admitted_late >= 2 {
        actor.reached(SituationName::new("mass-expiry"));
    }
}

/// The server's clock across a second: one `check` (no pinned instant) per
/// millisecond from 30 ms before two seeded whole seconds to 4 ms after, so
/// that, whatever the link latency, some script reads `TIME` with its
/// microseconds at 999xxx. A script that turns microseconds into
/// milliseconds with the wrong divisor is off only there (or off by one
/// everywhere else); `rate-limit-exact` compares every such `now` with the
/// clock the bridge ran the script under. It is an actor of its own
/// (`clock-prober`), so that every script its host sends is one of these
/// requests and each reported `now` can be matched to its execution.
pub(super) async fn second_edge(actor: Actor, variant: RateLimitVariant, setup: Setup) -> ActorResult {
    // Requests on one connection arrive in order, so their executions
    // bunch up behind a slow one; four connections spread them out.
    let limit = Limit::new(setup.max, Duration::from_millis(setup.window_ms))?;
    let limiters: Vec<Arc<Limiter>> =
        (0..4).map(|_| Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()))).collect();
    let mut rng = actor.rng_for("rate-limit-second-edge");
    // Simulated time 0 is a whole second of unix time (the pinned epoch).
    let first = rng.random_range(1..PROBE_END_MS / 1000);
    let mut tasks = Vec::new();
    for second in [1000 * first, 1000 * (first + 1)] {
        for (i, at) in (second - 30..second + 4).enumerate() {
            until(&actor, at).await;
            let limiter = Arc::clone(&limiters[i % limiters.len()]);
            tasks.push(actor.spawn(one_request(actor.clone(), limiter, setup, "probe-second".to_string(), None)));
        }
    }
    let mut last_ms = false;
    for t in tasks {
        if let Ok(Some(d)) = t.await {
            last_ms |= d.at_ms() % 1000 == 999;
        }
    }
    if last_ms {
        actor.reached(SituationName::new("server-clock-read-at-a-seconds-last-ms"));
    }
    Ok(())
}

/// Two application servers whose clocks disagree, sharing one key through
/// `check_at` with their own clocks: one runs up to 1.5 windows ahead of
/// simulated time, the other up to a window behind, and their sequential
/// requests interleave at random, so the pinned instants go backwards
/// across buckets and windows. Each limiter documents what it does then
/// (the log counts every entry not yet out of the window, "future" ones
/// included; the counter keeps counting in its newest bucket); the requests
/// never overlap and span less than a window, so `rate-limit-exact` can
/// replay them one by one with no expiry in between.
pub(super) async fn skewed_clocks(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
    let mut rng = actor.rng_for("rate-limit-skew");
    let w = setup.window_ms;
    until(&actor, rng.random_range(w..=PROBE_END_MS - w)).await;
    let start = actor.now();
    let ahead = rng.random_range(1..=w + w / 2);
    let behind = rng.random_range(1..=w);
    let mut known = true;
    let mut backwards = false;
    let mut last = None;
    for _ in 0..rng.random_range(10..=18) {
        let now = actor.now();
        let at = if rng.random_bool(0.5) { now + ahead } else { now - behind };
        backwards |= last.is_some_and(|l| at < l);
        last = Some(at);
        if one_request(actor.clone(), Arc::clone(&limiter), setup, "probe-skew".to_string(), Some(at)).await.is_none() {
            known = false;
            break;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..=10))).await;
    }
    if known && backwards && actor.now() - start < w {
        actor.reached(SituationName::new("skewed-clocks-went-backwards"));
    }
}

/// A limit lowered for a key in use (a configuration rollout: the old
/// limiter and the new one share the key for a while). The old limiter
/// (`base.max`) fills the key over half a window; the new one (`low`,
/// lower) then finds more entries in the window than its limit, so its
/// denial's retry-after is when the window drops below *its* limit — the
/// `(count − low)`-th oldest entry leaving, not the oldest — and it asks
/// again exactly one millisecond before that and at that instant. Every
/// other workload shares a key between limiters of one limit, where the
/// two instants are the same; `rate-limit-exact` replays the key with each
/// decision's own limit.
pub(super) async fn lowered_limit(actor: Actor, full: Arc<Limiter>, low: Arc<Limiter>, low_max: u64, base: Setup) {
    let mut rng = actor.rng_for("rate-limit-lowered-at");
    let w = base.window_ms;
    until(&actor, rng.random_range(100..=PROBE_END_MS - 2 * w)).await;
    let key = "probe-lowered";
    let gap = (w / (2 * base.max)).max(1);
    for _ in 0..base.max {
        let at = actor.now();
        if one_request(actor.clone(), Arc::clone(&full), base, key.to_string(), Some(at)).await.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(1..=gap))).await;
    }
    let lowered = Setup { max: low_max, ..base };
    let at = actor.now();
    let Some(Decision::Denied { retry_after, .. }) =
        one_request(actor.clone(), Arc::clone(&low), lowered, key.to_string(), Some(at)).await
    else {
        return;
    };
    let retry = at + retry_after.as_millis() as u64;
    let mut known = true;
    for t in [retry - 1, retry] {
        until(&actor, t).await;
        known &= one_request(actor.clone(), Arc::clone(&low), lowered, key.to_string(), Some(t)).await.is_some();
    }
    if known {
        actor.reached(SituationName::new("limit-lowered-for-a-key-in-use"));
    }
}

/// `check_at` ahead of the server's clock: the key's expiry runs on the
/// server's clock, so when the pinned instants jump two windows ahead
/// within a few real milliseconds, the state of an idle window is still
/// there and the limiter itself must see that it is stale (the counter's
/// "skipped a bucket" branch). Timing alone never gets here: pinned
/// instants elsewhere follow the server's clock, and there the key has
/// expired by then.
pub(super) async fn pinned_ahead(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
    let mut rng = actor.rng_for("rate-limit-pinned-ahead");
    let w = setup.window_ms;
    until(&actor, rng.random_range(100..=PROBE_END_MS - 100)).await;
    let start = actor.now() + 3 * w + rng.random_range(0..w);
    let mut known = true;
    for at in [start, start + 2 * w + rng.random_range(0..w), start + 4 * w + rng.random_range(0..w)] {
        for _ in 0..rng.random_range(1..=setup.max + 1) {
            let r = one_request(actor.clone(), Arc::clone(&limiter), setup, "probe-ahead".to_string(), Some(at)).await;
            known &= r.is_some();
        }
    }
    if known {
        actor.reached(SituationName::new("pinned-ahead-skipped-a-bucket"));
    }
}

/// The prober: `check_at` on keys of its own, aimed at the instants that
/// matter (module docs). Pinned instants are the simulated time of the
/// invoke, so they never run ahead of the server's clock nor go backwards.
pub(super) async fn probe(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
    let mut rng = actor.rng_for("rate-limit-probe");
    let w = setup.window_ms;
    let mut generation = 0u32;
    let mut admitted: Vec<Millis> = Vec::new();
    // Fires `n` requests pinned at the current instant, concurrently.
    // Returns their decisions, or `None` if any outcome is unknown.
    async fn fire(actor: &Actor, limiter: &Arc<Limiter>, setup: Setup, key: &str, n: u32) -> Option<Vec<Decision>> {
        let at = actor.now();
        let mut tasks = Vec::new();
        for _ in 0..n {
            let r = one_request(actor.clone(), Arc::clone(limiter), setup, key.to_string(), Some(at));
            tasks.push(actor.spawn(r));
        }
        let mut out = Vec::new();
        let mut known = true;
        for t in tasks {
            match t.await {
                Ok(Some(d)) => out.push(d),
                _ => known = false,
            }
        }
        known.then_some(out)
    }
    while actor.now() < PROBE_END_MS {
        let key = format!("probe-{generation}");
        let now = actor.now();
        // Where to aim next.
        let target = match rng.random_range(0..8) {
            0..=3 => now + rng.random_range(0..=w / 6),
            // The oldest admission whose edge is still ahead.
            4 | 5 => match admitted.iter().find(|&&a| a + w + 1 >= now) {
                Some(&a) => (a + w - 1 + rng.random_range(0..=2)).max(now),
                None => now + rng.random_range(0..=w / 6),
            },
            _ => {
                // The last or first milliseconds of a bucket (unix-aligned).
                let next = (setup.epoch_ms + now) / w * w + w - setup.epoch_ms;
                (next - 1 + rng.random_range(0..=2)).max(now)
            }
        };
        until(&actor, target).await;
        if actor.now() >= PROBE_END_MS {
            break;
        }
        let n = if rng.random_range(0..5) == 0 { rng.random_range(2..=3) } else { 1 };
        let Some(ds) = fire(&actor, &limiter, setup, &key, n).await else {
            generation += 1;
            admitted.clear();
            continue;
        };
        for d in &ds {
            if d.is_allowed() {
                admitted.push(d.at_ms() - setup.epoch_ms);
            }
        }
        // After a denial: walk the retry instant, t + r − 1, t + r, t + r + 1.
        let Some(&Decision::Denied { retry_after, at_ms, .. }) = ds.iter().find(|d| d.is_denied()) else { continue };
        if rng.random_range(0..4) == 0 {
            continue;
        }
        let t = at_ms - setup.epoch_ms;
        let r = retry_after.as_millis() as u64;
        let lo = if r > 1 && rng.random_range(0..3) > 0 { t + r - 1 } else { t + r };
        let mut unknown = false;
        for at in lo..=t + r + rng.random_range(0..=1) {
            until(&actor, at).await;
            match fire(&actor, &limiter, setup, &key, 1).await {
                Some(ds) => admitted.extend(ds.iter().filter(|d| d.is_allowed()).map(|d| d.at_ms() - setup.epoch_ms)),
                None => {
                    unknown = true;
                    break;
                }
            }
        }
        if unknown {
            generation += 1;
            admitted.clear();
        }
    }
}
