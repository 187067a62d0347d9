//! The rate-limit family's invariants, one file each: they judge only
//! histories of a rate limiter, so they live with the family.

pub(crate) mod exact;
pub(crate) mod liveness;
pub(crate) mod planted;
pub(crate) mod window;
