//! The rate-limiter family's scenarios: its rows of the registry, correct
//! variants first where they pair with a broken one. `rp-sim scenarios`
//! lists them in this order; `super::ENTRY` hands them to the registry.

use super::api::{COUNTER_CHECK, COUNTER_CHECK_AT, LOG_CHECK, LOG_CHECK_AT};
use super::invariants;
use crate::path::Path;
use crate::scenario::{Expect, Scenario};

/// `rate-limit`.
pub(crate) const RATE_LIMIT: Scenario = Scenario {
    name: "rate-limit",
    description: "SlidingWindowLog: concurrent bursts across window boundaries with latency and partitions; never more than the limit",
    expect: Expect::Clean,
    situations: super::LOG_SITUATIONS,
    operations: &[LOG_CHECK, LOG_CHECK_AT],
    paths: &[(LOG_CHECK, Path::Ok), (LOG_CHECK_AT, Path::Ok)],
    scripts: &["sliding_log"],
    invariants: &[],
    runs: &super::RateLimitVariant::Log,
    pinned_seeds: &[],
};

/// `rate-limit-counter`.
pub(crate) const RATE_LIMIT_COUNTER: Scenario = Scenario {
    name: "rate-limit-counter",
    description:
        "SlidingWindowCounter: the same bursts; the overshoot is measured and held to its documented bound 2*max-1",
    expect: Expect::Clean,
    situations: super::COUNTER_SITUATIONS,
    operations: &[COUNTER_CHECK, COUNTER_CHECK_AT],
    paths: &[(COUNTER_CHECK, Path::Ok), (COUNTER_CHECK_AT, Path::Ok)],
    scripts: &["sliding_counter"],
    invariants: &[],
    runs: &super::RateLimitVariant::Counter,
    pinned_seeds: &[],
};

/// `rate-limit-fixed-window`.
pub(crate) const RATE_LIMIT_FIXED_WINDOW: Scenario = Scenario {
    name: "rate-limit-fixed-window",
    description: "NaiveFixedWindow (INCR+EXPIRE): a burst at a boundary admits twice the limit inside one window",
    expect: Expect::Violates(&invariants::RATE_LIMIT),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::RateLimitVariant::FixedWindow,
    pinned_seeds: &[1, 2, 3],
};

/// `rate-limit-client-side`.
pub(crate) const RATE_LIMIT_CLIENT_SIDE: Scenario = Scenario {
    name: "rate-limit-client-side",
    description:
        "ClientSideWindow (ZREMRANGEBYSCORE, ZCARD, ZADD as separate round trips): concurrent callers overshoot",
    expect: Expect::Violates(&invariants::RATE_LIMIT),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::RateLimitVariant::ClientSide,
    pinned_seeds: &[1, 2, 3],
};

/// `rate-limit-watch-multi`.
pub(crate) const RATE_LIMIT_WATCH_MULTI: Scenario = Scenario {
    name: "rate-limit-watch-multi",
    description: "WatchMultiLimiter on one shared multiplexed connection: EXEC clears every watch, so concurrent callers all pass",
    expect: Expect::Violates(&invariants::RATE_LIMIT),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::RateLimitVariant::WatchMulti,
    pinned_seeds: &[1, 2, 3],
};

/// Every scenario of the family, in listing order.
pub(crate) const SCENARIOS: &[Scenario] =
    &[RATE_LIMIT, RATE_LIMIT_COUNTER, RATE_LIMIT_FIXED_WINDOW, RATE_LIMIT_CLIENT_SIDE, RATE_LIMIT_WATCH_MULTI];
