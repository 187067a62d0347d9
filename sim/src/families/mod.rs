//! The primitive families, one folder each: everything a family is (plan, workload and actors, checks of its history, situations, variants) lives in its folder.
pub mod lock;
