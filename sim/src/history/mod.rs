//! The history: what every actor asked for and what it was told, in simulated time.
//!
//! The vocabulary is Jepsen's. An operation is *invoked*, then completes in
//! exactly one of three ways:
//!
//! - [`EventKind::Ok`]: it happened, and the completion carries what it returned;
//! - [`EventKind::Fail`]: it definitely did **not** happen (a refusal, a lock
//!   held by someone else, a denied request);
//! - [`EventKind::Info`]: nobody knows. A response timeout is `Info`, never
//!   `Fail`: redis-rs does not cancel a timed-out command, and it may still run
//!   later (design §4). Checkers must treat an `Info` write as "may have
//!   landed, at any later time".
//!
//! Observations that are not request/response pairs (an election node's role
//! change, a holder noticing its lease is gone, a nemesis fault) are recorded
//! as a single `Ok` (or `Info` for faults) event with no invoke.
//!
//! Invocations and completions are paired by [`OpId`], not by process, because
//! an actor may have several operations in flight (an election's renewal loop
//! runs beside the leader's writes).
//!
//! The recorder, [`History`], is a cloneable handle over one shared event list.
//! Turmoil runs every host on one thread, so the lock is never contended; it is
//! a `std::sync::Mutex` (not `Rc<RefCell>`) only so that the handle is `Send`
//! and can be moved anywhere a closure wants it.
//!
//! [`History::digest`] is a stable 64-bit FNV-1a hash over a canonical JSON
//! serialisation of every event: the same seed gives the same digest in every
//! process (no `DefaultHasher`, whose keys are random per process).

mod digest;
mod op;
mod op_text;
mod operation;
mod values;

use core::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

pub use self::digest::Digest;
pub(crate) use self::digest::{digest_events, render_timeline, Fnv1a};
pub use self::op::Op;
pub use self::operation::{FamilyOp, Operation};
pub(crate) use self::values::*;
// Also at the crate root, their one public path; here for the crate.
pub(crate) use crate::api::Api;
pub(crate) use crate::fault_record::{FaultRecord, NamedTarget, NemesisStep};
pub(crate) use crate::situation::SituationName;
pub(crate) use crate::time::Millis;

/// Pairs an invocation with its completion. Allocated by [`History::invoke`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId(pub u64);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How an event stands in its operation's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// The operation was sent.
    Invoke,
    /// The operation happened; the event's [`Op`] carries its result.
    Ok,
    /// The operation definitely did not happen.
    Fail,
    /// Outcome unknown (a timeout, a dropped connection): it may have happened,
    /// and may still happen later.
    Info,
}

impl EventKind {
    /// Whether this event completes an operation (anything but `Invoke`).
    pub fn is_completion(self) -> bool {
        !matches!(self, EventKind::Invoke)
    }

    fn label(self) -> &'static str {
        match self {
            EventKind::Invoke => "invoke",
            EventKind::Ok => "ok",
            EventKind::Fail => "fail",
            EventKind::Info => "info",
        }
    }
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Position in the history (0, 1, 2, …).
    pub index: u64,
    /// Simulated milliseconds since the simulation started.
    pub time: Millis,
    /// Which actor (turmoil host name, or `nemesis`).
    pub process: String,
    /// Invoke / ok / fail / info.
    pub kind: EventKind,
    /// Pairs this event with its invocation (observations get their own id).
    pub op_id: OpId,
    /// The operation (with results on completions).
    pub op: Op,
    /// On an invoke: the public library operation it calls
    /// (`Lock::extend`, `Redlock::acquire`, …), for the operations table.
    /// Absent on completions and observations (and from the digest's JSON
    /// when absent, so histories without it keep their digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>8}ms  {:<12} {:<6} {:>5}  {}",
            self.time,
            self.process,
            self.kind.label(),
            self.op_id.to_string(),
            self.op
        )
    }
}

#[derive(Debug, Default)]
struct Inner {
    events: Vec<Event>,
    /// Situations already recorded in this run (each is recorded once).
    reached: std::collections::BTreeSet<SituationName>,
    next_op: u64,
    /// The latest time recorded: used when no simulation clock is available,
    /// so that time never runs backwards in the history.
    last_time: Millis,
}

/// A shared, cloneable recorder of [`Event`]s.
///
/// Methods without `_at` read simulated time from turmoil
/// (`turmoil::sim_elapsed`), so actors can call them directly; outside a host
/// (the driver loop, unit tests) use the `_at` forms with an explicit time.
#[derive(Debug, Clone, Default)]
pub struct History {
    inner: Arc<Mutex<Inner>>,
}

/// Simulated milliseconds since the start, if called from inside a turmoil
/// host (or milliseconds since a live run's start, on its thread); `None`
/// otherwise.
pub(crate) fn sim_now() -> Option<Millis> {
    turmoil::sim_elapsed().or_else(crate::live::elapsed).map(|d| d.as_millis() as Millis)
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// A history holding exactly these events (for checkers' unit tests and
    /// for loading a recorded history). Indexes are renumbered.
    pub fn from_events(events: impl IntoIterator<Item = Event>) -> History {
        let h = History::new();
        {
            let mut inner = h.lock();
            for mut e in events {
                e.index = inner.events.len() as u64;
                inner.next_op = inner.next_op.max(e.op_id.0 + 1);
                inner.last_time = inner.last_time.max(e.time);
                inner.events.push(e);
            }
        }
        h
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves a valid Vec behind: recover
        // the data instead of propagating the poison.
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn now(inner: &Inner) -> Millis {
        sim_now().unwrap_or(inner.last_time).max(inner.last_time)
    }

    fn push(inner: &mut Inner, time: Millis, process: &str, kind: EventKind, op_id: OpId, op: impl Into<Op>) {
        let time = time.max(inner.last_time);
        inner.last_time = time;
        let index = inner.events.len() as u64;
        inner.events.push(Event { index, time, process: process.to_string(), kind, op_id, op: op.into(), api: None });
    }

    /// Records an invocation now; returns the id to complete it with.
    pub fn invoke(&self, process: &str, op: impl Into<Op>) -> OpId {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::invoke_locked(&mut inner, t, process, op)
    }

    /// Records an invocation at an explicit time.
    pub fn invoke_at(&self, time: Millis, process: &str, op: impl Into<Op>) -> OpId {
        let mut inner = self.lock();
        Self::invoke_locked(&mut inner, time, process, op)
    }

    /// Records an invocation of the public library operation `api` now
    /// (see [`Event::api`]).
    pub fn call(&self, process: &str, api: Api, op: impl Into<Op>) -> OpId {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        let id = Self::invoke_locked(&mut inner, t, process, op);
        if let Some(e) = inner.events.last_mut() {
            e.api = Some(api);
        }
        id
    }

    /// Records that the run reached `situation`, once per run: later calls
    /// for the same situation record nothing.
    pub fn reach(&self, process: &str, situation: SituationName) {
        let mut inner = self.lock();
        if inner.reached.insert(situation) {
            let t = Self::now(&inner);
            Self::observe_locked(&mut inner, t, process, EventKind::Ok, Op::Reached { situation });
        }
    }

    fn invoke_locked(inner: &mut Inner, time: Millis, process: &str, op: impl Into<Op>) -> OpId {
        let id = OpId(inner.next_op);
        inner.next_op += 1;
        Self::push(inner, time, process, EventKind::Invoke, id, op);
        id
    }

    /// Completes `id` now with `kind` (`Ok`/`Fail`/`Info`) and the op as it
    /// finished (results filled in).
    pub fn complete(&self, id: OpId, process: &str, kind: EventKind, op: impl Into<Op>) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::push(&mut inner, t, process, kind, id, op);
    }

    /// Completes `id` at an explicit time.
    pub fn complete_at(&self, time: Millis, id: OpId, process: &str, kind: EventKind, op: impl Into<Op>) {
        let mut inner = self.lock();
        Self::push(&mut inner, time, process, kind, id, op);
    }

    /// Shorthand: `complete(id, process, Ok, op)`.
    pub fn ok(&self, id: OpId, process: &str, op: impl Into<Op>) {
        self.complete(id, process, EventKind::Ok, op)
    }

    /// Shorthand: `complete(id, process, Fail, op)`.
    pub fn fail(&self, id: OpId, process: &str, op: impl Into<Op>) {
        self.complete(id, process, EventKind::Fail, op)
    }

    /// Shorthand: `complete(id, process, Info, op)` — outcome unknown.
    pub fn info(&self, id: OpId, process: &str, op: impl Into<Op>) {
        self.complete(id, process, EventKind::Info, op)
    }

    /// Records an observation (no invoke) now, as a single `Ok` event.
    pub fn observe(&self, process: &str, op: impl Into<Op>) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::observe_locked(&mut inner, t, process, EventKind::Ok, op);
    }

    /// Records an observation at an explicit time.
    pub fn observe_at(&self, time: Millis, process: &str, op: impl Into<Op>) {
        let mut inner = self.lock();
        Self::observe_locked(&mut inner, time, process, EventKind::Ok, op);
    }

    /// Records a nemesis fault (an `Info` event of process `nemesis`) at an
    /// explicit time — the driver loop knows it from `Sim::elapsed`.
    pub fn fault_at(&self, time: Millis, fault: FaultRecord) {
        let mut inner = self.lock();
        Self::observe_locked(&mut inner, time, "nemesis", EventKind::Info, Op::Fault(fault));
    }

    /// Records a fault now (from inside a host), as process `nemesis`.
    pub fn fault(&self, fault: FaultRecord) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::observe_locked(&mut inner, t, "nemesis", EventKind::Info, Op::Fault(fault));
    }

    fn observe_locked(inner: &mut Inner, time: Millis, process: &str, kind: EventKind, op: impl Into<Op>) {
        let id = OpId(inner.next_op);
        inner.next_op += 1;
        Self::push(inner, time, process, kind, id, op);
    }

    /// A copy of every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stable digest of the whole history (see `digest_events`).
    pub fn digest(&self) -> Digest {
        digest_events(&self.lock().events)
    }

    /// The readable timeline (see `render_timeline`).
    pub fn timeline(&self) -> String {
        render_timeline(&self.lock().events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_op_reads_back_typed_and_digests_stably() {
        #[derive(Debug, Clone, PartialEq, Serialize)]
        struct Claimed {
            id: String,
            attempt: Option<u64>,
        }
        impl fmt::Display for Claimed {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "claimed {}", self.id)
            }
        }
        impl Operation for Claimed {
            fn verb(&self) -> &'static str {
                "job-claim"
            }
        }
        let claimed = |attempt| Claimed { id: "j1".into(), attempt: Some(attempt) };
        let op = Op::from(claimed(3));
        assert_eq!(op.to_string(), "claimed j1");
        assert_eq!(op.verb(), "job-claim");
        assert_eq!(op.family::<Claimed>(), Some(&claimed(3)));
        assert_eq!(op.family::<JobLike>(), None);
        let digest = |op: Op| {
            let h = History::new();
            h.observe_at(1, "w", op);
            digest_events(&h.events())
        };
        assert_eq!(digest(claimed(3).into()), digest(claimed(3).into()));
        assert_ne!(digest(claimed(3).into()), digest(claimed(4).into()));
        let h = History::new();
        h.observe_at(1, "w", claimed(3));
        let json = serde_json::to_string(&h.events()[0]).unwrap();
        assert!(json.contains(r#""op":{"id":"j1","attempt":3}"#), "{json}");
    }

    #[derive(Debug, PartialEq, Serialize)]
    struct JobLike;
    impl fmt::Display for JobLike {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "job")
        }
    }
    impl Operation for JobLike {
        fn verb(&self) -> &'static str {
            "job"
        }
    }

    fn sample() -> History {
        let h = History::new();
        let id = h.invoke_at(0, "c1", Op::Read { key: "k".into(), value: None, token: None });
        h.ok(id, "c1", Op::Read { key: "k".into(), value: Some("v".into()), token: Some(1) });
        h.fault_at(5, FaultRecord::on_client(crate::nemesis::FaultKind::ClientPause, "c1", false, 1500));
        let w = h.invoke_at(
            10,
            "c1",
            Op::Write { key: "k".into(), value: "a".into(), token: Some(1), fenced: true, result: None },
        );
        h.info(w, "c1", Op::Write { key: "k".into(), value: "a".into(), token: Some(1), fenced: true, result: None });
        h
    }

    #[test]
    fn digest_is_stable_and_sensitive() {
        let a = sample();
        let b = sample();
        assert_eq!(a.digest(), b.digest());
        let c = sample();
        c.observe_at(20, "c1", Op::Note { text: "x".into() });
        assert_ne!(a.digest(), c.digest());
        assert_eq!(History::new().digest(), Digest(0xcbf2_9ce4_8422_2325));
    }

    #[test]
    fn time_never_runs_backwards_and_ids_pair() {
        let h = sample();
        let ev = h.events();
        assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
        assert_eq!(ev[0].op_id, ev[1].op_id);
        assert_eq!(ev[0].kind, EventKind::Invoke);
        assert_eq!(ev[1].kind, EventKind::Ok);
        assert_eq!(ev[3].op_id, ev[4].op_id);
        assert_eq!(ev[4].kind, EventKind::Info);
        // Outside a simulation `complete` reuses the latest time, never 0.
        assert_eq!(ev[4].time, 10);
    }

    #[test]
    fn timeline_marks_faults_and_unknowns() {
        let t = sample().timeline();
        assert!(t.contains("!!"), "{t}");
        assert!(t.contains("??"), "{t}");
        assert!(t.contains("read k -> v token=1"), "{t}");
        let ev = sample().events();
        let round = History::from_events(ev.clone());
        assert_eq!(round.events(), ev);
    }
}
