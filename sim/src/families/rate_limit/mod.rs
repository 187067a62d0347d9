//! Rate-limit scenarios: `rate-limit`, `rate-limit-counter`,
//! `rate-limit-fixed-window`, `rate-limit-client-side`, `rate-limit-watch-multi`.
//!
//! Three client actors share one limited name (`api`, 5 requests per 1000 ms)
//! on one bridged redis-server. Each actor fires **bursts** of concurrent
//! requests on its one multiplexed connection (every request of a burst is a
//! task of the actor, so a process pause freezes them all), at seeded
//! moments chosen to hit the worst cases:
//!
//! - around each window boundary of the server clock (the epoch is a whole
//!   second, so boundaries fall at simulated multiples of 1000 ms), a burst
//!   just **before** it from one client and one just **after** it from
//!   another — the fixed window admits both, `2 × max` within milliseconds;
//! - one burst in the middle of each window;
//! - every burst has 5–8 requests in flight at once, which is what breaks the
//!   client-side window (all count before any records) and `WATCH`/`MULTI` on
//!   a shared connection (the first `EXEC` clears every caller's watch).
//!
//! The nemesis adds 0–2 faults (partitions, holds, latency, client and
//! server pauses). A request that times out is `info` and is not counted.
//!
//! Each decision is recorded with its **server time** (`Decision::at_ms`,
//! the Redis clock the limiter used, pinned by the bridge to simulated time)
//! and the `rate-limit` checker counts admissions in every window
//! `(t − 1000, t]` of that clock. The sliding log must never exceed 5; the
//! sliding counter must stay within its documented `2 × max − 1 = 9`, and
//! its actual worst window is measured (`admissions-per-window`).
//!
//! For the two correct limiters the run also has:
//!
//! - a **prober** (a task of client 0, on a connection of its own, so client
//!   0's faults hit it too) that calls `check_at` on keys of its own
//!   (`probe-0`, `probe-1`, …), one instant at a time and never backwards,
//!   aimed at the instants that matter: `a + W − 1`, `a + W`, `a + W + 1` of
//!   an earlier admission `a`, the last and first milliseconds of a counter
//!   bucket, and, after a denial at `t` with `retry_after = r`, exactly
//!   `t + r − 1`, `t + r` and `t + r + 1`; sometimes several requests at one
//!   pinned instant. After an unknown outcome it moves to a fresh key (a
//!   request that may still run late would otherwise execute with an
//!   earlier instant than its successors, which `check_at` forbids);
//! - one `SCRIPT FLUSH` at a seeded moment, after which the limiters'
//!   scripts must be reloaded (`Script::invoke_async` recovers from
//!   `NOSCRIPT`);
//! - a quiet tail: faults end by 2700 ms, the prober goes on until 4500 ms.
//!
//! Their decisions are checked by `rate-limit-exact` (every decision, count,
//! `remaining` and `retry_after` recomputed from the history, both ways)
//! and by `liveness` (after healing, a retry at exactly `retry_after` with
//! nothing admitted meanwhile is admitted).

use std::sync::Arc;

use core::time::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_primitives::naive::{ClientSideWindow, NaiveFixedWindow, WatchMultiLimiter};
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{OwnerSource, Ttl};

use crate::scenarios::{outcome_from, Outcome, Situation};
use crate::api::{
    CLIENT_SIDE_CHECK, CLIENT_SIDE_CHECK_AT, COUNTER_CHECK, COUNTER_CHECK_AT, FIXED_WINDOW_CHECK,
    FIXED_WINDOW_CHECK_AT, LOG_CHECK, LOG_CHECK_AT, WATCH_MULTI_CHECK,
};
use crate::checker::key_lifetimes::{self, Life, Rule};
pub mod checks;

use checks::window::{self, Allowance};
use checks::{exact, liveness};
use crate::history::{Admission, Api, DecisionAccessors, Event, EventKind, Millis, Op};
use crate::nemesis::{Fault, FaultClass, Schedule};
use crate::net::SimConnection;
use crate::servers::{Servers, SetupError};
use crate::space::FaultSpace;
use crate::stats::{self, Bound, Histograms, WINDOW_FILL};
use crate::world::{derive_seed, Actor, ActorResult, World, WorldConfig};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use crate::family::Family;

/// The limited name.
pub const NAME: &str = "api";
/// Requests per window.
pub const MAX: u64 = 5;
/// Window length (ms).
pub const WINDOW_MS: u64 = 1000;
const CLIENTS: usize = 3;
const LENGTH_MS: u64 = 3000;
/// The prober and the quiet tail run until here (faults end by 2700 ms).
const PROBE_END_MS: u64 = 4500;
/// A request may still execute this long after its invoke, or after the
/// last fault heals if that is later (response timeout 250 ms, links
/// ≤ 10 ms plus ≤ 100 ms of latency faults; held and paused requests run by
/// the heal). After `last heal + DRAIN_MS` every request has an answer.
const DRAIN_MS: u64 = 500;
/// Limit of the mass-expiry key: above the sliding log's trim batch (64),
/// so one window after its burst more entries leave than one call trims.
const MASS_LIMIT: u64 = 100;
/// Requests of the second mass-expiry burst (one window after the first).
const MASS_SECOND: u32 = 40;

/// The situations the correct limiters exist to reach (the last one only
/// the counter, whose approximation overshoots).
const ALL: &[Situation] = &[
    Situation { name: "limit-reached-exactly", meaning: "an admission reported count = max (remaining 0)" },
    Situation {
        name: "same-ms-admissions",
        meaning: "two admissions on one key in the same server millisecond (ties ordered by count)",
    },
    Situation {
        name: "decided-on-window-last-ms",
        meaning: "a decision at exactly a + W - 1 of an earlier admission a (a's last millisecond in the window)",
    },
    Situation {
        name: "decided-at-window-edge",
        meaning: "a decision at exactly a + W of an earlier admission a (the first instant a no longer counts)",
    },
    Situation {
        name: "decided-past-window-edge",
        meaning: "a decision at exactly a + W + 1 of an earlier admission a",
    },
    Situation {
        name: "denied-at-retry-after-minus-1",
        meaning: "denied at t with retry-after r, then a request at exactly t + r - 1 was denied",
    },
    Situation {
        name: "denied-then-admitted-at-retry-after",
        meaning: "denied at t with retry-after r, then a request at exactly t + r was admitted",
    },
    Situation {
        name: "burst-straddles-boundary",
        meaning: "decisions within 150 ms before and after a bucket boundary on one key, with a denial after it",
    },
    Situation {
        name: "request-outcome-unknown",
        meaning: "a rate-limit request timed out or failed (outcome unknown to the checkers)",
    },
    Situation {
        name: "noscript-recovered",
        meaning: "a decision succeeded after SCRIPT FLUSH dropped the limiter's script (NOSCRIPT recovered)",
    },
    Situation {
        name: "mass-expiry",
        meaning: "a burst larger than the log's trim batch (64) was admitted in one millisecond and, one window later, a second burst on that key was decided",
    },
    Situation {
        name: "server-clock-read-at-a-seconds-last-ms",
        meaning: "a decision on the server's own clock executed at the last millisecond of a second (TIME's microseconds at 999xxx: where a wrong unit conversion shows)",
    },
    Situation {
        name: "trim-batch-edge",
        meaning: "more entries than one call trims (64) left the window at once, and an instant one millisecond behind then counted the untrimmed rest (replayed exactly)",
    },
    Situation {
        name: "skewed-clocks-went-backwards",
        meaning: "check_at instants from two application clocks that disagree went backwards on one key, and every decision was replayed exactly",
    },
    Situation {
        name: "pinned-ahead-skipped-a-bucket",
        meaning: "check_at instants ahead of the server's clock skipped a whole window while the key's state was still alive",
    },
    Situation {
        name: "limit-lowered-for-a-key-in-use",
        meaning: "a limiter with a lower limit denied a key a limiter with a higher one had filled (more entries in the window than its limit), and its retry-after was judged exactly",
    },
    Situation {
        name: "retry-after-honoured-after-healing",
        meaning: "after the last fault healed, a denied client retried at exactly its retry-after and was admitted",
    },
    Situation {
        name: "counter-overshoot-above-max",
        meaning: "some window (t - W, t] held more than max admissions (the counter's documented approximation)",
    },
];

/// Situations of `rate-limit` (`SlidingWindowLog`): all but the counter's
/// overshoot.
pub const LOG_SITUATIONS: &[Situation] = ALL.split_at(ALL.len() - 1).0;

/// Situations of `rate-limit-counter` (`SlidingWindowCounter`).
pub const COUNTER_SITUATIONS: &[Situation] = ALL;

/// Which limiter is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// [`SlidingWindowLog`]: exact.
    Log,
    /// [`SlidingWindowCounter`]: approximate, bounded by `2 × max − 1`.
    Counter,
    /// [`NaiveFixedWindow`]: `INCR` + `EXPIRE`.
    FixedWindow,
    /// [`ClientSideWindow`]: trim, count and add in three round trips.
    ClientSide,
    /// [`WatchMultiLimiter`] on the actor's shared connection.
    WatchMulti,
}

enum Limiter {
    Log(SlidingWindowLog<SimConnection>),
    Counter(SlidingWindowCounter<SimConnection>),
    Fixed(NaiveFixedWindow<SimConnection>),
    ClientSide(ClientSideWindow<SimConnection>),
    WatchMulti(WatchMultiLimiter<SimConnection>),
}

impl Limiter {
    fn new(variant: Variant, conn: SimConnection, limit: Limit, seed: u64) -> Limiter {
        match variant {
            Variant::Log => Limiter::Log(SlidingWindowLog::new(conn, limit)),
            Variant::Counter => Limiter::Counter(SlidingWindowCounter::new(conn, limit)),
            Variant::FixedWindow => Limiter::Fixed(NaiveFixedWindow::new(conn, limit)),
            Variant::ClientSide => {
                Limiter::ClientSide(ClientSideWindow::new(conn, limit).members(OwnerSource::seeded(seed)))
            }
            // A bounded number of retries: on a connection of its own a loser
            // goes round again, and the simulation must end.
            Variant::WatchMulti => Limiter::WatchMulti(
                WatchMultiLimiter::new(conn, limit).members(OwnerSource::seeded(seed)).max_retries(50),
            ),
        }
    }

    /// Decides one request for `name`, at the server's time or at the
    /// pinned unix-ms instant `at`.
    async fn check(&self, name: &str, at: Option<u64>) -> redis_primitives::Result<Decision> {
        match (self, at) {
            (Limiter::Log(l), None) => l.check(name).await,
            (Limiter::Log(l), Some(at)) => l.check_at(name, at).await,
            (Limiter::Counter(l), None) => l.check(name).await,
            (Limiter::Counter(l), Some(at)) => l.check_at(name, at).await,
            (Limiter::Fixed(l), None) => l.check(name).await,
            (Limiter::Fixed(l), Some(at)) => l.check_at(name, at).await,
            (Limiter::ClientSide(l), None) => l.check(name).await,
            (Limiter::ClientSide(l), Some(at)) => l.check_at(name, at).await,
            (Limiter::WatchMulti(l), _) => l.check(name).await.map(|o| o.decision),
        }
    }

    /// Records what a correct limiter reports of its configuration
    /// (judged by `configuration`).
    fn report(&self, actor: &Actor, setup: Setup) -> redis_primitives::Result<()> {
        let (primitive, limit, key, prefix, worst) = match self {
            Limiter::Log(l) => ("SlidingWindowLog", l.limit(), l.key(NAME)?, "rate-log", None),
            Limiter::Counter(l) => {
                ("SlidingWindowCounter", l.limit(), l.key(NAME)?, "rate-counter", Some(l.worst_case_admissions()))
            }
            _ => return Ok(()),
        };
        let mut fields = vec![
            ("limit().max()", limit.max().to_string(), setup.max.to_string()),
            ("limit().window()", limit.window().to_string(), Ttl::from_millis(setup.window_ms)?.to_string()),
            ("key", key, format!("{prefix}:{{{NAME}}}")),
        ];
        if let Some(w) = worst {
            // The documented bound of two weighted buckets.
            fields.push(("worst_case_admissions", w.to_string(), (2 * setup.max - 1).to_string()));
        }
        actor.configured(primitive, &fields);
        Ok(())
    }

    /// The public operation `check(name, at)` calls, for the operations table.
    fn api(&self, pinned: bool) -> Api {
        match (self, pinned) {
            (Limiter::Log(_), false) => LOG_CHECK,
            (Limiter::Log(_), true) => LOG_CHECK_AT,
            (Limiter::Counter(_), false) => COUNTER_CHECK,
            (Limiter::Counter(_), true) => COUNTER_CHECK_AT,
            (Limiter::Fixed(_), false) => FIXED_WINDOW_CHECK,
            (Limiter::Fixed(_), true) => FIXED_WINDOW_CHECK_AT,
            (Limiter::ClientSide(_), false) => CLIENT_SIDE_CHECK,
            (Limiter::ClientSide(_), true) => CLIENT_SIDE_CHECK_AT,
            (Limiter::WatchMulti(_), _) => WATCH_MULTI_CHECK,
        }
    }
}

/// Rate-limit workload: clients sharing one limited name, firing bursts of
/// concurrent requests (`scenarios/rate_limit.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimitPlan {
    /// Clients (each with one multiplexed connection).
    pub clients: u32,
    /// Requests per window.
    pub limit: u64,
    /// Window length (ms).
    pub window_ms: u64,
    /// Every burst, of every client.
    pub bursts: Vec<Burst>,
}

/// `size` concurrent requests from `client` at simulated `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Burst {
    /// Which client (index).
    pub client: u32,
    /// When (simulated ms).
    pub at: Millis,
    /// Requests in flight at once.
    pub size: u32,
}

/// What rate-limit plans may be drawn from (ranges inclusive; each
/// shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSpace {
    /// Clients.
    pub clients: (u32, u32),
    /// Requests per window.
    pub limit: (u64, u64),
    /// Window lengths to choose from (the first is the simplest).
    pub windows_ms: Vec<u64>,
    /// Where the bursts go.
    pub bursts: BurstSpace,
}

/// How the bursts of a rate-limit plan are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BurstSpace {
    /// `count` bursts of `size` requests, each by a drawn client at a drawn
    /// time in `[0, length_ms)` (shrinks to fewer, smaller bursts).
    Free {
        /// Number of bursts.
        count: (usize, usize),
        /// Requests per burst.
        size: (u32, u32),
        /// Bursts start before this (ms).
        length_ms: Millis,
    },
    /// The seeds' layout (module docs): at every window boundary before
    /// `length_ms`, a burst 10–150 ms before it and one by another client
    /// 0–150 ms after it, plus one burst 300–700 ms into every window.
    Boundaries {
        /// Requests per burst.
        size: (u32, u32),
        /// The run's length (ms).
        length_ms: Millis,
    },
}

impl RateLimitSpace {
    /// The property search's space: 1–4 clients, limit 2–8 per
    /// 1000/500/250 ms, 1–8 bursts of 1–10 requests in 3 s.
    pub fn search() -> RateLimitSpace {
        RateLimitSpace {
            clients: (1, 4),
            limit: (2, 8),
            windows_ms: vec![1000, 500, 250],
            bursts: BurstSpace::Free { count: (1, 8), size: (1, 10), length_ms: LENGTH_MS },
        }
    }

    /// What every rate-limit variant's seeds draw: three clients, 5 per
    /// second, boundary bursts of 5–8 requests over 3 s.
    pub fn seeds() -> RateLimitSpace {
        RateLimitSpace {
            clients: (CLIENTS as u32, CLIENTS as u32),
            limit: (MAX, MAX),
            windows_ms: vec![WINDOW_MS],
            bursts: BurstSpace::Boundaries { size: (5, 8), length_ms: LENGTH_MS },
        }
    }

    /// The strategy (the family's one generator).
    pub fn plans(&self) -> BoxedStrategy<(RateLimitPlan, Vec<Fault>)> {
        let max_clients = self.clients.1.max(1);
        let (clients, limit, windows) =
            (self.clients.0..=self.clients.1, self.limit.0..=self.limit.1, self.windows_ms.clone());
        match self.bursts {
            // Draw order (clients, bursts, limit, window) is what the
            // committed regression files were recorded with.
            BurstSpace::Free { count, size, length_ms } => {
                let burst = (0..max_clients, 0..length_ms.max(1), size.0..=size.1)
                    .prop_map(|(client, at, size)| Burst { client, at, size });
                (clients, vec(burst, count.0..=count.1), limit, proptest::sample::select(windows))
                    .prop_map(|(clients, bursts, limit, window_ms)| {
                        (RateLimitPlan { clients, limit, window_ms, bursts }, Vec::new())
                    })
                    .boxed()
            }
            BurstSpace::Boundaries { size, length_ms } => {
                let bursts = proptest::sample::select(windows).prop_flat_map(move |window_ms| {
                    let window_ms = window_ms.max(1);
                    let boundaries = (length_ms.saturating_sub(1) / window_ms) as usize;
                    let windows = length_ms.div_ceil(window_ms) as usize;
                    let straddle = (
                        0..max_clients,
                        1..max_clients.max(2),
                        10..=150u64,
                        0..=150u64,
                        size.0..=size.1,
                        size.0..=size.1,
                    );
                    let middle = (0..max_clients, 300..=700u64, size.0..=size.1);
                    (vec(straddle, boundaries), vec(middle, windows)).prop_map(move |(straddles, middles)| {
                        let mut bursts = Vec::new();
                        for (i, (before, offset, ahead, behind, size_before, size_after)) in
                            straddles.into_iter().enumerate()
                        {
                            let boundary = (i as u64 + 1) * window_ms;
                            let after = (before + offset) % max_clients;
                            bursts.push(Burst {
                                client: before,
                                at: boundary.saturating_sub(ahead),
                                size: size_before,
                            });
                            bursts.push(Burst { client: after, at: boundary + behind, size: size_after });
                        }
                        for (i, (who, into, size)) in middles.into_iter().enumerate() {
                            bursts.push(Burst { client: who, at: i as u64 * window_ms + into, size });
                        }
                        (bursts, window_ms)
                    })
                });
                (clients, bursts, limit)
                    .prop_map(|(clients, (bursts, window_ms), limit)| {
                        (RateLimitPlan { clients, limit, window_ms, bursts }, Vec::new())
                    })
                    .boxed()
            }
        }
    }
}

/// The fixed parts of every request of a run.
#[derive(Debug, Clone, Copy)]
struct Setup {
    epoch_ms: u64,
    max: u64,
    window_ms: u64,
}

/// One request on `key`, at the server's time or pinned at simulated `pinned`
/// ms; recorded with the whole decision. `None` if its outcome is unknown.
async fn one_request(
    actor: Actor,
    limiter: Arc<Limiter>,
    setup: Setup,
    key: String,
    pinned: Option<Millis>,
) -> Option<Decision> {
    let op = |admission, server_ms, count, remaining, accessors| Op::RateLimit {
        key: key.clone(),
        limit: setup.max,
        window_ms: setup.window_ms,
        admission,
        server_ms,
        count,
        remaining,
        pinned_ms: pinned,
        accessors,
    };
    let id = actor.call(limiter.api(pinned.is_some()), op(None, None, None, None, None));
    match limiter.check(&key, pinned.map(|p| setup.epoch_ms + p)).await {
        Ok(d) => {
            let (admission, remaining) = match d {
                Decision::Allowed { remaining, .. } => (Admission::Admitted, Some(remaining)),
                Decision::Denied { retry_after, .. } => {
                    (Admission::Denied { retry_after_ms: Some(retry_after.as_millis() as u64) }, None)
                }
            };
            let server = d.at_ms().saturating_sub(setup.epoch_ms);
            let accessors = DecisionAccessors {
                is_allowed: d.is_allowed(),
                is_denied: d.is_denied(),
                remaining: d.remaining(),
                retry_after_ms: d.retry_after().map(|r| r.as_millis() as u64),
                count: d.count(),
            };
            let count = match d {
                Decision::Allowed { count, .. } | Decision::Denied { count, .. } => count,
            };
            actor.ok(id, op(Some(admission), Some(server), Some(count), remaining, Some(accessors)));
            Some(d)
        }
        Err(e) if e.outcome_is_unknown() => {
            actor.info(id, op(None, None, None, None, None));
            None
        }
        Err(e) => {
            actor.errored(id, op(None, None, None, None, None), &e);
            actor.note(format!("rate-limit: {e}"));
            None
        }
    }
}

async fn client(
    actor: Actor,
    variant: Variant,
    bursts: Vec<Burst>,
    setup: Setup,
    flush_at: Option<Millis>,
) -> ActorResult {
    let limit = Limit::new(setup.max, Duration::from_millis(setup.window_ms))?;
    // One multiplexed connection per actor, shared by all its requests.
    let limiter = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
    limiter.report(&actor, setup)?;
    let prober = if actor.index() == 0 && matches!(variant, Variant::Log | Variant::Counter) {
        // Its own connection (and limiter), so its sequential pinned
        // requests never queue behind a burst.
        let own = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
        Some(actor.spawn(probe(actor.clone(), own, setup)))
    } else {
        None
    };
    let mass = if actor.index() == 0 && matches!(variant, Variant::Log | Variant::Counter) {
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

/// Mass expiry: `MASS_LIMIT` requests pinned at one seeded instant `t`, then
/// `MASS_SECOND` pinned at `t + W`, when the whole first burst leaves the
/// window at once. The log trims at most 64 entries per call, so the calls
/// of that millisecond must count the stale rest correctly and name new
/// entries around the ones already there; random timing never lines up
/// more than a handful of entries like this.
/// Then the same edge one request at a time ([`trim_then_back`]).
async fn mass_expiry(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
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
        actor.reached("trim-batch-edge");
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
        actor.reached("mass-expiry");
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
async fn second_edge(actor: Actor, variant: Variant, setup: Setup) -> ActorResult {
    // Requests on one connection arrive in order, so their executions
    // bunch up behind a slow one; four connections spread them out.
    let limit = Limit::new(setup.max, Duration::from_millis(setup.window_ms))?;
    let limiters: Vec<Arc<Limiter>> =
        (0..4).map(|_| Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()))).collect();
    crate::scenarios::validation::limits(&actor);
    let first_limiter = Arc::clone(&limiters[0]);
    crate::scenarios::validation::check_at(&actor, |now| {
        let l = Arc::clone(&first_limiter);
        async move { l.check("probe-now", Some(now)).await }
    })
    .await;
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
        actor.reached("server-clock-read-at-a-seconds-last-ms");
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
async fn skewed_clocks(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
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
        actor.reached("skewed-clocks-went-backwards");
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
async fn lowered_limit(actor: Actor, full: Arc<Limiter>, low: Arc<Limiter>, low_max: u64, base: Setup) {
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
        actor.reached("limit-lowered-for-a-key-in-use");
    }
}

/// `check_at` ahead of the server's clock: the key's expiry runs on the
/// server's clock, so when the pinned instants jump two windows ahead
/// within a few real milliseconds, the state of an idle window is still
/// there and the limiter itself must see that it is stale (the counter's
/// "skipped a bucket" branch). Timing alone never gets here: pinned
/// instants elsewhere follow the server's clock, and there the key has
/// expired by then.
async fn pinned_ahead(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
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
        actor.reached("pinned-ahead-skipped-a-bucket");
    }
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
const SCRIPT_FLUSHED: &str = "SCRIPT FLUSH done";

/// Sleeps until simulated `at` (if it is still ahead).
async fn until(actor: &Actor, at: Millis) {
    let now = actor.now();
    if at > now {
        tokio::time::sleep(Duration::from_millis(at - now)).await;
    }
}

/// The prober: `check_at` on keys of its own, aimed at the instants that
/// matter (module docs). Pinned instants are the simulated time of the
/// invoke, so they never run ahead of the server's clock nor go backwards.
async fn probe(actor: Actor, limiter: Arc<Limiter>, setup: Setup) {
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

/// The nemesis faults every rate-limit variant's seeds draw: up to two
/// faults of 50–600 ms inside 10–90 % of the run, a swarm subset per seed.
pub fn seed_faults() -> FaultSpace {
    let classes = [
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    FaultSpace { count: (0, 2), duration_ms: (50, 600), latency_ms: (5, 100), ..FaultSpace::new(&classes, 2) }
        .within(LENGTH_MS / 10, LENGTH_MS * 9 / 10)
        .swarm()
}

/// Runs an explicit plan of a rate-limit scenario.
pub fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    plan: &RateLimitPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let config = WorldConfig::new(seed);
    let epoch_ms = config.epoch_unix_ms;
    let setup = Setup { epoch_ms, max: plan.limit, window_ms: plan.window_ms };
    let correct = matches!(variant, Variant::Log | Variant::Counter);
    // One SCRIPT FLUSH at a seeded moment (correct limiters only: the naive
    // ones run no script), by the second client if there is one.
    let flush_at =
        correct.then(|| StdRng::seed_from_u64(derive_seed(seed, "rate-limit-flush")).random_range(200..=2800));
    let flusher = plan.clients.min(2) - 1;
    let mut world = World::new(servers, config)?;
    for i in 0..plan.clients {
        let mut bursts: Vec<Burst> = plan.bursts.iter().filter(|b| b.client == i).copied().collect();
        bursts.sort_by_key(|b| b.at);
        let flush = if i == flusher { flush_at } else { None };
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, bursts, setup, flush));
    }
    if correct {
        world.actor("clock-prober", move |actor| second_edge(actor, variant, setup));
    }
    let last_heal = schedule.faults.iter().map(|f| f.end()).max().unwrap_or(0);
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    let allowance = match variant {
        // The bound documented (and proved) in src/rate_limit/sliding_counter.rs,
        // `SlidingWindowCounter::worst_case_admissions`.
        Variant::Counter => Allowance::UpTo((2 * plan.limit).saturating_sub(1)),
        _ => Allowance::Exact,
    };
    // The windowed count judges the shared limited name. The prober's keys
    // are judged by `rate-limit-exact`, which also models what a pinned
    // instant cannot: the key's expiry runs on the server's own clock, so an
    // idle probe key may expire before its pinned window ends.
    let shared: Vec<Event> = outcome
        .history
        .iter()
        .filter(|e| !matches!(&e.op, Op::RateLimit { key, .. } if key.starts_with("probe-")))
        .cloned()
        .collect();
    let report = window::check(&shared, allowance);
    let mut h = Histograms::new();
    stats::record_admissions_per_window(&outcome.history, &mut h);
    stats::record_window_fill(&shared, &mut h);
    outcome.violations.extend(report.violations);
    if correct {
        let algorithm = match variant {
            Variant::Counter => exact::Algorithm::Counter { epoch_ms },
            _ => exact::Algorithm::Log,
        };
        let config = exact::Config { algorithm, last_heal_ms: last_heal, drain_ms: DRAIN_MS, epoch_ms };
        let exact = exact::check(&outcome.history, &run.executions[0], config);
        outcome.violations.extend(exact.violations);
        outcome.violations.extend(exact::check_accessors(&outcome.history));
        // An idle key goes once it can no longer count: the log's newest
        // entry leaves the window after W, the counter's bucket matters
        // until the end of the next one.
        let rule = match variant {
            Variant::Counter => Rule {
                prefix: "rate-counter:{",
                suffix: "}",
                life: Life::AtMost(2 * plan.window_ms),
                what: "limiter key",
            },
            _ => Rule { prefix: "rate-log:{", suffix: "}", life: Life::AtMost(plan.window_ms), what: "limiter key" },
        };
        outcome.violations.extend(key_lifetimes::check(0, &run.keys_at_end[0], &[rule], &[]));
        let settle = last_heal + DRAIN_MS;
        outcome.violations.extend(liveness::check(&outcome.history, settle));
        for s in reached(&outcome.history, setup, settle) {
            outcome.reach(s);
        }
    }
    outcome.histograms = h;
    Ok(outcome)
}

/// One decision as `reached` sees it: (invoke time, server time, admitted,
/// count, retry after).
type DecisionSeen = (Millis, Millis, bool, u64, Option<u64>);

/// The declared situations `history` reached (see [`LOG_SITUATIONS`] and
/// [`COUNTER_SITUATIONS`]), recognised from the finished history.
fn reached(history: &[Event], setup: Setup, settle: Millis) -> Vec<&'static str> {
    let w = setup.window_ms;
    let mut out = Vec::new();
    // Per key: (invoke time, server time, admitted, count, retry) of every
    // decision.
    let mut by_key: std::collections::BTreeMap<&str, Vec<DecisionSeen>> = std::collections::BTreeMap::new();
    let mut invoked = std::collections::BTreeMap::new();
    let mut flushed: Option<Millis> = None;
    let mut unknown = false;
    for e in history {
        match &e.op {
            Op::Note { text } if text == SCRIPT_FLUSHED => flushed = flushed.or(Some(e.time)),
            Op::RateLimit { key, admission, server_ms, count, .. } => match (e.kind, admission, server_ms, count) {
                (EventKind::Invoke, ..) => {
                    invoked.insert(e.op_id, e.time);
                }
                (EventKind::Ok, Some(a), Some(t), Some(c)) => {
                    let retry = match a {
                        Admission::Denied { retry_after_ms } => *retry_after_ms,
                        Admission::Admitted => None,
                    };
                    let inv = invoked.get(&e.op_id).copied().unwrap_or(e.time);
                    by_key.entry(key.as_str()).or_default().push((inv, *t, *a == Admission::Admitted, *c, retry));
                    if flushed.is_some_and(|f| inv > f) {
                        out.push("noscript-recovered");
                    }
                }
                _ => unknown = true,
            },
            _ => {}
        }
    }
    if unknown {
        out.push("request-outcome-unknown");
    }
    for ds in by_key.values() {
        let admissions: Vec<(Millis, u64)> = ds.iter().filter(|d| d.2).map(|d| (d.1, d.3)).collect();
        // Counter overshoot: more than max definite admissions in one window.
        let mut ts: Vec<Millis> = admissions.iter().map(|a| a.0).collect();
        ts.sort_unstable();
        let mut lo = 0;
        for hi in 0..ts.len() {
            while ts[hi] - ts[lo] >= w {
                lo += 1;
            }
            if (hi - lo + 1) as u64 > setup.max {
                out.push("counter-overshoot-above-max");
            }
        }
        if admissions.iter().any(|a| a.1 == setup.max) {
            out.push("limit-reached-exactly");
        }
        if ts.windows(2).any(|p| p[0] == p[1]) {
            out.push("same-ms-admissions");
        }
        for &(_, t, ..) in ds {
            for &(a, _) in &admissions {
                if t == a + w - 1 {
                    out.push("decided-on-window-last-ms");
                } else if t == a + w {
                    out.push("decided-at-window-edge");
                } else if t == a + w + 1 {
                    out.push("decided-past-window-edge");
                }
            }
        }
        for &(_, t, admitted, _, retry) in ds {
            let (false, Some(r)) = (admitted, retry) else { continue };
            for &(inv, u, ok, ..) in ds {
                if u == t + r && ok {
                    out.push("denied-then-admitted-at-retry-after");
                    if inv >= settle {
                        out.push("retry-after-honoured-after-healing");
                    }
                } else if r > 1 && u == t + r - 1 && !ok {
                    out.push("denied-at-retry-after-minus-1");
                }
            }
        }
        // Bucket boundaries of unix time, in simulated ms.
        for &(_, t, admitted, ..) in ds {
            let abs = (setup.epoch_ms + t) / w * w;
            if abs <= setup.epoch_ms {
                continue;
            }
            let b = abs - setup.epoch_ms;
            if admitted || t - b > 150 {
                continue;
            }
            if ds.iter().any(|d| d.1 < b && d.1 + 150 >= b) {
                out.push("burst-straddles-boundary");
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl Family for Variant {
    type Plan = RateLimitPlan;
    type Space = RateLimitSpace;
    const NAME: &'static str = "rate-limit";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (RateLimitSpace, FaultSpace) {
        (RateLimitSpace::seeds(), seed_faults())
    }

    fn bounds(&self) -> Vec<Bound> {
        // The configured limit, for every variant, also the counter, which
        // documents (and is checked against) a higher worst case: the plot
        // shows how far past its limit each variant goes. On the fill, not
        // the raw count: the correct variants' probes use other limits.
        vec![Bound { histogram: WINDOW_FILL, value: 100, label: "the limit (100 %)".to_string() }]
    }

    fn plans(space: &RateLimitSpace) -> BoxedStrategy<(RateLimitPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &RateLimitSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &RateLimitPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &RateLimitPlan) -> u32 {
        plan.clients
    }

    fn validate(plan: &RateLimitPlan) -> Result<(), String> {
        if plan.limit == 0 || plan.window_ms == 0 {
            return Err("limit and window_ms must be positive".into());
        }
        if let Some(b) = plan.bursts.iter().find(|b| b.client >= plan.clients) {
            return Err(format!("burst {b:?}: no such client"));
        }
        Ok(())
    }

    fn normalize(plan: &mut RateLimitPlan, actors: u32) {
        for b in &mut plan.bursts {
            b.client %= actors.max(1);
        }
        plan.bursts.sort_by_key(|b| (b.at, b.client));
    }

    fn smaller(plan: &RateLimitPlan) -> Vec<RateLimitPlan> {
        if plan.clients <= 1 {
            return Vec::new();
        }
        vec![RateLimitPlan { clients: plan.clients - 1, ..plan.clone() }]
    }
}

impl core::fmt::Display for RateLimitPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} client(s), limit {} per {}ms, ", self.clients, self.limit, self.window_ms)?;
        if self.bursts.is_empty() {
            return write!(f, "no requests");
        }
        write!(f, "{} burst(s):", self.bursts.len())?;
        for b in &self.bursts {
            write!(f, " {}@{}ms by client#{}", b.size, b.at, b.client)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_bursts_straddle_every_boundary() {
        for seed in 0..20 {
            let plan = crate::scenarios::find("rate-limit").unwrap().space().draw(seed).unwrap();
            let p = plan.workload.plan::<Variant>().unwrap();
            for boundary in [1000u64, 2000] {
                assert!(p.bursts.iter().any(|b| b.at < boundary && b.at + 150 >= boundary), "{p}");
                assert!(p.bursts.iter().any(|b| b.at >= boundary && b.at <= boundary + 150), "{p}");
            }
            assert_eq!(p.bursts.len(), 2 * 2 + 3, "{p}");
        }
    }
}
