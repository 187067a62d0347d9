//! The primitive families, one folder each: a family's workload and actors, its plan space, its checks and situations.
pub mod election;
