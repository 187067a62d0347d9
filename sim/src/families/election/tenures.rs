//! The election family's tenures: each node's reigns, from its `Leader`
//! event to the end of its belief (`crate::stats::reigns`), for the
//! timeline's bands.

use crate::history::{Event, Op, Role};
use crate::stats::reigns;
use crate::timeline::Tenure;

/// Every reign of every election in `events`.
pub(super) fn of(events: &[Event]) -> Vec<Tenure> {
    let mut elections: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.op {
            Op::Role { election, role: Role::Leader, .. } => Some(election.as_str()),
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
