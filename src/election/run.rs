//! The campaign/renew loop: the one future an election node needs driven.
//!
//! Timers are `sleep_until` an instant computed from the last *send*, not an
//! `Interval`: after a pause the loop finds at most one tick overdue and
//! acts once, instead of firing a burst of queued ticks. Every `select!` is
//! `biased;` so that, when several branches are ready at once (as they are
//! after a resume), the order is the code's, not a coin flip's:
//!
//! - the local deadline comes first: a resumed node whose deadline passed
//!   while it was frozen is demoted before it can do anything else;
//! - then `stop()`;
//! - then the renew or campaign timer.
//!
//! Requests already sent are awaited, not abandoned, except a renewal
//! overtaken by the deadline (self-fencing must not wait for the network).
//! An abandoned renewal may still run on the server, so the demoted node
//! sends a compare-and-delete after it: on one connection Redis runs them
//! in order, so a late extension cannot keep the lease alive behind the
//! node's back.

use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::connection::Connection;
use crate::election::config::Demotion;
use crate::election::state::DemotionReason;
use crate::election::{Election, Shared};
use crate::error::{Error, Result};
// `at + d` that cannot panic: a huge interval is valid input.
use crate::instant::after as later;
use crate::lease::Lease;

/// How a term ended, from the loop's point of view.
enum TermEnd {
    /// Demoted for a reason other than `stop()`: campaign again.
    Demoted,
    /// `stop()`: the loop ends with the result of the hand-back.
    Stopped(Result<()>),
}

/// Which timer or signal woke a leader.
enum Wake {
    Deadline,
    Stop,
    Renew,
}

/// What one renewal came to.
enum Renewal {
    Confirmed(Lease),
    Lost(DemotionReason),
}

impl<C: Connection> Election<C> {
    /// Campaigns while following and renews while leading, until `stop()`.
    ///
    /// Returns `Ok(())` once stopped with the lease handed back (or not
    /// held). Returns `Err` if the hand-back at stop failed (the lease then
    /// expires by itself after its TTL), or, at once, if another `run()` of
    /// this node is already active. Campaign faults (timeouts, a lost
    /// connection, a Redis error) are not errors: the node simply tries
    /// again at the next campaign interval; so is a campaign too few
    /// replicas confirmed ([`Error::NotAcknowledged`], with
    /// [`crate::election::ElectionBuilder::acknowledged`]), whose lease was
    /// handed back: it is not a win. A campaign that finds the
    /// election's keys unusable — [`Error::WrongType`] (a hash at
    /// `election:{name}`) or [`Error::CorruptState`] (a fence counter that
    /// is not a positive integer) — ends `run()` with that error: no later
    /// campaign could succeed until the key is repaired, and a node that
    /// silently never leads hides the problem.
    ///
    /// Dropping the future while leading demotes the node with
    /// [`DemotionReason::Dropped`]; the lease is not released (a drop cannot
    /// send anything) and expires after its TTL.
    pub async fn run(&self) -> Result<()> {
        let _running = Running::claim(&self.shared)?;
        let mut stop = self.shared.stop.subscribe();
        let campaign_every = self.shared.timing.campaign_interval;
        let mut next_campaign = Instant::now();
        loop {
            tokio::select! {
                biased;
                _ = stop_requested(&mut stop) => break,
                _ = sleep_until(next_campaign) => {}
            }
            let sent_at = Instant::now();
            next_campaign = later(sent_at, campaign_every);
            let lease = match self.shared.lock.acquire(&self.shared.name, self.shared.timing.lease_ttl).await {
                Ok(Some(lease)) => lease,
                // The key space is broken, not busy: retrying cannot help.
                Err(e @ (Error::WrongType { .. } | Error::CorruptState { .. })) => return Err(e),
                // Someone else leads, or the attempt failed: a follower has
                // nothing to lose, so it just tries again next time.
                Ok(None) | Err(_) => continue,
            };
            if *stop.borrow() {
                // stop() came while the acquire was in flight: hand the lease
                // straight back rather than lead for an instant.
                return self.shared.lock.release(&lease).await.map(|_| ());
            }
            if self.shared.timing.demotion == Demotion::AtDeadline && !lease.is_trusted() {
                // The reply came back after the lease's own deadline (the
                // node was paused while it was in flight): never lead on it,
                // and hand it back so nobody waits out its TTL.
                let _ = self.shared.lock.release(&lease).await;
                continue;
            }
            self.shared.elect(&lease);
            match self.lead(lease, &mut stop).await {
                TermEnd::Demoted => next_campaign = later(Instant::now(), campaign_every),
                TermEnd::Stopped(result) => return result,
            }
        }
        Ok(())
    }

    /// Renews until the term ends.
    async fn lead(&self, mut lease: Lease, stop: &mut watch::Receiver<bool>) -> TermEnd {
        let shared = &*self.shared;
        let fenced = shared.timing.demotion == Demotion::AtDeadline;
        loop {
            let deadline = lease.local_deadline();
            let next_renewal = later(lease.sent_at(), shared.timing.renew_interval);
            let wake = tokio::select! {
                biased;
                _ = sleep_until(deadline), if fenced => Wake::Deadline,
                _ = stop_requested(stop) => Wake::Stop,
                _ = sleep_until(next_renewal) => Wake::Renew,
            };
            match wake {
                Wake::Deadline => return self.step_down(&lease, DemotionReason::DeadlineReached).await,
                Wake::Stop => {
                    // Stop believing first, then delete: no instant exists
                    // where the key is gone and this node still says leader.
                    shared.demote(DemotionReason::Stopped);
                    let released = shared.lock.release(&lease).await;
                    return TermEnd::Stopped(released.map(|_| ()));
                }
                Wake::Renew => {}
            }
            match self.renew(&lease, fenced).await {
                Renewal::Confirmed(renewed) => {
                    lease = renewed;
                    shared.record(&lease);
                }
                Renewal::Lost(reason) => return self.step_down(&lease, reason).await,
            }
        }
    }

    /// One compare-and-extend. In self-fencing mode it races the deadline and
    /// refuses a confirmation that arrives after it.
    async fn renew(&self, lease: &Lease, fenced: bool) -> Renewal {
        let shared = &*self.shared;
        let ttl = shared.timing.lease_ttl;
        let deadline = lease.local_deadline();
        let mut candidate = lease.clone();
        let result = if fenced {
            tokio::select! {
                biased;
                _ = sleep_until(deadline) => return Renewal::Lost(DemotionReason::DeadlineReached),
                r = shared.lock.extend(&mut candidate, ttl) => r,
            }
        } else {
            shared.lock.extend(&mut candidate, ttl).await
        };
        match result {
            // A success is only as good as the deadline it arrives before:
            // the reply may have sat in a buffer while the node was frozen.
            Ok(true) if fenced && Instant::now() >= deadline => Renewal::Lost(DemotionReason::DeadlineReached),
            Ok(true) => Renewal::Confirmed(candidate),
            Ok(false) => Renewal::Lost(DemotionReason::LeaseLost),
            Err(e) => Renewal::Lost(DemotionReason::RedisError(e.into())),
        }
    }

    /// Demotes at once, then tries to hand the lease back.
    async fn step_down(&self, lease: &Lease, reason: DemotionReason) -> TermEnd {
        // `LeaseLost` means the key is gone or someone else's: nothing to hand
        // back. Otherwise the lease may still be ours (an error's outcome is
        // unknown; an abandoned renewal may land later), and releasing it lets
        // the next leader in now rather than after a TTL.
        let hand_back = !matches!(reason, DemotionReason::LeaseLost);
        self.shared.demote(reason);
        if hand_back {
            let _ = self.shared.lock.release(lease).await;
        }
        TermEnd::Demoted
    }
}

/// Resolves once `stop()` has been called (at once if it already was).
async fn stop_requested(stop: &mut watch::Receiver<bool>) {
    // The sender lives in the node's shared state, which outlives every
    // receiver the loop holds, so this cannot fail; the guard it returns is
    // dropped here rather than held across the caller's next await.
    let _ = stop.wait_for(|s| *s).await;
}

/// Marks a `run()` as active for as long as it lives.
struct Running<'a, C> {
    shared: &'a Shared<C>,
}

impl<'a, C> Running<'a, C> {
    fn claim(shared: &'a Shared<C>) -> Result<Running<'a, C>> {
        let claimed = shared.running.send_if_modified(|r| !std::mem::replace(r, true));
        if claimed {
            Ok(Running { shared })
        } else {
            Err(Error::invalid("run", "this election node is already being run; drive one run() at a time"))
        }
    }
}

impl<C> Drop for Running<'_, C> {
    fn drop(&mut self) {
        // Still leading here means the future was dropped mid-term (a clean
        // stop demotes before returning).
        self.shared.demote(DemotionReason::Dropped);
        if *self.shared.stop.borrow() {
            self.shared.mark_stopped();
        }
        self.shared.running.send_replace(false);
    }
}
