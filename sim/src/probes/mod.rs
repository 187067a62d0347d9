//! Probes several families share: calls made once per run, beside the
//! workload, to reach an edge no fault reaches (a constructor's bounds, an
//! acknowledged write the replica missed). Below the families that call
//! them; they name no family.

pub mod ack;
pub mod validation;
