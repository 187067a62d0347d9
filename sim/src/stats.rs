//! HdrHistograms of what the simulation measured, each in its own unit.
//!
//! Checkers say *whether* an invariant held; these histograms say *how much*
//! room the system had: how long two nodes both believed they led, how long
//! a stale holder could still have written, how fast leadership moved. Each
//! histogram is a [`Metric`]: a fixed name (see the constants) so that
//! `explore --json`, the report and the README all speak of the same thing,
//! and its [`Unit`], declared with it.
//!
//! Histograms are kept in a `BTreeMap` so that every output lists them in
//! the same order in every run.

use core::fmt;
use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::history::{Event, EventKind, Op, Role};

/// What a histogram's samples count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Unit {
    /// Simulated milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Requests.
    #[serde(rename = "requests")]
    Requests,
    /// A percentage of a limit.
    #[serde(rename = "% of limit")]
    PercentOfLimit,
    /// Occurrences.
    #[serde(rename = "count")]
    Count,
}

impl Unit {
    /// How summaries, tables and plots print it.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Requests => "requests",
            Unit::PercentOfLimit => "% of limit",
            Unit::Count => "count",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.label())
    }
}

/// A histogram's name and the unit of its samples, declared together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Metric {
    /// Its name, in kebab case (`acquire-latency`).
    pub name: &'static str,
    /// What its samples count.
    pub unit: Unit,
}

impl Metric {
    /// The histogram `name`, counted in `unit`.
    pub const fn new(name: &'static str, unit: Unit) -> Metric {
        Metric { name, unit }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name)
    }
}

/// Two election nodes both believe they lead (ms).
pub const SPLIT_BRAIN: Metric = Metric::new("split-brain-window", Unit::Ms);
/// A holder whose lease is no longer trustworthy still believes it holds, so
/// its write could still land (ms): the overlap of believed holds.
pub const UNSAFE: Metric = Metric::new("unsafe-window", Unit::Ms);
/// From a leader's stall/crash until another node leads (ms).
pub const FAILOVER: Metric = Metric::new("failover", Unit::Ms);
/// From a leader's `stop()` until another node leads (ms).
pub const HANDOVER: Metric = Metric::new("hand-over", Unit::Ms);
/// From acquire invoke to its `Ok` completion (ms).
pub const ACQUIRE_LATENCY: Metric = Metric::new("acquire-latency", Unit::Ms);

/// The shared histograms with what each measures (for the report and
/// README); a family lists its own with `Family::metrics`.
pub const HISTOGRAM_MEANINGS: &[(Metric, &str)] = &[
    (SPLIT_BRAIN, "how long two election nodes both believed they were leader (ms), one sample per overlap"),
    (
        UNSAFE,
        "how long a lock holder kept believing it held a lease another client had since acquired (ms): the window in which a stale holder's write could still land, and what fencing is for",
    ),
    (FAILOVER, "from the moment a leader stalls (paused, partitioned, crashed) until another node leads (ms)"),
    (HANDOVER, "from a leader's stop() until another node leads (ms)"),
    (ACQUIRE_LATENCY, "from an acquire's invoke to its successful completion (ms)"),
];

/// A bound a histogram's samples promise to stay within (a limit a family
/// declares): a dashed line on the report's plots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The histogram it bounds.
    pub histogram: Metric,
    /// The bound, in the histogram's unit.
    pub value: u64,
    /// The legend, e.g. `limit: 5 per 1000 ms`.
    pub label: String,
}

/// A compact summary: what `explore --json` prints for each histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest sample.
    pub max: u64,
    /// Unit of every figure but `count` (`ms`, `requests`...).
    pub unit: Unit,
}

/// A full percentile listing (for the report's JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// The compact summary.
    #[serde(flatten)]
    pub summary: Summary,
    /// Mean of the samples.
    pub mean: f64,
    /// `(percentile, value)` at 0, 10, 25, 50, 75, 90, 95, 99, 99.9, 100.
    pub percentiles: Vec<(f64, u64)>,
}

/// Named histograms, merged across seeds.
#[derive(Debug, Clone, Default)]
pub struct Histograms {
    /// By name: the unit its metric declared, and the samples.
    map: BTreeMap<String, (Unit, Histogram<u64>)>,
}

fn fresh() -> Histogram<u64> {
    // Three significant figures, auto-resizing: values up to 2047 are exact,
    // which covers every millisecond figure of a lease-sized scenario.
    // `new` only fails for a precision above 5 significant figures.
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

impl Histograms {
    /// No histograms yet.
    pub fn new() -> Histograms {
        Histograms::default()
    }

    fn entry(&mut self, name: &str, unit: Unit) -> &mut Histogram<u64> {
        &mut self.map.entry(name.to_string()).or_insert_with(|| (unit, fresh())).1
    }

    /// Records one sample into the histogram `metric` (created on first use).
    pub fn record(&mut self, metric: Metric, value: u64) {
        self.entry(metric.name, metric.unit).saturating_record(value);
    }

    /// Makes sure `metric` is listed even with no samples (count 0).
    pub fn declare(&mut self, metric: Metric) {
        self.entry(metric.name, metric.unit);
    }

    /// Adds every sample of `other` (explore merges seeds this way).
    pub fn merge(&mut self, other: &Histograms) {
        for (name, (unit, h)) in &other.map {
            // Auto-resizing histograms of the same precision always add.
            let _ = self.entry(name, *unit).add(h);
        }
    }

    /// The unit of the histogram `name`, if it exists.
    pub fn unit(&self, name: &str) -> Option<Unit> {
        self.map.get(name).map(|(unit, _)| *unit)
    }

    /// Compact summaries by name.
    pub fn summaries(&self) -> BTreeMap<String, Summary> {
        self.map.iter().map(|(n, (unit, h))| (n.clone(), summarize(*unit, h))).collect()
    }

    /// Full percentile listings by name.
    pub fn percentiles(&self) -> BTreeMap<String, Percentiles> {
        self.map
            .iter()
            .map(|(n, (unit, h))| {
                let qs = [0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0];
                let percentiles = if h.is_empty() {
                    Vec::new()
                } else {
                    qs.iter().map(|q| (*q, h.value_at_quantile(q / 100.0))).collect()
                };
                let mean = if h.is_empty() { 0.0 } else { h.mean() };
                (n.clone(), Percentiles { summary: summarize(*unit, h), mean, percentiles })
            })
            .collect()
    }

    /// Every histogram's recorded values with their counts (a value stands
    /// for its bucket: recording it again lands in the same bucket), by
    /// name; a declared histogram without samples has none. What a shard
    /// file carries, so that histograms merge exactly.
    pub fn counts(&self) -> BTreeMap<String, Vec<(u64, u64)>> {
        self.map
            .iter()
            .map(|(n, (_, h))| {
                (n.clone(), h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect())
            })
            .collect()
    }

    /// Every histogram's unit, by name (what a shard file carries beside
    /// [`Histograms::counts`]).
    pub fn units(&self) -> BTreeMap<String, Unit> {
        self.map.iter().map(|(n, (unit, _))| (n.clone(), *unit)).collect()
    }

    /// The histograms [`Histograms::counts`] and [`Histograms::units`]
    /// describe; `Err` names a histogram without a unit.
    pub fn from_counts(
        counts: &BTreeMap<String, Vec<(u64, u64)>>,
        units: &BTreeMap<String, Unit>,
    ) -> Result<Histograms, String> {
        let mut h = Histograms::new();
        for (name, values) in counts {
            let unit = units.get(name).ok_or_else(|| format!("histogram {name} has no unit"))?;
            let hist = h.entry(name, *unit);
            for &(value, n) in values {
                let _ = hist.record_n(value, n);
            }
        }
        Ok(h)
    }

    /// Whether no histogram has any sample.
    pub fn is_empty(&self) -> bool {
        self.map.values().all(|(_, h)| h.is_empty())
    }
}

/// The compact summary of one histogram.
pub fn summarize(unit: Unit, h: &Histogram<u64>) -> Summary {
    if h.is_empty() {
        return Summary { count: 0, min: 0, p50: 0, p90: 0, p99: 0, max: 0, unit };
    }
    Summary {
        count: h.len(),
        min: h.min(),
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        max: h.max(),
        unit,
    }
}

// ---------------------------------------------------------------------------
// Measurements derived from a history. Scenarios call the ones that apply.

/// Latency of the operations `is_call` picks: invoke → `Ok`, recorded as
/// `metric` (a family's acquire latency).
pub fn record_latency(events: &[Event], metric: Metric, is_call: impl Fn(&Op) -> bool, out: &mut Histograms) {
    out.declare(metric);
    let mut invoked: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events {
        if !is_call(&e.op) {
            continue;
        }
        match e.kind {
            EventKind::Invoke => {
                invoked.insert(e.op_id.0, e.time);
            }
            EventKind::Ok => {
                if let Some(t0) = invoked.remove(&e.op_id.0) {
                    out.record(metric, e.time.saturating_sub(t0));
                }
            }
            _ => {
                invoked.remove(&e.op_id.0);
            }
        }
    }
}

/// One leadership interval: a node believed it led over `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reign {
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
pub fn reigns(events: &[Event], election: &str) -> Vec<Reign> {
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
        let Op::Role { election: el, role, epoch, deadline } = &e.op else { continue };
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
pub fn record_split_brain(events: &[Event], election: &str, out: &mut Histograms) -> Vec<u64> {
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
pub fn time_to_new_leader(events: &[Event], election: &str, old_leader: &str, at: u64) -> Option<u64> {
    reigns(events, election).into_iter().filter(|r| r.process != old_leader && r.from >= at).map(|r| r.from - at).min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FaultRecord, History};
    use crate::nemesis::FaultKind;

    #[test]
    fn summaries_are_exact_for_small_values() {
        let mut h = Histograms::new();
        for v in 1..=100 {
            h.record(FAILOVER, v);
        }
        h.declare(SPLIT_BRAIN);
        let s = h.summaries();
        let f = &s[FAILOVER.name];
        assert_eq!((f.count, f.min, f.p50, f.p90, f.p99, f.max), (100, 1, 50, 90, 99, 100));
        assert_eq!(f.unit, Unit::Ms);
        assert_eq!(s[SPLIT_BRAIN.name].count, 0);
        let mut m = Histograms::new();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.summaries()[FAILOVER.name].count, 200);
        let json = serde_json::to_string(&m.percentiles()).unwrap();
        assert!(json.contains("\"p99\":99"), "{json}");
        assert!(json.contains("\"unit\":\"ms\""), "{json}");
        let back = Histograms::from_counts(&m.counts(), &m.units()).unwrap();
        assert_eq!(back.summaries(), m.summaries());
        assert!(Histograms::from_counts(&m.counts(), &BTreeMap::new()).is_err());
    }

    #[test]
    fn split_brain_and_failover_from_roles() {
        let h = History::new();
        let role = |r, ep| Op::Role { election: "e".into(), role: r, epoch: Some(ep), deadline: None };
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
        let role = |r, ep, d| Op::Role { election: "e".into(), role: r, epoch: Some(ep), deadline: d };
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
