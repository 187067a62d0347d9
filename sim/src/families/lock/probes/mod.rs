//! The reader's probes: cases the workload meets too rarely to judge
//! (a stale lease beside a newer one, a guard losing its lease, a release
//! racing an expiry, `Retry::run`'s edges, a time-floored token read back,
//! planted corrupt keys), each staged once per run on names of its own and
//! recorded as the workload records its calls, for the checkers to judge.

pub mod corruption;
pub mod floor;
pub mod guard;
pub mod release_race;
pub mod retry;
pub mod stale_lease;
