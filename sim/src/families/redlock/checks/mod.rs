//! The Redlock family's invariants, one file each, and the reading of a
//! Redlock history they share ([`calls`]): they judge only Redlock
//! histories, so they live with the family.

pub mod calls;
pub mod liveness;
pub mod mutual_exclusion;
pub mod rounds;
pub mod validity;
pub mod votes;
