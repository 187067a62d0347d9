//! Process pauses for client actors: a GC pause, a suspended VM, `SIGSTOP`.
//!
//! turmoil can crash and restart a host but cannot freeze one. A frozen
//! process is the fault that breaks leases in practice (the holder resumes
//! believing it still holds), so the harness builds it: every future an
//! actor runs — its main future, every task it spawns, and the redis-rs
//! connection **driver** — is wrapped in [`Pausable`], which shares one
//! [`PauseHandle`] per actor. While the handle is paused, `poll` returns
//! `Pending` without polling the inner future: nothing the actor owns makes
//! progress, and nothing reads the replies piling up in its sockets. Timers
//! become overdue and fire on resume, as after `SIGCONT`.
//!
//! What design §4 found it takes, and how this file does it:
//!
//! - **the driver too**: [`PauseHandle::spawn_local`] is the only way the
//!   harness spawns anything for an actor (`net.rs` spawns the connection
//!   driver through it), so a paused actor does not keep reading replies;
//! - **hold the timer, reset it, poll it with the current waker**: each
//!   `Pausable` owns one `Sleep` for the end of a timed pause, created once
//!   and `reset` when the deadline changes, polled with the `Context` of the
//!   current poll (a waker captured earlier may belong to an old task
//!   wake-up); spurious wake-ups simply re-check the state;
//! - **explicit resume**: wakers of paused futures are kept, and
//!   [`PauseHandle::resume`] wakes them all, so an untimed pause
//!   ([`PauseHandle::pause`]) ends when the nemesis says so;
//! - the **reply-versus-timeout** order after a resume is not decided here
//!   but by `net::TimeoutRace`, explicitly.
//!
//! Pause deadlines are in **simulated time since the start of the
//! simulation** (`turmoil::sim_elapsed`), not in `tokio::time::Instant`s:
//! each turmoil host has its own runtime and its own `Instant` base, so an
//! `Instant` taken on one host (or in the driver loop) means nothing on
//! another. In a live run (`crate::live`) the same code measures from the
//! run's start.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};

use core::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

/// Time since the start of the simulation, or of the live run on this
/// thread (`crate::live`), or else of the process.
pub(crate) fn sim_now() -> Duration {
    if let Some(d) = turmoil::sim_elapsed() {
        return d;
    }
    // The live tier only: the simulation never reaches this branch.
    if let Some(d) = crate::live::elapsed() {
        return d;
    }
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Paused until [`PauseHandle::resume`].
    Resumed,
    /// Paused until this simulated time (or an earlier `resume`).
    At(Duration),
}

#[derive(Debug, Default)]
struct PauseState {
    until: Option<Until>,
    wakers: Vec<Waker>,
    pauses: u64,
}

/// The freeze switch shared by every future of one actor. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct PauseHandle {
    state: Arc<Mutex<PauseState>>,
}

/// What a poll should do.
enum Gate {
    Open,
    Closed,
    ClosedFor(Duration),
}

impl PauseHandle {
    /// A handle that is not paused.
    pub fn new() -> PauseHandle {
        PauseHandle::default()
    }

    fn lock(&self) -> MutexGuard<'_, PauseState> {
        // Turmoil runs every host on one thread; a poisoned lock only means
        // a panic elsewhere, and the state is still a valid pair of fields.
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Freezes the actor until [`PauseHandle::resume`].
    pub fn pause(&self) {
        let mut s = self.lock();
        s.until = Some(Until::Resumed);
        s.pauses += 1;
    }

    /// Freezes the actor until simulated time `at` (since the start).
    pub fn pause_until(&self, at: Duration) {
        let mut s = self.lock();
        s.until = Some(Until::At(at));
        s.pauses += 1;
    }

    /// Freezes the actor for `d` from now. Called from inside the actor
    /// itself, it takes effect at its next `.await` (the scenario's way of
    /// saying "the holder stalls right here").
    pub fn pause_for(&self, d: Duration) {
        self.pause_until(sim_now() + d);
    }

    /// Ends any pause now and wakes every future that noticed it.
    pub fn resume(&self) {
        let wakers = {
            let mut s = self.lock();
            s.until = None;
            std::mem::take(&mut s.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }

    /// Whether the actor is frozen at this moment.
    pub fn is_paused(&self) -> bool {
        !matches!(self.gate(), Gate::Open)
    }

    /// How many pauses have started on this handle.
    pub fn pauses(&self) -> u64 {
        self.lock().pauses
    }

    fn gate(&self) -> Gate {
        match self.lock().until {
            None => Gate::Open,
            Some(Until::Resumed) => Gate::Closed,
            Some(Until::At(t)) => {
                let now = sim_now();
                if now >= t {
                    Gate::Open
                } else {
                    Gate::ClosedFor(t - now)
                }
            }
        }
    }

    fn remember(&self, waker: &Waker) {
        let mut s = self.lock();
        if !s.wakers.iter().any(|w| w.will_wake(waker)) {
            s.wakers.push(waker.clone());
        }
    }

    /// Wraps `fut` so that it freezes with this handle.
    pub fn wrap<F: Future>(&self, fut: F) -> Pausable<F> {
        Pausable { inner: Box::pin(fut), handle: self.clone(), sleep: None }
    }

    /// `tokio::task::spawn_local` of `fut` wrapped in this handle: the only
    /// way to start a task on behalf of a pausable actor.
    pub fn spawn_local<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        tokio::task::spawn_local(self.wrap(fut))
    }
}

/// A future that makes no progress while its [`PauseHandle`] is paused.
pub struct Pausable<F> {
    inner: Pin<Box<F>>,
    handle: PauseHandle,
    /// The end-of-pause timer: created on the first timed pause and reset,
    /// never recreated, afterwards.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<F> core::fmt::Debug for Pausable<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pausable").field("handle", &self.handle).finish_non_exhaustive()
    }
}

impl<F: Future> Future for Pausable<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match this.handle.gate() {
            Gate::Open => {}
            Gate::Closed => {
                this.handle.remember(cx.waker());
                return Poll::Pending;
            }
            Gate::ClosedFor(left) => {
                this.handle.remember(cx.waker());
                let deadline = Instant::now() + left;
                let sleep = match &mut this.sleep {
                    Some(s) => {
                        if s.deadline() != deadline {
                            s.as_mut().reset(deadline);
                        }
                        s
                    }
                    slot @ None => slot.insert(Box::pin(tokio::time::sleep_until(deadline))),
                };
                // The timer firing is authoritative: it ends the pause for
                // this future even if the simulated clock rounds a hair short.
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        }
        this.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn ms() -> u64 {
        sim_now().as_millis() as u64
    }

    /// A frozen actor does nothing at all (its spawned tasks included), its
    /// overdue timers fire on resume, and interval ticks missed during the
    /// pause are not replayed in a burst when the interval says `Skip`.
    #[test]
    fn a_pause_freezes_every_future_of_the_actor_until_it_ends() {
        let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(10)).build();
        let ticks = Arc::new(Mutex::new(Vec::<u64>::new()));
        let woke = Arc::new(AtomicU64::new(0));
        let pause = PauseHandle::new();
        let (t, w, p) = (ticks.clone(), woke.clone(), pause.clone());
        sim.client(
            "actor",
            pause.wrap(async move {
                let t2 = t.clone();
                let ticker = p.spawn_local(async move {
                    let mut every = tokio::time::interval(Duration::from_millis(10));
                    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                    while ms() < 1500 {
                        every.tick().await;
                        t2.lock().unwrap().push(ms());
                    }
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
                // Stall here for 1000 ms: the next await does not come back before 1100.
                p.pause_for(Duration::from_millis(1000));
                tokio::time::sleep(Duration::from_millis(50)).await;
                w.store(ms(), Ordering::SeqCst);
                ticker.await?;
                Ok(())
            }),
        );
        sim.run().unwrap();
        let woke = woke.load(Ordering::SeqCst);
        assert!((1100..=1102).contains(&woke), "woke at {woke}");
        let ticks = ticks.lock().unwrap();
        let during: Vec<_> = ticks.iter().filter(|&&t| t > 101 && t < 1100).collect();
        assert!(during.is_empty(), "ticked while paused: {during:?}");
        let burst = ticks.iter().filter(|&&t| (1100..1105).contains(&t)).count();
        assert!(burst <= 1, "{burst} ticks replayed at once on resume: {ticks:?}");
        assert!(ticks.iter().any(|&t| t > 1110), "never ticked after the resume: {ticks:?}");
        assert_eq!(pause.pauses(), 1);
    }

    /// An untimed pause ends when `resume` is called, from outside the actor.
    #[test]
    fn an_untimed_pause_ends_at_resume() {
        let mut sim = turmoil::Builder::new().build();
        let pause = PauseHandle::new();
        let woke = Arc::new(AtomicU64::new(0));
        let (p, w) = (pause.clone(), woke.clone());
        sim.client(
            "actor",
            pause.wrap(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                w.store(ms(), Ordering::SeqCst);
                drop(p);
                Ok(())
            }),
        );
        pause.pause();
        for _ in 0..500 {
            sim.step().unwrap();
        }
        assert_eq!(woke.load(Ordering::SeqCst), 0, "ran while paused");
        assert!(pause.is_paused());
        pause.resume();
        sim.run().unwrap();
        // Paused before its first poll, the actor had not even started its
        // 10 ms sleep: it starts at the resume (500) and ends 10 ms later.
        let at = woke.load(Ordering::SeqCst);
        assert!((510..=512).contains(&at), "woke at {at}");
    }
}
