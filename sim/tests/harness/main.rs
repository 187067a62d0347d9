//! The harness's own tests, one binary: the bridge and the clock library
//! against real servers, determinism, Ctrl-C cleanup, plans, timelines and
//! plots, sharding and parallel jobs, the runner for a user's own world
//! (`experiment`), the timing baseline, and the pinned seeds of every
//! scenario (`scenarios`: the broken variants violate, the correct ones do
//! not — also the Rust mutation run's test command).

mod baseline;
mod bridge;
mod clock;
mod determinism;
mod experiment;
mod interrupt;
mod jobs;
mod live;
mod modules;
mod pictures;
mod plan;
mod replication;
mod scenarios;
mod shard;
mod support;
mod textbook_lock;
