//! Probes several families share: calls made once per run, beside the
//! workload, to reach an edge no fault reaches (an acknowledged write the
//! replica missed). Below the families that call them; they name no
//! family. A constructor's bounds need no world: they are the library's
//! own tests (`documented_edges` in `src/` and `tests/library/`).

pub(crate) mod ack;
