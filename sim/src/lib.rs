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
//! actor: build a [`world::World`], register actors that use
//! [`world::Actor::connection`] and record what they do
//! ([`world::Actor::invoke`], then `ok` / `fail` / `info`), give it a fault
//! schedule ([`nemesis::Schedule::generate`]), run it, and judge the history
//! with the built-in checkers ([`checker`]) or your own. The same seed gives
//! the same history and digest. `sim/examples/user_lock.rs` is the whole
//! program (a lock with a bare-`DEL` release, found, with the replay
//! command printed); in short:
//!
//! ```no_run
//! use redis_primitives_sim::checker::mutual_exclusion::{self, Policy};
//! use redis_primitives_sim::history::Op;
//! use redis_primitives_sim::nemesis::{FaultClass, Profile, Schedule};
//! use redis_primitives_sim::servers::Servers;
//! use redis_primitives_sim::world::{World, WorldConfig};
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
//!     let faults = Profile::new(3, 1, 3000).classes(&[FaultClass::ClientPause, FaultClass::Partition]);
//!     world.nemesis(Schedule::generate(seed, &faults));
//!     let run = world.run()?;
//!     for v in mutual_exclusion::check(&run.history.events(), Policy::ForbidTrustedOverlap).violations {
//!         println!("seed {seed}: {v} (digest {})", run.digest());
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layout
//!
//! | module | concept |
//! |---|---|
//! | [`servers`] | real redis-server processes with the clock library preloaded; killed on drop, panic and Ctrl-C |
//! | [`clock`] | the memory-mapped control file of the `LD_PRELOAD` clock library (`sim/clock/rp_clock.c`) |
//! | [`bridge`] | a turmoil host per Redis node: simulated TCP in, the real server out, clock pinned per command |
//! | [`net`] | client connections over simulated TCP: connect and response timeouts, reconnect layer |
//! | [`pause`] | freezing an actor (a process pause): every future it runs, its connection driver included |
//! | [`nemesis`] | fault schedules as data; each fault with its named undo |
//! | [`world`] | one simulation: servers, bridges, actors, the schedule; the scenarios' API |
//! | [`plan`] | a run spelled out (workload + schedule), for replay and shrinking |
//! | [`history`] | invoke / ok / fail / info events and their stable digest |
//! | [`checker`] | the named invariants, one file each |
//! | [`stats`] | HdrHistograms in simulated milliseconds |
//! | [`family`] | a primitive family: its plan, seed plans, run, checkers and shrinking hints, behind one trait |
//! | [`scenarios`] | the registry (one row per scenario) and one module per family |
//! | [`explore`] | many seeds of one scenario |
//! | [`search`], [`mutation`] | proptest strategies, search and shrinking; the mutation table |
//! | [`mutants`] | `rp-sim mutants`: mutated library scripts, and which the checkers kill |
//! | [`rust_mutants`] | what `cargo mutants` found in the library's Rust code, read back and judged |
//! | [`report`] | `rp-sim report`: Markdown + JSON under `reports/` |
//! | [`cli`] | the `rp-sim` command line |
#![deny(missing_docs)]

pub mod bridge;
pub mod checker;
pub mod cli;
pub mod clock;
pub mod explore;
pub mod family;
pub mod history;
pub mod mutants;
pub mod mutation;
pub mod nemesis;
pub mod net;
pub mod pause;
pub mod plan;
pub mod report;
pub mod rust_mutants;
pub mod scenarios;
pub mod search;
pub mod servers;
pub mod stats;
pub mod world;
