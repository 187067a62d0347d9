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
//! with the built-in checkers ([`checker`]) or your own. The same seed gives
//! the same history and digest. `sim/examples/user_lock.rs` is the whole
//! program (a lock with a bare-`DEL` release, found, with the replay
//! command printed); in short:
//!
//! ```no_run
//! use redis_primitives_sim::checker::mutual_exclusion::{self, Policy};
//! use redis_primitives_sim::{FaultClass, FaultSpace, Op, Servers, World, WorldConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut servers = Servers::new();
//! for seed in 0..50 {
//!     let mut world = World::new(&mut servers, WorldConfig::new(seed))?;
//!     for i in 0..3 {
//!         world.actor(format!("client-{i}"), |actor| async move {
//!             let mut conn = actor.connection(0);
//!             while actor.now() < 3000 {
//!                 let op = |deadline| Op::Acquire { name: "l".into(), ttl_ms: 200, token: None, deadline };
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
//!     let run = world.run()?;
//!     for v in mutual_exclusion::check(&run.history.events(), Policy::ForbidTrustedOverlap).violations {
//!         println!("seed {seed}: {v} (digest {})", run.digest());
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! ## The public surface
//!
//! Everything a user's own simulation needs is re-exported here, at the
//! crate root: [`Servers`], [`World`] and its [`Actor`]s, [`SimConnection`],
//! the nemesis's [`Fault`]s and [`Schedule`]s with the [`FaultSpace`] they are
//! drawn from, [`Histograms`], [`Plan`]s and the [`Family`] trait for a family
//! of one's own, and [`explore()`] (one job) or [`explore_with()`] (a shard,
//! several jobs at once). Five modules stay public because they are
//! vocabularies or tools rather than single types: [`history`] (the events
//! and operations a history records), [`checker`] (the built-in invariants,
//! one module each), [`scenarios`] (the registry and the built-in families),
//! [`search`] (the property search) and [`cli`] (the `rp-sim` command line).
//! Every other module is private; their files, for a reader of the source:
//!
//! | file | concept |
//! |---|---|
//! | `servers.rs` | real redis-server processes with the clock library preloaded; killed on drop, panic and Ctrl-C |
//! | `placement.rs` | the simulation thread and its servers on one core: a ping-pong costs a context switch, not two wake-ups |
//! | `clock.rs` | the memory-mapped control file of the `LD_PRELOAD` clock library (`sim/clock/rp_clock.c`) |
//! | `bridge.rs` | a turmoil host per Redis node: simulated TCP in, the real server out, clock pinned per command |
//! | `net.rs` | client connections over simulated TCP: connect and response timeouts, reconnect layer |
//! | `pause.rs` | freezing an actor (a process pause): every future it runs, its connection driver included |
//! | `nemesis.rs` | fault schedules as data; each fault with its named undo |
//! | `world.rs` | one simulation: servers, bridges, actors, the schedule; the scenarios' API |
//! | `plan.rs` | a run spelled out (workload + schedule), for replay and shrinking |
//! | `space.rs` | what a run may draw: the one generator of plans (seeds and the search) |
//! | `stats.rs` | HdrHistograms in simulated milliseconds |
//! | `family.rs` | a primitive family: its plan, space, strategy, run, checkers and shrinking hints, behind one trait |
//! | `explore.rs` | many seeds of one scenario |
//! | `jobs.rs` | an exploration's seeds on several cores at once (`--jobs`), each job with a pool of its own |
//! | `shard.rs` | an exploration split across machines (`--shard`, `--out`) and merged (`rp-sim merge`) |
//! | `mutation.rs` | the search's mutation table (`rp-sim report`) |
//! | `mutants.rs` | `rp-sim mutants`: mutated library scripts, and which the checkers kill |
//! | `rust_mutants.rs` | what `cargo mutants` found in the library's Rust code, read back and judged |
//! | `progress.rs` | progress of long runs on stderr: an `indicatif` bar on a terminal, plain lines otherwise |
//! | `report.rs` | `rp-sim report`: Markdown + JSON under `reports/` |
//! | `plot.rs` | SVG charts of the histograms, every variant of a family on one chart (`plotters`) |
//! | `timeline.rs` | one run as a self-contained HTML page: lanes, operation bars, leases, faults, violations |
//! | `baseline.rs` | `rp-sim check`: the pinned seed sets against `reports/baseline.json` (timing regressions) |
#![deny(missing_docs)]

mod api;
mod baseline;
mod bridge;
pub mod checker;
pub mod cli;
mod clock;
mod determinism;
mod explore;
pub mod families;
mod family;
mod fault_record;
pub mod history;
mod jobs;
mod mutants;
mod mutation;
mod nemesis;
mod net;
mod pause;
mod placement;
mod plan;
mod plot;
mod progress;
mod report;
mod rust_mutants;
pub mod scenarios;
pub mod search;
mod servers;
mod shard;
mod space;
mod stats;
mod timeline;
mod world;

pub use baseline::{Baseline, BaselineError, Drift, ScenarioFigures, Tolerance};
pub use bridge::Execution;
pub use checker::Violation;
pub use clock::{ServerClock, CLOCK_FILE_ENV};
pub use determinism::{compare_histories, Divergence};
pub use explore::{explore, explore_with, replay_command, Exploration, ExploreOptions, SeedReport, SeedRun};
pub use family::{Family, Runner, Workload};
pub use history::{Api, Digest, Event, EventKind, FaultRecord, History, Millis, NamedTarget, NemesisStep, Op, OpId};
pub use jobs::{Jobs, JobsError};
pub use nemesis::{Direction, Fault, FaultClass, FaultKind, Schedule, SwarmDraw, Target};
pub use net::{NetConfig, NetStats, SimConnection, TimeoutRace};
pub use placement::Placement;
pub use plan::Plan;
pub use plot::{Curve, PlotFile};
pub use progress::{stderr_is_terminal, Meter, Progress};
pub use servers::{check_clock_library, clock_library, KeyAtEnd, ServerNode, Servers, SetupError};
pub use shard::{merge, Shard, ShardError, ShardFile};
pub use space::{rng, FaultSpace, Space, WorkloadFault, Workloads};
pub use stats::{Bound, Histograms, Metric, Percentiles, Summary, Unit};
pub use timeline::Timeline;
pub use world::{
    derive_seed, together, Actor, ActorResult, Process, RestartMode, RunOutcome, SimError, World, WorldConfig,
    DEFAULT_EPOCH_UNIX_MS,
};
