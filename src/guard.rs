//! Lease-loss signal: auto-extension that stops the body in time.
//!
//! A lease can be lost in three ways while its holder works: an extension is
//! **refused** (the key expired or was taken), an extension **errors** (the
//! server or the link is gone), or no extension is confirmed before the
//! lease's **local deadline** (the holder was paused, the link is slow). In
//! each case the holder must stop acting before another client can acquire.
//!
//! [`Lock::with_lock_guarded`] cancels the body **by dropping its future**
//! the moment any of the three happens. We chose dropping over a cooperative
//! `CancellationToken` because a body cannot forget to check a dropped
//! future: at its next `.await` it simply never resumes. The price is the
//! usual async-cancellation caveat: a body must not hold state across an
//! `.await` that would be corrupt if abandoned there. Side effects the body
//! already handed to another system (a write in flight) are *not* recalled,
//! which is why writes still carry the fencing token.
//!
//! The deadline is checked first (`biased`), so when a resumed process finds
//! its deadline overdue and a stale "extended" reply waiting at the same
//! time, the deadline wins: a success that arrives after the deadline proves
//! nothing, because the lease may have expired in between.
//!
//! [`Lock::keep_alive`] is the extension loop on its own: a future the caller
//! drives (the library spawns nothing), which the harness can freeze.
//!
//! # The release afterwards is bounded
//!
//! Once the body has finished or been dropped, the lease is handed back with
//! a compare-and-delete that is awaited for **at most one extend interval**
//! ([`KeepAlive::every`]). A frozen server or a dead link therefore cannot
//! hold the caller (and the body's output) hostage: the call returns at most
//! one interval after the body stopped, whatever the connection's response
//! timeout. The interval is the policy's own measure of how long a request
//! may go unanswered before the next one is due; a release still unanswered
//! then is reported as [`Release::Unknown`] (after a completed body) and
//! may still run later — it was sent, and on a multiplexed connection it
//! runs after any extension sent before it, so a late extension cannot
//! outlive it. If it never runs, the lease expires after its TTL.

use std::future::Future;

use core::time::Duration;
use tokio::time::{sleep_until, Instant};

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::instant::after;
use crate::lease::Lease;
use crate::lock::Lock;
use crate::release::Release;
use crate::token::FencingToken;
use crate::ttl::Ttl;

/// How often a guarded lease is extended; validated against the TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    ttl: Ttl,
    every: Duration,
}

impl KeepAlive {
    /// Extend to `ttl` every `every`. `every` must be non-zero and shorter
    /// than `ttl` minus the lock's drift allowance, or the lease would reach
    /// its local deadline between two extensions.
    pub fn new<C: Connection>(lock: &Lock<C>, ttl: Ttl, every: Duration) -> Result<KeepAlive> {
        let usable = lock.drift().usable(ttl);
        if every.is_zero() {
            return Err(Error::invalid("extend interval", "must be greater than zero"));
        }
        if every >= usable {
            return Err(Error::invalid(
                "extend interval",
                format!("{every:?} is not shorter than the usable lease time {usable:?} (ttl {ttl} minus drift)"),
            ));
        }
        Ok(KeepAlive { ttl, every })
    }

    /// Extend every third of the TTL (the usual choice).
    pub fn thirds<C: Connection>(lock: &Lock<C>, ttl: Ttl) -> Result<KeepAlive> {
        KeepAlive::new(lock, ttl, ttl.as_duration() / 3)
    }

    /// The TTL each extension sets.
    pub fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// The interval between extensions, and the longest
    /// [`Lock::with_lock_guarded`] waits for its final release.
    pub fn every(&self) -> Duration {
        self.every
    }
}

/// Why a guarded lease stopped being trustworthy.
#[derive(Debug)]
pub enum LeaseLoss {
    /// An extension found the key gone or someone else's.
    Refused,
    /// An extension failed with a fault (its outcome may be unknown).
    Failed(Error),
    /// No extension was confirmed before the local deadline.
    DeadlineReached,
}

/// What [`Lock::with_lock_guarded`] did.
#[derive(Debug)]
pub enum GuardedOutcome<T> {
    /// The lock was taken by someone else; the body did not run.
    NotAcquired,
    /// The body finished while the lease was trusted.
    Completed {
        /// What the body returned.
        output: T,
        /// The lease's fencing token.
        token: FencingToken,
        /// What the release did; [`Release::Unknown`] when it failed or was
        /// not answered within one extend interval (see the module docs).
        release: Release,
    },
    /// The lease stopped being trustworthy and the body was dropped.
    Cancelled {
        /// The lease's fencing token.
        token: FencingToken,
        /// Why.
        reason: LeaseLoss,
        /// When the body was dropped (monotonic clock).
        at: Instant,
    },
}

impl<C: Connection> Lock<C> {
    /// Keeps `lease` alive until it is lost; returns only with the reason.
    /// `lease` is updated after each confirmed extension.
    pub async fn keep_alive(&self, lease: &mut Lease, policy: KeepAlive) -> LeaseLoss {
        loop {
            let next = after(lease.sent_at, policy.every).min(lease.deadline);
            sleep_until(next).await;
            if Instant::now() >= lease.deadline {
                return LeaseLoss::DeadlineReached;
            }
            let mut candidate = lease.clone();
            let deadline = lease.deadline;
            tokio::select! {
                biased;
                _ = sleep_until(deadline) => return LeaseLoss::DeadlineReached,
                r = self.extend(&mut candidate, policy.ttl) => match r {
                    // A confirmation is only as good as the deadline it
                    // arrives before: the reply may have been delayed.
                    Ok(true) if Instant::now() < deadline => *lease = candidate,
                    Ok(true) => return LeaseLoss::DeadlineReached,
                    Ok(false) => return LeaseLoss::Refused,
                    Err(e) => return LeaseLoss::Failed(e),
                },
            }
        }
    }

    /// Acquires `name`, runs `body` while extending the lease per `policy`,
    /// and drops the body as soon as the lease can no longer be trusted (see
    /// the module docs). Releases afterwards in every case, waiting at most
    /// `policy.every()` for the release's answer.
    ///
    /// `Err` only comes from the acquire (the body did not run). A body that
    /// completed always has its output returned, beside the release's fate.
    pub async fn with_lock_guarded<T, F, Fut>(
        &self,
        name: &str,
        policy: KeepAlive,
        body: F,
    ) -> Result<GuardedOutcome<T>>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = T>,
    {
        let Some(lease) = self.acquire(name, policy.ttl).await? else {
            return Ok(GuardedOutcome::NotAcquired);
        };
        let token = lease.token;
        let mut kept = lease.clone();
        // The body lives in this block only: a cancelled body is dropped
        // (its destructors run: a buffered writer flushes, a transaction
        // rolls back) at `at`, before the release below hands the name to
        // someone else, not when this function returns.
        let outcome = {
            let body = body(lease);
            tokio::pin!(body);
            tokio::select! {
                biased;
                reason = self.keep_alive(&mut kept, policy) => Err((reason, Instant::now())),
                output = &mut body => Ok(output),
            }
        };
        match outcome {
            Ok(output) => {
                let release = self.release_within(&kept, policy.every).await;
                Ok(GuardedOutcome::Completed { output, token, release })
            }
            Err((reason, at)) => {
                // Best effort: if the lease is still ours, hand it back now
                // rather than at expiry. A failure here changes nothing the
                // caller can act on; the lease expires by itself.
                let _ = self.release_within(&kept, policy.every).await;
                Ok(GuardedOutcome::Cancelled { token, reason, at })
            }
        }
    }

    /// Releases `lease`, waiting at most `wait` for the answer. The request
    /// is sent on the first poll, so a release abandoned here may still run.
    async fn release_within(&self, lease: &Lease, wait: Duration) -> Release {
        match tokio::time::timeout(wait, self.release(lease)).await {
            Ok(reply) => Release::from_reply(reply),
            Err(_elapsed) => Release::Unknown(Error::OutcomeUnknown {
                source: redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("release not answered within {wait:?} (one extend interval); it may still run"),
                )),
            }),
        }
    }
}
