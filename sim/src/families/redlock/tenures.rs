//! The Redlock family's tenures: each lease trusted from its acquire's
//! invoke for its validity, believed until the holder's release is sent
//! (or the run ends); the timeline's bands.

use std::collections::BTreeMap;

use super::op::RedlockOp;
use crate::history::{Event, EventKind, Millis};
use crate::timeline::Tenure;

/// Redlock leases: trusted from the acquire's invoke for its validity,
/// believed until the holder's release is sent (or the run ends).
pub(super) fn of(events: &[Event]) -> Vec<Tenure> {
    let mut out = Vec::new();
    let end = events.last().map_or(0, |e| e.time);
    let mut invoked: BTreeMap<u64, Millis> = BTreeMap::new();
    let mut open: BTreeMap<(String, String), (Millis, Millis)> = BTreeMap::new();
    let close = |out: &mut Vec<Tenure>, process: &str, name: &str, at: Millis, open: (Millis, Millis)| {
        let (from, valid_until) = open;
        let to = at.max(from);
        let title = format!("{process} held Redlock {name} from {from} ms to {to} ms (valid until {valid_until} ms)");
        out.push(Tenure { process: process.to_string(), from, trusted: valid_until.clamp(from, to), to, title });
    };
    for e in events {
        match (e.op.family(), e.kind) {
            (Some(RedlockOp::RedlockAcquire { .. }), EventKind::Invoke) => {
                invoked.insert(e.op_id.0, e.time);
            }
            (Some(RedlockOp::RedlockAcquire { name, validity_ms: Some(v), .. }), EventKind::Ok) => {
                let start = invoked.remove(&e.op_id.0).unwrap_or(e.time);
                let key = (e.process.clone(), name.clone());
                if let Some(prev) = open.remove(&key) {
                    close(&mut out, &e.process, name, e.time, prev);
                }
                open.insert(key, (e.time, start + v));
            }
            (Some(RedlockOp::RedlockRelease { name, .. }), EventKind::Invoke) => {
                if let Some(prev) = open.remove(&(e.process.clone(), name.clone())) {
                    close(&mut out, &e.process, name, e.time, prev);
                }
            }
            _ => {}
        }
    }
    for ((process, name), prev) in open {
        close(&mut out, &process, &name, end, prev);
    }
    out
}
