//! Redlock scenarios: `redlock`, `redlock-no-validity`, `redlock-clock-jump`.
//!
//! Five bridged redis-servers are the independent masters; three client
//! actors contend for one name with the production
//! [`redis_primitives::redlock::Redlock`] (or the broken
//! [`redis_primitives_naive::NaiveRedlock`]): TTL 300 ms, default drift.
//! Every library call is recorded with `actor.call` (`Redlock::connect`,
//! `acquire`, `acquire_with_retry`, `extend`, `release`) and, on completion,
//! with its round: each master's answer (`y`/`n`/`e`/`t`, `u` for a timeout
//! reported as an error), the elapsed time, the validity and `valid_until`,
//! the refusal reason and the cleanup. What user code decides with (an
//! `Acquisition`'s and an `Extension`'s accessors, a lease's votes and
//! quorum, a refusal's `validity_left`, a timed-out vote's latency) is read
//! after every call and recorded only when it disagrees.
//! Beside its workload, client-0 runs the refused-extend probe
//! (`refusal.rs`: a lease whose key was overwritten on a majority,
//! extended, must stop being trusted) and then the read-back probe
//! (`readback.rs`): a Redlock with a drift and an owner source of its own,
//! whose settings, commands per master and lease it reads back (the
//! configuration edges are the library's own tests). Beside both, the
//! trust-edge probe (`trust.rs`) reads a lease of its own at its
//! `valid_until` and extends it there.
//!
//! Checkers: `redlock-mutual-exclusion` (no two clients inside their
//! validity, extensions included), `redlock-validity` (validity ≤ TTL −
//! elapsed − drift, no extension of an expired lease, justified too-slow
//! refusals), `redlock-votes` (quorum for grants and extensions, no
//! no-majority refusal with a majority, each yes/no consistent with the keys
//! a master can hold), `redlock-rounds` (every master asked, no round past
//! the per-master timeout, no master left unverified by `connect` on a link
//! no fault touched) and, in `redlock`, `liveness` after the faults.
//!
//! - `redlock`: client-0 waits up to 299 ms per master, the others 80 ms.
//!   Phase 1 (0–1.5 s) aims at the elapsed-time gate: client-0's links are
//!   slow (100–130 ms each way), or one master answers it in 280–300 ms, so
//!   a round leaves a few ms of validity or none. Phase 2 (≈1.5–1.9 s): two
//!   masters, then three, are cut off from every client (a minority must
//!   still grant, a majority must refuse acquires and extends). Phase 3
//!   (1.9–2.35 s): generated faults under swarm testing; then a quiet tail
//!   in which some client must be granted within TTL + 299 ms + 300 ms of
//!   the last heal. Holders extend (in time, within 3 ms of the end of
//!   their validity, or after pausing themselves past it), release in time
//!   or late (after the validity, sometimes after the keys' TTL); clients
//!   1 and 2 sometimes wait through `acquire_with_retry`.
//! - `redlock-no-validity`: the client that ignores the elapsed time and
//!   trusts "TTL from the reply" (plain acquire–work–release): it trusts its
//!   lease for a round trip longer than the keys live, and another client
//!   takes them.
//! - `redlock-clock-jump`: the documented non-guarantee. Client-0 reaches
//!   only masters 0–2 (its links to 3 and 4 are cut), wins those three;
//!   masters 0 and 1 then step their clocks forward past the TTL, so its keys
//!   there expire at once; client-1 wins 0, 1, 3 and 4 — a second majority

pub(crate) mod api;
mod attempts;
pub(crate) mod checks;
mod client;
mod family;
pub(crate) mod invariants;
mod op;
mod plan;
mod readback;
mod record;
pub(crate) mod refusal;
pub(crate) mod scenarios;
mod situations;
pub(crate) mod targets;
mod tenures;
mod timing;
pub(crate) mod trust;

pub(crate) use op::RedlockOp;
#[cfg(test)]
pub(crate) use op::RedlockRound;
pub(crate) use plan::{RedlockShape, RedlockSpace};
pub(crate) use situations::SITUATIONS;

/// The lock name.
pub(crate) const NAME: &str = "job";
const MASTERS: usize = 5;
const CLIENTS: usize = 3;
const TTL_MS: u64 = 300;
const MASTER_TIMEOUT_MS: u64 = 250;
const LENGTH_MS: u64 = 3000;
/// `redlock`: client-0 waits almost a TTL for each master (so one slow
/// master can eat the whole validity), the others 80 ms (so a partitioned
/// minority costs them 80 ms, not the lease).
const CORRECT_MASTER_TIMEOUTS_MS: [u64; CLIENTS] = [299, 80, 80];
/// `redlock` runs longer: a quiet tail for the liveness check.
const CORRECT_LENGTH_MS: u64 = 3300;
/// Slack of the liveness bound beyond a TTL and a round (ms): the pause
/// between attempts (≤ 30), a retry delay (≤ 40), round trips and the
/// cleanup of a refused attempt.
const LIVENESS_SLACK_MS: u64 = 300;

/// Which Redlock, under which faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedlockVariant {
    /// The production Redlock.
    Correct,
    /// `NaiveRedlock`: no validity gate.
    NoValidity,
    /// The production Redlock under a clock step on two of five masters.
    ClockJump,
}

/// What Redlock adds to `rp-sim report`: its invariants (no histogram or
/// section of its own).
pub(crate) const REPORT_PART: crate::family::ReportPart =
    crate::family::ReportPart { invariants: invariants::INVARIANTS, histograms: &[], section: None };

/// The family's entry in the registry (`crate::families::REGISTRY`).
pub(crate) const ENTRY: crate::entry::FamilyEntry = crate::entry::FamilyEntry {
    scenarios: scenarios::SCENARIOS,
    report: REPORT_PART,
    targets: targets::TARGETS,
    properties: targets::PROPERTIES,
};
