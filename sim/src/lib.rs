//! `redis-primitives-sim`: the deterministic simulation harness (`rp-sim`).
//!
//! Work in progress: see issue 4. The harness drives the production types of
//! `redis-primitives` through faults against real redis-server processes.
pub mod checker;
pub mod history;
pub mod stats;
pub mod bridge;
pub mod clock;
pub mod nemesis;
pub mod net;
pub mod pause;
pub mod servers;
pub mod world;
pub mod cli;
pub mod explore;
pub mod report;
pub mod scenarios;
pub mod plan;
pub mod search;
pub mod mutation;
