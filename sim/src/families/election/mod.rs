//! The election family: `election`, `election-renew-only`, `election-no-epoch`,
//! the three `election-failover*` scenarios, and the reference's three
//! election figures in simulated time.
//!
//! Every node is an actor running the production [`Election`] (or the broken
//! [`NaiveElection`]) over a simulated connection to one bridged redis-server,
//! with the reference's settings: lease 400 ms, renew every 100 ms, campaign
//! every 25 ms. Each node runs three things under its pause handle:
//!
//! - the election's own `run()` loop, spawned through the actor so that a
//!   process pause freezes it too;
//! - a **writer**: every 30–70 ms (seeded), if the node may act as leader, it
//!   writes to the resource `resource` — a [`FencedStore`] write carrying the
//!   epoch, or for `election-no-epoch` a plain `SET` with nothing to order it;
//! - an **observer** that samples the node's belief every simulated
//!   millisecond and records `Role` events when it changes. For a
//!   self-fencing node the recorded leader events carry the lease's local
//!   deadline, so its reign ends there even while it is frozen and cannot
//!   record anything (see `reigns.rs`).
//!
//! The workload injects two faults itself, at seeded moments, because they
//! must hit *the leader*, whoever that turns out to be: the node leading at
//! `stall_at` freezes for 500–1500 ms (a GC pause), and the node leading at
//! `stop_at` calls `stop()` (a clean hand-over). The nemesis adds 0–2
//! generated faults (partitions, holds, latency, client and server pauses)
//! on top.
//!
//! Checked: the `election` invariant (one leader per epoch, epochs increase,
//! no lower-epoch write accepted after a higher one). Measured: split-brain
//! window, failover (a stall longer than the lease, until another node
//! leads) and hand-over (from `stop()` until another node leads).
//!
//! | file | what it is |
//! |---|---|
//! | `variant.rs` | the variants under test and the family's [`Family`](crate::Family) implementation |
//! | `plan.rs` | one run spelled out ([`ElectionPlan`]) |
//! | `space.rs` | what plans are drawn from ([`ElectionSpace`]) and the seeds' nemesis faults |
//! | `node.rs` | one node: the election and its store, and what it says as history operations |
//! | `actor.rs` | a node actor: campaign, writer, observer, and the faults aimed at the leader |
//! | `aimed.rs` | the once-per-run faults placed by the seed in quiet spans |
//! | `reader.rs` | the reader: the probes, then the final read of the resource |
//! | `probe.rs` | the election probe: the rare term endings, staged on single-node elections |
//! | `markers.rs` | what the workload did, for the measures and checks after the run |
//! | `run.rs` | one plan run: the world, the measures, the outcome |
//! | `judge.rs` | which checks apply to a run, over which undisturbed spans |
//! | `checks/` | the family's checkers, one file per invariant (`terms`, `self_fencing`, `liveness`, `views`) |
//! | `situations.rs` | what each scenario exists to reach |
//! | `op.rs` | what a node records in the history ([`ElectionOp`]) |
//! | `reigns.rs` | who led when, read from the history, and the split-brain, failover and hand-over measures |
//! | `figures.rs` | the reference's figures (cases 25, 26, 27), the family's section of the report |
//!
//! [`Election`]: redis_primitives::election::Election
//! [`NaiveElection`]: redis_primitives_naive::NaiveElection
//! [`FencedStore`]: redis_primitives::FencedStore

mod actor;
mod aimed;
pub(crate) mod api;
pub(crate) mod checks;
mod figures;
pub(crate) mod invariants;
mod judge;
mod markers;
mod node;
mod op;
mod plan;
pub(crate) mod probe;
mod reader;
mod reigns;
mod run;
pub(crate) mod scenarios;
mod situations;
mod space;
pub(crate) mod targets;
mod tenures;
mod variant;

pub(crate) use op::{ElectionOp, Published, Role};
pub(crate) use reigns::reigns;
pub(crate) use situations::{
    ACKNOWLEDGED_FAILOVER_SITUATIONS, FAILOVER_SITUATIONS, NO_EPOCH_SITUATIONS, RENEW_ONLY_SITUATIONS, SITUATIONS,
};
pub(crate) use space::ElectionSpace;
pub(crate) use variant::ElectionVariant;

use crate::family::ReportPart;

/// What the election adds to `rp-sim report`: what its histograms
/// measure, and the reference's figures.
pub(crate) const REPORT_PART: ReportPart = ReportPart {
    invariants: invariants::INVARIANTS,
    histograms: reigns::HISTOGRAMS,
    section: Some(figures::report_section),
};

/// Election name used by every scenario.
pub(crate) const ELECTION_NAME: &str = "leader";
/// The resource key leaders write to.
pub(crate) const RESOURCE: &str = "resource";

/// The reference's settings.
const LEASE_MS: u64 = 400;
const RENEW_MS: u64 = 100;
const CAMPAIGN_MS: u64 = 25;

/// Round trips and scheduling slack allowed on top of lease + campaign
/// before a missing leader is a `liveness` violation: an acquire is one
/// round trip (at most 2 × 10 ms on the scenario's links), plus the 1 ms
/// sampling of the observer, with a wide margin.
const LIVENESS_SLACK_MS: u64 = 100;

/// The family's entry in the registry (`crate::families::REGISTRY`).
pub(crate) const ENTRY: crate::entry::FamilyEntry = crate::entry::FamilyEntry {
    scenarios: scenarios::SCENARIOS,
    report: REPORT_PART,
    targets: targets::TARGETS,
    properties: targets::PROPERTIES,
};
