//! Checkers: named invariants evaluated over a finished [`History`](crate::history::History).
//!
//! Checkers are separate from workloads (Jepsen, stateright): a scenario
//! records what happened, then hands the events to the checkers that apply.
//! Every checker is a pure function of the events and a small config, with
//! one file per invariant, and returns [`Violation`]s carrying the invariant's
//! name and a short explanation a person can act on.
//!
//! The checkers here are the ones several families share (writes through a
//! fenced store, configuration, error replies, key lifetimes);
//! a family's own live in its folder (the lock's in `families/lock/checks/`).
//! The invariant names and their meanings stay listed here, in one table.
//!
//! The rules about uncertainty are the same everywhere: an `Info` completion
//! may have happened at any time after its invoke, so no checker convicts on
//! it, and "A happened before B" means A's completion precedes B's invoke in
//! simulated time (real-time order), never merely "A's event is earlier".

use serde::{Deserialize, Serialize};

use crate::history::Millis;

pub(crate) mod acknowledged_writes;
mod allowance;
pub(crate) mod configuration;
mod invariant;
pub(crate) mod key_lifetimes;
pub mod late_writes;
pub(crate) mod order;
pub(crate) mod stale_overwrite;
pub(crate) mod store_reads;
pub(crate) mod unexpected_errors;

pub(crate) use allowance::Allowance;
pub use invariant::Invariant;

/// Name of the no-stale-overwrite invariant.
pub(crate) const NO_STALE_OVERWRITE: Invariant = Invariant::new("no-stale-overwrite");
/// Name of the acknowledged-writes invariant (declared by the scenarios
/// that write through `FencedStore::acknowledged`).
pub(crate) const ACKNOWLEDGED_WRITES: Invariant = Invariant::new("acknowledged-writes");

/// Name of the self-fencing invariant: a holder that trusts its lease only
/// until its local deadline never overlaps another holder.
pub(crate) const SELF_FENCING: Invariant = Invariant::new("self-fencing");

/// Name of the liveness property: after the faults heal, every primitive
/// makes progress within a stated bound.
pub(crate) const LIVENESS: Invariant = Invariant::new("liveness");

/// Name of the configuration invariant: accessors report what a primitive
/// was built with.
pub(crate) const CONFIGURATION: Invariant = Invariant::new("configuration");

/// Name of the key-lifetimes invariant: keys a correct primitive leaves
/// behind expire as documented (leases and limiter keys within their bound,
/// fence counters and fenced entries never).
pub(crate) const KEY_LIFETIMES: Invariant = Invariant::new("key-lifetimes");

/// Name of the unexpected-errors invariant: Redis never answers a correct
/// primitive with an error reply, and the library never returns an error
/// that no fault explains.
pub(crate) const UNEXPECTED_ERRORS: Invariant = Invariant::new("unexpected-errors");

/// Every invariant name with its one-line meaning (for `--help`, the report
/// and the README).
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        NO_STALE_OVERWRITE,
        "once the store accepted token t it never accepts t' < t, and the final value belongs to the highest accepted token",
    ),
    (
        SELF_FENCING,
        "under self-fencing (Demotion::AtDeadline, with_lock_guarded), no two nodes trust a lease at the same simulated instant, and no guarded body runs past its local deadline",
    ),
    (
        LIVENESS,
        "after the last fault heals (a quiet tail), every primitive makes progress within its stated bound",
    ),
    (
        UNEXPECTED_ERRORS,
        "when nothing corrupted its keys, Redis never answers a correct primitive with an error reply (a script error, CORRUPT, WRONGTYPE; NOSCRIPT is recovered) and the library returns no error but an unknown outcome (timeout, lost connection)",
    ),
    (
        CONFIGURATION,
        "every primitive's accessors (drift, key names, intervals, quorum, limits) report the configuration it was built with",
    ),
    (
        KEY_LIFETIMES,
        "every key a correct primitive leaves behind expires as documented: a lease within its TTL, a limiter key once it can no longer count, a fence counter or fenced entry never",
    ),
];

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The invariant it breaks.
    pub invariant: Invariant,
    /// What happened, briefly, with times, processes and tokens.
    pub detail: String,
    /// Simulated time at which it became visible, if meaningful.
    pub at: Option<Millis>,
    /// By how much an instant missed the exact bound the check holds it
    /// to (a body dropped past its deadline, a sleep past its cap), when the
    /// check compares instants: what a live run weighs against its own
    /// timer jitter ([`crate::Outcome::jitter`]). `None`: not a matter of
    /// precision, and a violation in every tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_by: Option<core::time::Duration>,
}

impl Violation {
    /// A violation of `invariant`.
    pub fn new(invariant: Invariant, at: Option<Millis>, detail: impl Into<String>) -> Violation {
        Violation { invariant, detail: detail.into(), at, missed_by: None }
    }

    /// The same violation, of an instant that missed its bound by `by`.
    pub fn missed_by(self, by: core::time::Duration) -> Violation {
        Violation { missed_by: Some(by), ..self }
    }

    /// The same violation, of an instant that missed its bound by `ms`.
    pub(crate) fn missed_by_ms(self, ms: u64) -> Violation {
        self.missed_by(core::time::Duration::from_millis(ms))
    }

    /// [`Violation::missed_by_ms`] when `ms` says so; unchanged otherwise.
    pub(crate) fn missed_by_ms_if(self, ms: Option<u64>) -> Violation {
        match ms {
            Some(ms) => self.missed_by_ms(ms),
            None => self,
        }
    }
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.at {
            Some(t) => write!(f, "[{}] at {}ms: {}", self.invariant, t, self.detail),
            None => write!(f, "[{}] {}", self.invariant, self.detail),
        }
    }
}

/// A completed operation: its invoke and its completion side by side.
#[derive(Debug, Clone)]
pub(crate) struct Completed<'a> {
    pub invoke_time: Millis,
    pub done: &'a crate::history::Event,
}

/// The most violations of one invariant a checker reports in a run: the
/// first few say what went wrong, the rest only how often.
pub(crate) const MAX_REPORTED: usize = 5;

/// `out` with at most [`MAX_REPORTED`] violations, and one more of
/// `invariant` saying how many were left out.
pub(crate) fn capped(mut out: Vec<Violation>, invariant: Invariant) -> Vec<Violation> {
    if out.len() > MAX_REPORTED {
        let more = out.len() - MAX_REPORTED;
        // The rest are a matter of precision only if every one of them is.
        let missed_by = out[MAX_REPORTED..].iter().map(|v| v.missed_by).collect::<Option<Vec<_>>>();
        out.truncate(MAX_REPORTED);
        let rest = Violation::new(invariant, None, format!("... and {more} more"));
        out.push(match missed_by.and_then(|m| m.into_iter().max()) {
            Some(by) => rest.missed_by(by),
            None => rest,
        });
    }
    out
}

/// Pairs invokes with completions (by op id). Observations (completions with
/// no invoke) get `invoke_time == done.time`. Order: completion order.
pub(crate) fn completed(events: &[crate::history::Event]) -> Vec<Completed<'_>> {
    use crate::history::EventKind;
    let mut invoked = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if e.kind == EventKind::Invoke {
            invoked.insert(e.op_id, e.time);
        } else {
            let invoke_time = invoked.remove(&e.op_id).unwrap_or(e.time);
            out.push(Completed { invoke_time, done: e });
        }
    }
    out
}

/// The workload's own interruptions of a process, `(process, start, end)`:
/// its freezes (`Op::Paused`: a stall, a pause after a send) and the
/// requests it had held (`Op::Delayed`). The nemesis's faults come from the
/// schedule instead ([`crate::nemesis::Schedule::spans`]).
pub(crate) fn interruptions(events: &[crate::history::Event]) -> Vec<(&str, Millis, Millis)> {
    use crate::history::Op;
    events
        .iter()
        .filter_map(|e| match e.op {
            Op::Paused { ms, .. } | Op::Delayed { ms, .. } => Some((e.process.as_str(), e.time, e.time + ms)),
            _ => None,
        })
        .collect()
}

/// The key `Lock` keeps the lease of `name` under (`Lock::key`'s documented
/// form), as the bridge's execution log names it.
pub(crate) fn lock_key(name: &str) -> String {
    format!("lock:{{{name}}}")
}

/// Whether the workload froze `process` (`Op::Paused`) in a span for which
/// `overlaps(start, end)` holds.
pub(crate) fn paused(
    events: &[crate::history::Event],
    process: &str,
    overlaps: impl Fn(Millis, Millis) -> bool,
) -> bool {
    use crate::history::Op;
    events
        .iter()
        .any(|e| matches!(e.op, Op::Paused { ms, .. } if e.process == process && overlaps(e.time, e.time + ms)))
}
