//! The election family's tenures: each node's reigns, from its `Leader`
//! event to the end of its belief (`super::reigns`), for the
//! timeline's bands.

use super::op::{ElectionOp, Role};
use super::reigns::reigns;
use super::ElectionVariant;
use crate::family::operations;
use crate::history::Event;
use crate::timeline::Tenure;

/// Every reign of every election in `events`.
pub(super) fn of(events: &[Event]) -> Vec<Tenure> {
    let mut elections: Vec<&str> = operations::<ElectionVariant>(events)
        .filter_map(|(_, op)| match op {
            ElectionOp::Role { election, role: Role::Leader, .. } => Some(election.as_str()),
            _ => None,
        })
        .collect();
    elections.sort_unstable();
    elections.dedup();
    let mut out = Vec::new();
    for election in elections {
        for r in reigns(events, election) {
            let epoch = r.epoch.map_or("no epoch".to_string(), |e| format!("epoch {e}"));
            let title = format!("{} led {election} ({epoch}) from {} ms to {} ms", r.process, r.from, r.to);
            out.push(Tenure { process: r.process, from: r.from, trusted: r.to, to: r.to, title });
        }
    }
    out
}
