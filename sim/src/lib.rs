//! `redis-primitives-sim`: the deterministic simulation harness behind `rp-sim`.
//!
//! It drives the production types of `redis-primitives` — never copies —
//! through faults inside a turmoil simulation, while every Redis command is
//! executed by a **real redis-server** whose wall clock is pinned to
//! simulated time. The same seed gives the same history, bit for bit; named
//! checkers read that history and report invariant violations with the one
//! command that replays them.
//!
//! ## Testing your own code
//!
//! Anything written against `redis::aio::ConnectionLike` runs as a client
//! actor: build a [`World`], register actors that use
//! [`Actor::connection`] and record what they do
//! ([`Actor::invoke`], then `ok` / `fail` / `info`), give it a fault
//! schedule (drawn from a [`FaultSpace`]), run it, and judge the history
//! with the built-in checkers (a lock of your own records [`LockOp`] and is
//! judged by [`mutual_exclusion`]; writes through a [`Ledger`] by
//! [`late_writes`]) or your own. Wrapped in a
//! [`Trial`] (a name and that closure), it runs like a registered scenario:
//! [`check`] runs its seeds from a `#[test]` on every CPU and fails naming
//! the first violating seed, its violations and the command that replays
//! exactly that seed (`RP_SIM_SEED=N cargo test …`, which prints its whole
//! history); [`explore_with`] gives the rest (shards, progress, `--twice`).
//! `sim/examples/user_lock.rs` is a whole program (a lock with a bare-`DEL`
//! release, found, with the replay command printed); in short:
//!
//! ```no_run
//! use redis_primitives_sim::mutual_exclusion::{self, Policy};
//! use redis_primitives_sim::{FaultClass, LockOp, FaultSpace, Outcome, Trial, World, WorldConfig};
//!
//! let trial = Trial::new("my-lock", |servers, seed| {
//!     let mut world = World::new(servers, WorldConfig::new(seed))?;
//!     for i in 0..3 {
//!         world.actor(format!("client-{i}"), |actor| async move {
//!             let mut conn = actor.connection(0);
//!             while actor.now() < 3000 {
//!                 let op = |deadline| LockOp::Acquire { name: "l".into(), ttl_ms: 200, token: None, deadline };
//!                 let id = actor.invoke(op(None));
//!                 let sent = actor.now();
//!                 let set: redis::RedisResult<Option<String>> =
//!                     redis::cmd("SET").arg("l").arg(actor.name()).arg("NX").arg("PX").arg(200).query_async(&mut conn).await;
//!                 match set {
//!                     Ok(Some(_)) => actor.ok(id, op(Some(sent + 200))),
//!                     Ok(None) => actor.fail(id, op(None)),
//!                     Err(_) => actor.info(id, op(None)),
//!                 }
//!                 // ... hold, then release with your code, recorded the same way.
//!                 tokio::time::sleep(std::time::Duration::from_millis(50)).await;
//!             }
//!             Ok(())
//!         });
//!     }
//!     let faults = FaultSpace::new(&[FaultClass::ClientPause, FaultClass::Partition], 3).within(300, 2700);
//!     world.nemesis(faults.schedule(seed, 3, 1));
//!     // The history, its digest, the schedule, and the checks every run gets.
//!     let mut outcome = Outcome::from_run(&world.run()?);
//!     let found = mutual_exclusion::check(&outcome.history, Policy::ForbidTrustedOverlap).violations;
//!     outcome.violations.extend(found);
//!     Ok(outcome)
//! });
//! // In a #[test]: seeds 0..50; panics with the first violating seed.
//! redis_primitives_sim::check(&trial, 50);
//! ```
//!
//! The same trial runs in real time too: [`explore_with`] on a pool from
//! [`Servers::live`] runs its world on a real runtime, against the servers
//! on their real clocks, with the faults made for real (the live tier,
//! `docs/guide/live.md`; `rp-sim live` for the registered scenarios).
//!
//! ## Rules for code under test
//!
//! A seed gives one history only if the code under test takes everything
//! that varies from the simulation:
//!
//! - **time, sleeps, timeouts** through `tokio::time` (simulated), never
//!   `std::time::Instant`, `SystemTime::now()` or `std::thread::sleep`;
//! - **randomness** from [`Actor::rng`] or [`Actor::seed`], never an
//!   unseeded generator;
//! - **Redis** through [`Actor::connection`] only: a socket of its own
//!   (`redis::Client::open(url)` and a connection from it) stops the run
//!   with [`SimError::RuleBroken`] naming the actor and [`Rule::OwnSocket`];
//! - **tasks** through [`Actor::spawn`], so that a pause freezes them too;
//! - **no `HashMap` order** into what it records.
//!
//! Most breaks cannot be seen from inside a run: they make one seed give
//! two histories. The determinism self-check finds them — `--twice` in
//! [`run_main`] and `rp-sim explore`, [`ExploreOptions::twice`], or
//! [`compare_histories`] on two runs of a seed — and names the first event
//! where the runs part. `docs/guide/harness.md` ("Rules for code under
//! test") has the table, with what breaking each rule does.
//!
//! ## The public surface
//!
//! Everything a user's own simulation needs is re-exported here, at the
//! crate root, each name once: [`Servers`], [`World`] and its [`Actor`]s,
//! [`SimConnection`], the nemesis's [`Fault`]s and [`Schedule`]s with the
//! [`FaultSpace`] they are drawn from, the [`History`] a run records
//! ([`Event`], [`Op`], a family's own [`Operation`]), the [`Outcome`] and
//! [`Violation`]s a judge returns, the ready checkers a user's code can be
//! judged by ([`mutual_exclusion`] over [`LockOp`]s, [`late_writes`] over a
//! [`Ledger`]), [`Histograms`], the [`Experiment`] an exploration runs (a
//! registered scenario, or a user's [`Trial`]) with [`explore()`] (one
//! job), [`explore_with()`] (a shard, several jobs at once) and [`check`]
//! (from a `#[test]`). Three modules are public because they are tools
//! rather than single types: [`scenarios`] (the registry of the built-in
//! families' scenarios), [`search`] (the property search) and [`cli`] (the
//! `rp-sim` command line). Every other module is private: the families,
//! the checkers, the history's internals and the registry's plumbing are
//! the harness's own. Dependencies run one way, in the layers of ADR 0009
//! (`sim/tests/harness/modules.rs` fails on a cycle); the files, for a
//! reader of the source, from the bottom up:
//!
//! | file | concept |
//! |---|---|
//! | `time.rs`, `api.rs` | simulated milliseconds; the public library operations a workload calls |
//! | `nemesis.rs`, `fault_record.rs` | fault schedules as data, each fault with its named undo; a fault as the history records it |
//! | `history/` | the events and operations of a run, the recorder, the digest |
//! | `stats.rs`, `determinism.rs`, `error.rs` | HdrHistograms in simulated ms; comparing two histories; why a run could not happen |
//! | `clock.rs` | the memory-mapped control file of the `LD_PRELOAD` clock library (`sim/clock/rp_clock.c`) |
//! | `servers.rs`, `placement.rs` | real redis-server processes with the clock library preloaded, killed on drop, panic and Ctrl-C; on one core with the simulation |
//! | `bridge.rs`, `net.rs`, `pause.rs` | a turmoil host per Redis node; client connections over simulated TCP; freezing an actor |
//! | `world/` | one simulation: servers, bridges, actors, applying the schedule |
//! | `checker/` | the invariants several families share, one module each |
//! | `outcome.rs`, `fault_space.rs`, `family.rs` | what a run produced and the situations it reached; what faults a run may draw; the `Family` trait |
//! | `scenario.rs`, `space.rs`, `target.rs`, `entry.rs` | a registry row; a space of plans; what the search must find; a family's registry entry |
//! | `probes/` | probes several families share: configuration edges, acknowledged calls |
//! | `families/` | one folder per primitive family (variants, plan and space, actors, probes, checks, situations, scenarios, search targets) and `REGISTRY`, one line each |
//! | `scenarios/` | the registry's lookups: every scenario, found by name; every invariant |
//! | `plan.rs`, `generator.rs` | a run spelled out (scenario, seed, workload, schedule); the one generator of plans |
//! | `search/` | the property search: its targets and properties, runner, shrinking, persistence |
//! | `experiment.rs`, `explore.rs`, `exploration.rs`, `jobs.rs`, `shard.rs` | what an exploration runs (a scenario, a user's trial); many seeds of it, what they found, on several cores, across machines |
//! | `check.rs` | an experiment's seeds from a `#[test]`: a panic naming the seed and its replay command |
//! | `mutation.rs`, `mutants.rs`, `rust_mutants.rs` | the search's mutation table; mutated library scripts; what `cargo mutants` found |
//! | `progress.rs`, `plot.rs`, `timeline.rs`, `report.rs`, `baseline.rs` | progress on stderr; SVG charts; one run as HTML; `rp-sim report`; `rp-sim check` |
//! | `cli/` | the `rp-sim` command line, one file per command family |
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Without the `cli` feature the report's, the baseline's and the families'
// report sections have no caller: they stay compiled, so that a family has
// one shape whichever features are on, and unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code))]

mod agreement;
mod api;
mod baseline;
mod bridge;
mod check;
mod checker;
#[cfg(feature = "cli")]
pub mod cli;
mod clock;
mod determinism;
mod entry;
mod error;
mod experiment;
mod exploration;
mod explore;
mod families;
mod family;
mod fault_record;
mod fault_space;
mod generator;
mod history;
mod jobs;
mod ledger;
mod live;
#[cfg(feature = "cli")]
mod mutants;
#[cfg(feature = "cli")]
mod mutation;
mod name;
mod nemesis;
mod net;
mod outcome;
mod path;
mod pause;
mod placement;
mod plan;
#[cfg(feature = "cli")]
mod plot;
mod probes;
mod program;
mod progress;
mod proxy;
mod reply;
#[cfg(feature = "cli")]
mod report;
#[cfg(feature = "cli")]
mod rust_mutants;
mod scenario;
pub mod scenarios;
pub mod search;
mod servers;
mod shard;
mod situation;
mod space;
mod stats;
mod target;
mod time;
mod timeline;
mod workload_fault;
mod world;
pub use api::Api;
pub use baseline::{Baseline, BaselineError, Departure, Tolerance};
pub use bridge::Execution;
pub use check::{check, replay, try_check, CheckError};
pub use checker::{late_writes, Invariant, Violation};
pub use clock::{ServerClock, CLOCK_FILE_ENV};
pub use determinism::{compare_histories, Divergence};
pub use experiment::{replay_command, Experiment, Trial, SEEDS_ENV, SEED_ENV};
pub use exploration::{Exploration, SeedReport, SeedRun, WithinJitter};
pub use explore::{explore, explore_with, ExploreOptions};
pub use families::lock::{mutual_exclusion, LockOp};
pub use fault_record::FaultRecord;
pub use fault_space::{FaultSpace, CLIENT_SIDE};
pub use history::{Digest, Event, EventKind, FamilyOp, History, Op, OpId, Operation};
pub use jobs::{Jobs, JobsError};
pub use ledger::{fenced_writes, judge_late_writes, Ledger};
pub use live::Tier;
pub use nemesis::{Direction, Fault, FaultClass, FaultKind, Schedule, Target};
pub use net::{NetConfig, SimConnection, TimeoutRace};
pub use outcome::{Outcome, ScheduledFault, Situation, SituationName};
pub use path::Path;
pub use placement::Placement;
pub use plan::Plan;
pub use program::run_main;
pub use progress::Progress;
pub use reply::Reply;
pub use servers::{check_clock_library, clock_library, KeyAtEnd, ServerNode, Servers, SetupError};
pub use shard::{merge, Shard, ShardError, ShardFile};
pub use space::Space;
pub use stats::{Histograms, Metric, Unit};
pub use time::Millis;
pub use timeline::{Tenure, Timeline};
pub use workload_fault::{WorkloadFault, WorkloadFaultKind, WorkloadTarget};
pub use world::{
    derive_seed, together, Actor, ActorResult, Process, RestartMode, Rule, RunOutcome, SimError, World, WorldConfig,
    DEFAULT_EPOCH_UNIX_MS,
};
