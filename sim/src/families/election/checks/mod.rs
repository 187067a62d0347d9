//! What the election family judges of a history: `terms` (the `election`
//! invariant and the liveness and self-fencing of its reigns) and `views`
//! (`election-views`: what an `Election` says about itself).
pub mod terms;
pub mod views;
