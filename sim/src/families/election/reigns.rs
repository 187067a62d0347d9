//! Who led when: each node's reigns read from its [`ElectionOp::Role`]
//! observations, and the family's measures of them (split-brain windows,
//! the time until a new leader), with the histograms they fill.
//!
//! The checkers (`checks/`), the measures of a run (`run.rs`), the figures
//! and the timeline's bands all read the same reigns, so a picture or a
//! figure cannot disagree with what was judged.

use std::collections::BTreeMap;

use super::op::{ElectionOp, Role};
use crate::history::{Event, EventKind};
use crate::stats::{Histograms, Metric, Unit};

/// Two election nodes both believe they lead (ms).
pub(crate) const SPLIT_BRAIN: Metric = Metric::new("split-brain-window", Unit::Ms);
/// From a leader's stall/crash until another node leads (ms).
pub(crate) const FAILOVER: Metric = Metric::new("failover", Unit::Ms);
/// From a leader's `stop()` until another node leads (ms).
pub(crate) const HANDOVER: Metric = Metric::new("hand-over", Unit::Ms);

/// The family's histograms with what each measures (for the report and README).
pub(super) const HISTOGRAMS: &[(Metric, &str)] = &[
    (SPLIT_BRAIN, "how long two election nodes both believed they were leader (ms), one sample per overlap"),
    (FAILOVER, "from the moment a leader stalls (paused, partitioned, crashed) until another node leads (ms)"),
    (HANDOVER, "from a leader's stop() until another node leads (ms)"),
];

/// One leadership interval: a node believed it led over `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reign {
    /// The node.
    pub process: String,
    /// Its epoch, if the election has them.
    pub epoch: Option<u64>,
    /// Became leader.
    pub from: u64,
    /// Stopped believing it (or the end of the history).
    pub to: u64,
}

/// Leadership intervals of `election`, from its `Role` observations.
///
/// A reign starts at a `Leader` event and ends at the first of: a
/// `Follower`/`Resigned` event of that node, a `Leader` event with another
/// epoch, or its trusted deadline (the latest `deadline` reported for that
/// epoch) if the deadline passes first — a self-fencing leader stops acting
/// at its deadline even while frozen, when it cannot record anything. A
/// reign still open at the end of the history ends at the last event's time
/// (or its deadline, if earlier).
pub(crate) fn reigns(events: &[Event], election: &str) -> Vec<Reign> {
    struct Open {
        epoch: Option<u64>,
        from: u64,
        deadline: Option<u64>,
    }
    let end = events.last().map(|e| e.time).unwrap_or(0);
    let close = |o: &Open, at: u64| at.min(o.deadline.unwrap_or(u64::MAX)).max(o.from);
    let mut open: BTreeMap<String, Open> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Some(ElectionOp::Role { election: el, role, epoch, deadline }) = e.op.family::<ElectionOp>() else {
            continue;
        };
        if el != election || e.kind != EventKind::Ok {
            continue;
        }
        let p = e.process.clone();
        match role {
            Role::Leader => {
                if let Some(o) = open.get_mut(&p) {
                    let lapsed = o.deadline.is_some_and(|d| d < e.time);
                    if o.epoch == *epoch && !lapsed {
                        // A confirmed renewal of the same term.
                        o.deadline = *deadline;
                        continue;
                    }
                }
                if let Some(o) = open.remove(&p) {
                    out.push(Reign { process: p.clone(), epoch: o.epoch, from: o.from, to: close(&o, e.time) });
                }
                open.insert(p, Open { epoch: *epoch, from: e.time, deadline: *deadline });
            }
            Role::Follower | Role::Resigned => {
                if let Some(o) = open.remove(&p) {
                    out.push(Reign { process: p, epoch: o.epoch, from: o.from, to: close(&o, e.time) });
                }
            }
        }
    }
    for (process, o) in open {
        out.push(Reign { process, epoch: o.epoch, from: o.from, to: close(&o, end) });
    }
    out.sort_by(|a, b| (a.from, &a.process).cmp(&(b.from, &b.process)));
    out
}

/// Split-brain windows of `election`: for every pair of reigns of different
/// nodes that overlap, the overlap length (only non-zero overlaps).
pub(crate) fn record_split_brain(events: &[Event], election: &str, out: &mut Histograms) -> Vec<u64> {
    out.declare(SPLIT_BRAIN);
    let rs = reigns(events, election);
    let mut windows = Vec::new();
    for (i, a) in rs.iter().enumerate() {
        for b in &rs[i + 1..] {
            if a.process == b.process {
                continue;
            }
            let from = a.from.max(b.from);
            let to = a.to.min(b.to);
            if to > from {
                windows.push(to - from);
                out.record(SPLIT_BRAIN, to - from);
            }
        }
    }
    windows
}

/// Time from `at` until a node other than `old_leader` begins a reign of
/// `election` (at or after `at`); `None` if none did.
pub(crate) fn time_to_new_leader(events: &[Event], election: &str, old_leader: &str, at: u64) -> Option<u64> {
    reigns(events, election).into_iter().filter(|r| r.process != old_leader && r.from >= at).map(|r| r.from - at).min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FaultRecord, History};
    use crate::nemesis::FaultKind;

    #[test]
    fn split_brain_and_failover_from_roles() {
        let h = History::new();
        let role = |r, ep| ElectionOp::Role { election: "e".into(), role: r, epoch: Some(ep), deadline: None };
        h.observe_at(0, "a", role(Role::Leader, 1));
        h.fault_at(100, FaultRecord::on_client(FaultKind::ClientPause, "a", false, 1500));
        h.observe_at(510, "b", role(Role::Leader, 2));
        h.observe_at(1600, "a", role(Role::Follower, 1));
        h.observe_at(2000, "b", role(Role::Resigned, 2));
        let ev = h.events();
        let mut hs = Histograms::new();
        assert_eq!(record_split_brain(&ev, "e", &mut hs), vec![1090]);
        assert_eq!(time_to_new_leader(&ev, "e", "a", 100), Some(410));
        assert_eq!(time_to_new_leader(&ev, "e", "b", 600), None);
    }

    #[test]
    fn a_self_fencing_leader_stops_at_its_deadline() {
        let h = History::new();
        let role = |r, ep, d| ElectionOp::Role { election: "e".into(), role: r, epoch: Some(ep), deadline: d };
        h.observe_at(0, "a", role(Role::Leader, 1, Some(400)));
        h.observe_at(100, "a", role(Role::Leader, 1, Some(500))); // renewed
        h.fault_at(150, FaultRecord::on_client(FaultKind::ClientPause, "a", false, 1500));
        h.observe_at(505, "b", role(Role::Leader, 2, Some(905)));
        // a resumes at 1650 and only then records what it stopped believing at 500.
        h.observe_at(1650, "a", role(Role::Follower, 1, None));
        let ev = h.events();
        let rs = reigns(&ev, "e");
        assert_eq!((rs[0].from, rs[0].to), (0, 500));
        let mut hs = Histograms::new();
        assert_eq!(record_split_brain(&ev, "e", &mut hs), Vec::<u64>::new());
        // b's reign ends at the history's end (1650) capped by its deadline 905.
        assert_eq!(rs[1].to, 905);
    }
}
