//! The reference's three election figures (cases 25, 26, 27: hand-over,
//! failover, split-brain window) measured in simulated time: the
//! election's own section of `rp-sim report` ([`report_section`]).

use core::time::Duration;
use std::fmt::Write as _;

use serde::Serialize;

use super::aimed::Aimed;
use super::checks::terms;
use super::markers::Marker;
use super::plan::{ElectionPlan, LeaderStall};
use super::reigns::record_split_brain;
use super::run::{measure, run_plan};
use super::{ElectionVariant, CAMPAIGN_MS, ELECTION_NAME, LEASE_MS, RENEW_MS, RESOURCE};
use crate::family::{ReportJson, ReportSection};
use crate::history::{Op, WriteResult};
use crate::nemesis::Schedule;
use crate::servers::{Servers, SetupError};
use crate::stats::Histograms;
use crate::world::WorldConfig;

/// Introduction printed above the figures table.
pub(crate) const FIGURES_INTRO: &str =
    "Two nodes, the reference's settings (lease 400 ms, renew 100 ms, campaign 25 ms), \
1 ms one-way links, no nemesis; node-0 leads, then at 1000 + 7k ms (k = 0..runs, so the fault \
falls at every phase of the renew cycle) it either calls stop() (clean hand-over, case 25), \
freezes for 5000 ms (failover, case 26), or freezes for 1500 ms (split-brain window, case 27). \
The split-brain window is how long both nodes believed they led: under self-fencing \
(`election`) the stalled leader stops believing at its lease's local deadline, before anyone \
else can be elected, so there is none; under the reference's renew-tick demotion \
(`election-renew-only`) it believes until its first renewal after the stall is refused. \
In both, the stalled leader's late write carries the old epoch and the fenced store refuses it. \
The reference bounds failover between ttl - renew and ttl + campaign (300..425 ms here): the \
reference's own runs stalled right after a renewal, hence its narrow 406..415 ms.";

/// One row of the figures table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FigureRow {
    /// `election` or `election-renew-only`.
    pub variant: String,
    /// Which figure.
    pub figure: String,
    /// Runs measured.
    pub runs: u64,
    /// Smallest (ms); `None` if no run produced the figure.
    pub min: Option<u64>,
    /// Median (ms).
    pub median: Option<u64>,
    /// Largest (ms).
    pub max: Option<u64>,
    /// Every run's value (ms; 0 = none), in run order.
    pub values: Vec<u64>,
    /// The reference's figure.
    pub reference: String,
    /// Stale writes refused by the fenced store, over all runs (case 27 only).
    pub stale_writes_refused: u64,
    /// `election` checker violations over all runs (must be 0).
    pub violations: u64,
}

/// Which of the three figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figure {
    /// Case 25: `stop()` on the leader; time until the other leads.
    HandOver,
    /// Case 26: the leader stalls 5 s; time until the other leads.
    Failover,
    /// Case 27: the leader stalls 1.5 s; how long both believed they led.
    SplitBrain,
}

impl Figure {
    fn label(self) -> &'static str {
        match self {
            Figure::HandOver => "clean hand-over (case 25)",
            Figure::Failover => "failover, stall 5000 ms (case 26)",
            Figure::SplitBrain => "split-brain window, stall 1500 ms (case 27)",
        }
    }

    fn reference(self) -> &'static str {
        match self {
            Figure::HandOver => "25 / 26 / 28 ms",
            Figure::Failover => "406 / 410 / 415 ms",
            Figure::SplitBrain => "1091 / 1192 / 1198 ms",
        }
    }
}

/// The measurement of one figure run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FigureRun {
    /// The figure's value in simulated ms (0 when there is no window).
    pub value: Option<u64>,
    /// Stale (lower-epoch) writes the fenced store refused.
    pub refused: u64,
    /// Election violations (must be none).
    pub violations: usize,
    /// The history digest.
    pub digest: crate::history::Digest,
}

/// Runs figure `figure` for `variant`, run number `k`.
pub(crate) fn figure_run(
    servers: &mut Servers,
    variant: ElectionVariant,
    figure: Figure,
    k: u64,
) -> Result<FigureRun, SetupError> {
    let at = 1000 + 7 * k;
    let (stall, stop, end) = match figure {
        Figure::HandOver => (None, Some(at), at + 600),
        Figure::Failover => (Some((at, 5000)), None, at + 5500),
        Figure::SplitBrain => (Some((at, 1500)), None, at + 2000),
    };
    let plan = ElectionPlan {
        nodes: 2,
        lease_ms: LEASE_MS,
        renew_ms: RENEW_MS,
        campaign_ms: CAMPAIGN_MS,
        length_ms: end,
        stagger_ms: 10,
        stall: stall.map(|(at, ms)| LeaderStall { at, ms }),
        stall_mid_write: false,
        epoch_base: None,
        stop_at: stop,
        slow_first_campaign: false,
        slow_renewals: None,
    };
    let config = WorldConfig::new(k).latency(Duration::from_millis(1), Duration::from_millis(1));
    let (run, markers) = run_plan(servers, k, variant, &plan, config, Schedule::none(), Aimed::default())?;
    let events = run.history.events();
    let mut h = Histograms::new();
    let (failovers, handovers) = measure(&events, &markers, LEASE_MS, &mut h);
    let value = match figure {
        Figure::HandOver => handovers.first().copied(),
        Figure::Failover => failovers.first().copied(),
        Figure::SplitBrain => {
            if markers.iter().any(|m| matches!(m, Marker::Stall { .. })) {
                Some(record_split_brain(&events, ELECTION_NAME, &mut h).into_iter().max().unwrap_or(0))
            } else {
                None
            }
        }
    };
    let refused =
        events.iter().filter(|e| matches!(e.op, Op::Write { result: Some(WriteResult::Rejected { .. }), .. })).count()
            as u64;
    let violations = terms::check(&events, ELECTION_NAME, RESOURCE, variant != ElectionVariant::RenewOnly).len();
    Ok(FigureRun { value, refused, violations, digest: run.history.digest() })
}

/// All six rows (two variants × three figures), `runs` runs each.
pub(crate) fn figure_rows(servers: &mut Servers, runs: u64) -> Result<Vec<FigureRow>, SetupError> {
    let mut rows = Vec::new();
    for variant in [ElectionVariant::Election, ElectionVariant::RenewOnly] {
        for figure in [Figure::HandOver, Figure::Failover, Figure::SplitBrain] {
            let mut values = Vec::new();
            let mut refused = 0;
            let mut violations = 0;
            for k in 0..runs {
                let r = figure_run(servers, variant, figure, k)?;
                refused += r.refused;
                violations += r.violations as u64;
                if let Some(v) = r.value {
                    values.push(v);
                }
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            rows.push(FigureRow {
                variant: variant.scenario().to_string(),
                figure: figure.label().to_string(),
                runs,
                min: sorted.first().copied(),
                median: sorted.get(sorted.len() / 2).copied(),
                max: sorted.last().copied(),
                values,
                reference: figure.reference().to_string(),
                stale_writes_refused: if figure == Figure::SplitBrain { refused } else { 0 },
                violations,
            });
        }
    }
    Ok(rows)
}

/// Runs of each figure in the report: ten, so that the fault falls at
/// every phase of the renew cycle (100 ms, in steps of 7 ms).
const REPORT_RUNS: u64 = 10;

/// The figures' section of `rp-sim report`: its table in the Markdown, its
/// rows as `election_figures` in the JSON.
#[derive(Debug)]
struct FiguresSection(Vec<FigureRow>);

/// Measures the figures ([`REPORT_RUNS`] runs each) for the report.
pub(super) fn report_section(servers: &mut Servers) -> Result<Box<dyn ReportSection>, SetupError> {
    Ok(Box::new(FiguresSection(figure_rows(servers, REPORT_RUNS)?)))
}

/// `v` in ms, or `-` when no run produced it.
fn ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{v} ms"))
}

impl ReportSection for FiguresSection {
    fn markdown(&self, m: &mut String) {
        let rows = &self.0;
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(m, "## The reference's election figures, in simulated time\n");
        let _ = writeln!(m, "{FIGURES_INTRO}\n");
        let _ = writeln!(m, "| variant | figure | runs | min | median | max | reference (min / median / max) |");
        let _ = writeln!(m, "|---|---|---:|---:|---:|---:|---|");
        for f in rows {
            let _ = writeln!(
                m,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                f.variant,
                f.figure,
                f.runs,
                ms(f.min),
                ms(f.median),
                ms(f.max),
                f.reference
            );
        }
        let _ = writeln!(m);
        let refused: u64 = rows.iter().map(|f| f.stale_writes_refused).sum();
        let violations: u64 = rows.iter().map(|f| f.violations).sum();
        let _ = writeln!(
            m,
            "Over the split-brain runs of both variants, the fenced store refused {refused} stale \
             (lower-epoch) writes; the `election` checker found {violations} violations in all figure runs.\n"
        );
    }

    fn json(&self, out: &mut ReportJson<'_, '_>) -> serde_json::Result<()> {
        out.entry("election_figures", &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_renders_its_rows_and_sums() {
        let row = |variant: &str, min, refused| FigureRow {
            variant: variant.into(),
            figure: Figure::SplitBrain.label().into(),
            runs: 2,
            min,
            median: min,
            max: min,
            values: min.into_iter().collect(),
            reference: Figure::SplitBrain.reference().into(),
            stale_writes_refused: refused,
            violations: 0,
        };
        let section = FiguresSection(vec![row("election", Some(0), 2), row("election-renew-only", None, 3)]);
        let mut m = String::new();
        section.markdown(&mut m);
        assert!(m.starts_with("## The reference's election figures, in simulated time\n\n"), "{m}");
        assert!(m.contains("| `election` | split-brain window, stall 1500 ms (case 27) | 2 | 0 ms | 0 ms | 0 ms | 1091 / 1192 / 1198 ms |\n"), "{m}");
        assert!(
            m.contains("| `election-renew-only` | split-brain window, stall 1500 ms (case 27) | 2 | - | - | - |"),
            "{m}"
        );
        assert!(m.ends_with("the fenced store refused 5 stale (lower-epoch) writes; the `election` checker found 0 violations in all figure runs.\n\n"), "{m}");
        let mut empty = String::new();
        FiguresSection(Vec::new()).markdown(&mut empty);
        assert_eq!(empty, "");

        let mut bytes = Vec::new();
        let mut serializer =
            serde_json::Serializer::with_formatter(&mut bytes, serde_json::ser::PrettyFormatter::new());
        let mut out = ReportJson::open(&mut serializer).unwrap();
        FiguresSection(vec![row("election", Some(0), 2)]).json(&mut out).unwrap();
        out.close().unwrap();
        let json = String::from_utf8(bytes).unwrap();
        // The rows' own field order, as the report has always written them.
        let keys = [
            "\"election_figures\"",
            "\"variant\"",
            "\"figure\"",
            "\"runs\"",
            "\"min\"",
            "\"median\"",
            "\"max\"",
            "\"values\"",
            "\"reference\"",
            "\"stale_writes_refused\"",
            "\"violations\"",
        ];
        let at: Vec<usize> = keys.iter().map(|k| json.find(k).unwrap_or_else(|| panic!("{k} in {json}"))).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
    }
}
