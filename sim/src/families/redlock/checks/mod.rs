//! The Redlock family's invariants, one file each, and the reading of a
//! Redlock history they share ([`calls`]): they judge only Redlock
//! histories, so they live with the family.

pub(crate) mod calls;
pub(crate) mod liveness;
pub(crate) mod mutual_exclusion;
pub(crate) mod rounds;
pub(crate) mod validity;
pub(crate) mod votes;
