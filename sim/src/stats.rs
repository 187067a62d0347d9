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

use crate::history::{Event, EventKind, Op};

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

/// A holder whose lease is no longer trustworthy still believes it holds, so
/// its write could still land (ms): the overlap of believed holds.
pub(crate) const UNSAFE: Metric = Metric::new("unsafe-window", Unit::Ms);
/// From acquire invoke to its `Ok` completion (ms).
pub(crate) const ACQUIRE_LATENCY: Metric = Metric::new("acquire-latency", Unit::Ms);

/// The shared histograms with what each measures (for the report and
/// README); a family lists its own with `Family::metrics`.
pub(crate) const HISTOGRAM_MEANINGS: &[(Metric, &str)] = &[
    (
        UNSAFE,
        "how long a lock holder kept believing it held a lease another client had since acquired (ms): the window in which a stale holder's write could still land, and what fencing is for",
    ),
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
pub(crate) fn summarize(unit: Unit, h: &Histogram<u64>) -> Summary {
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
pub(crate) fn record_latency(events: &[Event], metric: Metric, is_call: impl Fn(&Op) -> bool, out: &mut Histograms) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_exact_for_small_values() {
        const SAMPLED: Metric = Metric::new("sampled", Unit::Ms);
        const EMPTY: Metric = Metric::new("empty", Unit::Count);
        let mut h = Histograms::new();
        for v in 1..=100 {
            h.record(SAMPLED, v);
        }
        h.declare(EMPTY);
        let s = h.summaries();
        let f = &s[SAMPLED.name];
        assert_eq!((f.count, f.min, f.p50, f.p90, f.p99, f.max), (100, 1, 50, 90, 99, 100));
        assert_eq!(f.unit, Unit::Ms);
        assert_eq!(s[EMPTY.name].count, 0);
        let mut m = Histograms::new();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.summaries()[SAMPLED.name].count, 200);
        let json = serde_json::to_string(&m.percentiles()).unwrap();
        assert!(json.contains("\"p99\":99"), "{json}");
        assert!(json.contains("\"unit\":\"ms\""), "{json}");
        let back = Histograms::from_counts(&m.counts(), &m.units()).unwrap();
        assert_eq!(back.summaries(), m.summaries());
        assert!(Histograms::from_counts(&m.counts(), &BTreeMap::new()).is_err());
    }
}
