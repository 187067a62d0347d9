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

mod actors;
pub(crate) mod api;
pub(crate) mod checks;
mod family;
pub(crate) mod invariants;
mod limiter;
mod metrics;
mod op;
mod plan;
mod planted;
mod planted_state;
mod probes;
pub(crate) mod scenarios;
mod situations;
pub(crate) mod targets;

pub(crate) use op::RateLimitOp;
pub(crate) use plan::RateLimitSpace;
pub(crate) use situations::{COUNTER_SITUATIONS, LOG_SITUATIONS};

/// What the rate limiters add to `rp-sim report`: what their histograms
/// measure (no section of their own).
pub(crate) const REPORT_PART: crate::family::ReportPart =
    crate::family::ReportPart { invariants: invariants::INVARIANTS, histograms: metrics::METRICS, section: None };

/// Sleeps until simulated `at` (if it is still ahead): how the actors and
/// the probes wait for their moments.
async fn until(actor: &crate::world::Actor, at: crate::history::Millis) {
    let now = actor.now();
    if at > now {
        tokio::time::sleep(core::time::Duration::from_millis(at - now)).await;
    }
}

/// The limited name.
pub(crate) const NAME: &str = "api";
/// Requests per window.
pub(crate) const MAX: u64 = 5;
/// Window length (ms).
pub(crate) const WINDOW_MS: u64 = 1000;
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

/// Which limiter is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateLimitVariant {
    /// [`SlidingWindowLog`](redis_primitives::rate_limit::SlidingWindowLog): exact.
    Log,
    /// [`SlidingWindowCounter`](redis_primitives::rate_limit::SlidingWindowCounter): approximate, bounded by `2 × max − 1`.
    Counter,
    /// [`NaiveFixedWindow`](redis_primitives_naive::NaiveFixedWindow): `INCR` + `EXPIRE`.
    FixedWindow,
    /// [`ClientSideWindow`](redis_primitives_naive::ClientSideWindow): trim, count and add in three round trips.
    ClientSide,
    /// [`WatchMultiLimiter`](redis_primitives_naive::WatchMultiLimiter) on the actor's shared connection.
    WatchMulti,
}

/// The family's entry in the registry (`crate::families::REGISTRY`).
pub(crate) const ENTRY: crate::entry::FamilyEntry = crate::entry::FamilyEntry {
    scenarios: scenarios::SCENARIOS,
    report: REPORT_PART,
    targets: targets::TARGETS,
    properties: targets::PROPERTIES,
};
