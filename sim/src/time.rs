//! Simulated time, the unit every layer counts in.
//!
//! A module of its own so that the lowest layers (the fault vocabulary in
//! `nemesis`, the fault records) can name an instant without depending on
//! the history that records them: dependencies run one way (ADR 0009).

/// Milliseconds of simulated time since the start of the simulation.
pub type Millis = u64;
