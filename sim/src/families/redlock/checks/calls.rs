//! Reading a Redlock history: each library call with its invoke, its
//! completion and the round the client recorded, plus what the checkers of
//! the Redlock family need to know about the run ([`RedlockSetup`]).
//!
//! Not an invariant itself: `mutual_exclusion`, `validity`, `votes`,
//! `rounds` and `liveness` read the history through it.

use std::collections::BTreeMap;

use super::super::op::{RedlockOp, RedlockRound};
use crate::families::redlock::api::REDLOCK_ACQUIRE_WITH_RETRY;
use crate::history::{Event, EventKind, Millis};

/// What the Redlock checkers need to know about a run beyond its history:
/// the configuration the clients ran with and the faults it suffered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedlockSetup {
    /// Number of masters, N (quorum N/2+1 is derived, never read from the history).
    pub masters: u32,
    /// Lease TTL (ms).
    pub ttl_ms: u64,
    /// Drift allowance for the TTL (ms), from the configured `Drift`.
    pub drift_ms: u64,
    /// Per-master timeout of each client (by process name).
    pub master_timeout_ms: BTreeMap<String, u64>,
    /// Intervals `[from, to]` during which a client was paused (its timers
    /// fire late, so its rounds may run past the per-master timeout).
    pub pauses: Vec<(String, Millis, Millis)>,
    /// Whether the masters' clocks follow simulated time and keep their keys
    /// (no clock step, no restart): then a key is certainly alive for a TTL
    /// after the request that set it was sent.
    pub clocks_trusted: bool,
    /// Every fault window (nemesis and targeted), with whom it touches: a
    /// request caught in one may be delivered late, until it ends.
    pub faults: Vec<FaultWindow>,
    /// Liveness: faults healed at `heal_at`; some client must be granted
    /// (or extend) within `bound` ms after it. `None`: not checked.
    pub liveness: Option<Liveness>,
}

/// When a fault was in force and which links it touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FaultWindow {
    /// Start (simulated ms).
    pub from: Millis,
    /// Undo (simulated ms).
    pub to: Millis,
    /// The client it touches (`None`: every client).
    pub client: Option<String>,
    /// The master it touches (`None`: every master).
    pub node: Option<usize>,
}

/// The longest one-way delay a fault can give a request (the largest
/// `latency` fault, ms): a request sent before a fault ends arrives at most
/// this long after it ends.
pub(crate) const MAX_FAULT_DELAY_MS: Millis = 300;

/// The liveness promise of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Liveness {
    /// When the last fault healed (simulated ms).
    pub heal_at: Millis,
    /// How long after `heal_at` progress must come (ms).
    pub bound: Millis,
}

impl RedlockSetup {
    /// A setup for `masters` masters, TTL and drift, no faults, every
    /// client with the same per-master timeout (for unit tests).
    pub(crate) fn new(masters: u32, ttl_ms: u64, drift_ms: u64) -> RedlockSetup {
        RedlockSetup {
            masters,
            ttl_ms,
            drift_ms,
            master_timeout_ms: BTreeMap::new(),
            pauses: Vec::new(),
            faults: Vec::new(),
            clocks_trusted: true,
            liveness: None,
        }
    }

    /// N/2+1.
    pub(crate) fn quorum(&self) -> usize {
        self.masters as usize / 2 + 1
    }

    /// The latest instant at which a request `process` sent to `master`
    /// by `sent_by` can still be executed: at once, or when the last fault
    /// on that link that started by then ends, plus the longest delay.
    pub(crate) fn lands_by(&self, process: &str, master: usize, sent_by: Millis) -> Millis {
        let end = self
            .faults
            .iter()
            .filter(|f| f.from <= sent_by)
            .filter(|f| f.client.as_deref().is_none_or(|c| c == process) && f.node.is_none_or(|n| n == master))
            .map(|f| f.to)
            .max()
            .unwrap_or(0);
        sent_by.max(end) + MAX_FAULT_DELAY_MS
    }

    /// Whether `process` was paused at some instant of `[from, to]`.
    pub(crate) fn paused(&self, process: &str, from: Millis, to: Millis) -> bool {
        self.pauses.iter().any(|(p, a, b)| p == process && *a <= to && from <= *b)
    }
}

/// Which library call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// `acquire` (`retry`: `acquire_with_retry`, whose earlier attempts are
    /// not in the history).
    Acquire {
        /// Through `acquire_with_retry`.
        retry: bool,
    },
    /// `extend` of the lease granted by acquire op `lease`.
    Extend {
        /// The acquire's op id.
        lease: u64,
    },
    /// `release` of the lease granted by acquire op `lease`.
    Release {
        /// The acquire's op id.
        lease: Option<u64>,
    },
}

impl CallKind {
    /// The library method the call was (`acquire_with_retry`, …).
    pub(crate) fn method(self) -> &'static str {
        match self {
            CallKind::Acquire { retry: false } => "acquire",
            CallKind::Acquire { retry: true } => "acquire_with_retry",
            CallKind::Extend { .. } => "extend",
            CallKind::Release { .. } => "release",
        }
    }
}

/// One completed Redlock call.
#[derive(Debug, Clone)]
pub(crate) struct Call<'a> {
    /// Op id of the invoke (an acquire's id names its lease).
    pub id: u64,
    /// The client.
    pub process: &'a str,
    /// What was called.
    pub kind: CallKind,
    /// Invoke time.
    pub invoke: Millis,
    /// Completion time.
    pub done: Millis,
    /// Ok / Fail / Info.
    pub outcome: EventKind,
    /// The recorded round, if any.
    pub round: Option<&'a RedlockRound>,
}

impl Call<'_> {
    /// Time from invoke to completion.
    pub(crate) fn elapsed(&self) -> Millis {
        self.done.saturating_sub(self.invoke)
    }
}

/// Every completed Redlock acquire, extend and release, in completion order.
pub(crate) fn calls(events: &[Event]) -> Vec<Call<'_>> {
    let mut invoked: BTreeMap<u64, (Millis, bool)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if e.kind == EventKind::Invoke {
            let retry = e.api == Some(REDLOCK_ACQUIRE_WITH_RETRY);
            invoked.insert(e.op_id.0, (e.time, retry));
            continue;
        }
        let Some((invoke, retry)) = invoked.remove(&e.op_id.0) else { continue };
        let (kind, round) = match e.op.family() {
            Some(RedlockOp::RedlockAcquire { round, .. }) => (CallKind::Acquire { retry }, round.as_ref()),
            Some(RedlockOp::RedlockExtend { lease, round, .. }) => (CallKind::Extend { lease: *lease }, round.as_ref()),
            Some(RedlockOp::RedlockRelease { lease, round, .. }) => {
                (CallKind::Release { lease: *lease }, round.as_ref())
            }
            _ => continue,
        };
        out.push(Call { id: e.op_id.0, process: &e.process, kind, invoke, done: e.time, outcome: e.kind, round });
    }
    out
}

#[cfg(test)]
pub(crate) mod build {
    //! Hand-built Redlock histories for the checkers' unit tests.
    use super::*;
    use crate::families::redlock::api::{REDLOCK_ACQUIRE, REDLOCK_EXTEND, REDLOCK_RELEASE};
    use crate::history::{Api, Op, OpId};

    /// Events under construction.
    #[derive(Default)]
    pub(crate) struct B {
        pub events: Vec<Event>,
        next: u64,
    }

    pub(crate) fn round(answers: &str) -> RedlockRound {
        RedlockRound { answers: answers.into(), ..RedlockRound::default() }
    }

    /// A refusal round.
    pub(crate) fn refused(answers: &str, why: &str, elapsed: u64) -> RedlockRound {
        RedlockRound {
            answers: answers.into(),
            elapsed_ms: Some(elapsed),
            refusal: Some(why.into()),
            // The cleanup deletes our keys where the SET landed.
            cleanup: Some(if answers.is_empty() { "nnnnn".into() } else { answers.into() }),
            ..RedlockRound::default()
        }
    }

    /// A grant round over `[t0, t1]` trusted until `until`.
    pub(crate) fn granted(answers: &str, t0: Millis, t1: Millis, until: Millis) -> RedlockRound {
        RedlockRound {
            answers: answers.into(),
            elapsed_ms: Some(t1 - t0),
            validity_ms: Some(until.saturating_sub(t1)),
            started_at: Some(t0),
            valid_until: Some(until),
            ..RedlockRound::default()
        }
    }

    impl B {
        fn push(&mut self, time: Millis, p: &str, kind: EventKind, id: u64, op: RedlockOp, api: Option<Api>) {
            let index = self.events.len() as u64;
            let op = Op::from(op);
            self.events.push(Event { index, time, process: p.into(), kind, op_id: OpId(id), op, api });
        }

        #[allow(clippy::too_many_arguments)]
        fn call(
            &mut self,
            p: &str,
            api: Api,
            t0: Millis,
            t1: Millis,
            kind: EventKind,
            op: impl Fn(Option<RedlockRound>) -> RedlockOp,
            r: Option<RedlockRound>,
        ) -> u64 {
            let id = self.next;
            self.next += 1;
            self.push(t0, p, EventKind::Invoke, id, op(None), Some(api));
            self.push(t1, p, kind, id, op(r), None);
            // Keep completion order = time order for the tests.
            self.events.sort_by_key(|e| (e.time, e.index));
            id
        }

        pub(crate) fn acquire(
            &mut self,
            p: &str,
            t0: Millis,
            t1: Millis,
            kind: EventKind,
            r: RedlockRound,
            retry: bool,
        ) -> u64 {
            let api = if retry { REDLOCK_ACQUIRE_WITH_RETRY } else { REDLOCK_ACQUIRE };
            let op = |round| RedlockOp::RedlockAcquire {
                name: "r".into(),
                masters: 5,
                quorum: 3,
                votes: None,
                validity_ms: None,
                round,
            };
            self.call(p, api, t0, t1, kind, op, Some(r))
        }

        /// A granted acquire over `[t0, t1]` trusted until `until`.
        pub(crate) fn grant(&mut self, p: &str, t0: Millis, t1: Millis, answers: &str, until: Millis) -> u64 {
            self.acquire(p, t0, t1, EventKind::Ok, granted(answers, t0, t1, until), false)
        }

        pub(crate) fn extend(
            &mut self,
            p: &str,
            lease: u64,
            t0: Millis,
            t1: Millis,
            kind: EventKind,
            r: RedlockRound,
        ) -> u64 {
            let op = |round| RedlockOp::RedlockExtend { name: "r".into(), lease, round };
            self.call(p, REDLOCK_EXTEND, t0, t1, kind, op, Some(r))
        }

        pub(crate) fn release(&mut self, p: &str, lease: u64, t0: Millis, t1: Millis, answers: &str) -> u64 {
            let op = |round| RedlockOp::RedlockRelease { name: "r".into(), lease: Some(lease), round };
            self.call(p, REDLOCK_RELEASE, t0, t1, EventKind::Ok, op, Some(round(answers)))
        }
    }
}
