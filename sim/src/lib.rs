//! `redis-primitives-sim`: the deterministic simulation harness (`rp-sim`).
//!
//! Work in progress: see issue 4. The harness drives the production types of
//! `redis-primitives` through faults against real redis-server processes.
