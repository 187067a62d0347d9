//! `redis-primitives-sim`: the deterministic simulation harness behind `rp-sim`.
//!
//! It drives the production types of `redis-primitives` — never copies —
//! through faults inside a turmoil simulation, while every Redis command is
//! executed by a **real redis-server** whose wall clock is pinned to
//! simulated time. The same seed gives the same history, bit for bit; named
//! checkers read that history and report invariant violations with the one
//! command that replays them.
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
//! | [`scenarios`] | the registry and one module per family of scenarios |
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
