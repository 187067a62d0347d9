//! The limiter under test, whichever variant it is, behind one interface,
//! and one request through it recorded with its whole decision: every actor
//! of the family sends its requests this way.

use std::sync::Arc;

use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{OwnerSource, Ttl};
use redis_primitives_naive::{ClientSideWindow, NaiveFixedWindow, WatchMultiLimiter};

use super::op::{Admission, DecisionAccessors, RateLimitOp};
use super::{RateLimitVariant, NAME};
use crate::families::rate_limit::api::{
    CLIENT_SIDE_CHECK, CLIENT_SIDE_CHECK_AT, COUNTER_CHECK, COUNTER_CHECK_AT, FIXED_WINDOW_CHECK,
    FIXED_WINDOW_CHECK_AT, LOG_CHECK, LOG_CHECK_AT, WATCH_MULTI_CHECK,
};
use crate::history::{Api, Millis};
use crate::net::SimConnection;
use crate::world::Actor;

pub(super) enum Limiter {
    Log(SlidingWindowLog<SimConnection>),
    Counter(SlidingWindowCounter<SimConnection>),
    Fixed(NaiveFixedWindow<SimConnection>),
    ClientSide(ClientSideWindow<SimConnection>),
    WatchMulti(WatchMultiLimiter<SimConnection>),
}

impl Limiter {
    pub(super) fn new(variant: RateLimitVariant, conn: SimConnection, limit: Limit, seed: u64) -> Limiter {
        match variant {
            RateLimitVariant::Log => Limiter::Log(SlidingWindowLog::new(conn, limit)),
            RateLimitVariant::Counter => Limiter::Counter(SlidingWindowCounter::new(conn, limit)),
            RateLimitVariant::FixedWindow => Limiter::Fixed(NaiveFixedWindow::new(conn, limit)),
            RateLimitVariant::ClientSide => {
                Limiter::ClientSide(ClientSideWindow::new(conn, limit).members(OwnerSource::seeded(seed)))
            }
            // A bounded number of retries: on a connection of its own a loser
            // goes round again, and the simulation must end.
            RateLimitVariant::WatchMulti => Limiter::WatchMulti(
                WatchMultiLimiter::new(conn, limit).members(OwnerSource::seeded(seed)).max_retries(50),
            ),
        }
    }

    /// Decides one request for `name`, at the server's time or at the
    /// pinned unix-ms instant `at`.
    pub(super) async fn check(&self, name: &str, at: Option<u64>) -> redis_primitives::Result<Decision> {
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

    /// The key a correct limiter keeps `name`'s state in; `None` for the
    /// naive ones.
    pub(super) fn key(&self, name: &str) -> redis_primitives::Result<Option<String>> {
        match self {
            Limiter::Log(l) => l.key(name).map(Some),
            Limiter::Counter(l) => l.key(name).map(Some),
            _ => Ok(None),
        }
    }

    /// Records what a correct limiter reports of its configuration
    /// (judged by `configuration`).
    pub(super) fn report(&self, actor: &Actor, setup: Setup) -> redis_primitives::Result<()> {
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
    pub(super) fn api(&self, pinned: bool) -> Api {
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

/// The fixed parts of every request of a run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Setup {
    pub(super) epoch_ms: u64,
    pub(super) max: u64,
    pub(super) window_ms: u64,
}

/// One request on `key`, at the server's time or pinned at simulated `pinned`
/// ms; recorded with the whole decision. `None` if its outcome is unknown.
pub(super) async fn one_request(
    actor: Actor,
    limiter: Arc<Limiter>,
    setup: Setup,
    key: String,
    pinned: Option<Millis>,
) -> Option<Decision> {
    let op = |admission, server_ms, count, remaining, accessors| RateLimitOp::RateLimit {
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
