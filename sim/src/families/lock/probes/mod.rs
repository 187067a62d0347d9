//! The reader's probes: cases the workload meets too rarely to judge
//! (a stale lease beside a newer one, a guard losing its lease, a release
//! racing an expiry, `Retry::run`'s edges, a time-floored token read back,
//! planted corrupt keys), each staged once per run on names of its own and
//! recorded as the workload records its calls, for the checkers to judge.

pub(crate) mod corruption;
pub(crate) mod floor;
pub(crate) mod guard;
pub(crate) mod release_race;
pub(crate) mod retry;
pub(crate) mod stale_lease;
