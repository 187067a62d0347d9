//! The rate-limit family's invariants, one file each: they judge only
//! histories of a rate limiter, so they live with the family.

pub mod exact;
pub mod liveness;
pub mod window;
