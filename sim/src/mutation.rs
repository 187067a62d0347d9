//! The mutation table: how quickly the property search catches each broken
//! variant and documented non-guarantee, and how small it shrinks it.
//!
//! A harness is only trusted if it catches what it is meant to catch. The
//! broken variants (`lock-naive`, `fencing-unfenced`, the naive limiters,
//! `election-no-epoch`, `redlock-no-validity`) are this project's mutants,
//! and the non-guarantees (fence-counter loss, a restart under a held lock,
//! a clock step on a minority of Redlock masters) are faults the correct
//! primitives document they cannot survive. For each
//! ([`crate::search::targets`]) the table reports, over several base seeds
//! of proptest's RNG:
//!
//! - the invariant that caught it;
//! - the cases the search needed to find it (median, and the range);
//! - the size of the shrunk counterexample ([`Plan::size`]: faults +
//!   actors; median and smallest);
//! - the wall time to the first counterexample (median), measured outside
//!   the simulation with `std::time::Instant`, servers already started;
//! - the smallest shrunk counterexample, with the command that replays it.
//!
//! `rp-sim report` writes it into `reports/README.md` and `report.json`.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::plan::Plan;
use crate::progress::{Meter, Progress};
use crate::search::{self, SearchConfig, SearchTarget, TargetKind};
use crate::servers::{Servers, SetupError};

/// Cases a mutation-table search may try before it counts as "not found".
pub(crate) const CASE_CAP: u32 = 500;
/// Simulation runs a mutation-table search may spend shrinking.
pub(crate) const SHRINK_RUNS: u32 = 200;

/// One base seed's search.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SearchRun {
    /// proptest's base seed.
    pub base_seed: u64,
    /// Cases to the first counterexample (`None`: none within [`CASE_CAP`]).
    pub cases: Option<u32>,
    /// Size of the shrunk counterexample.
    pub shrunk_size: Option<usize>,
    /// Size of the first counterexample, before shrinking.
    pub first_size: Option<usize>,
    /// Wall time to the first counterexample (ms).
    pub wall_to_first_ms: Option<f64>,
    /// Wall time including shrinking (ms).
    pub wall_total_ms: f64,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MutationRow {
    /// Target name.
    pub target: String,
    /// `broken variant` or `non-guarantee`.
    pub kind: String,
    /// The scenario its plans run.
    pub scenario: String,
    /// The invariant that caught it.
    pub invariant: String,
    /// What goes wrong.
    pub what: String,
    /// Every base seed's search.
    pub runs: Vec<SearchRun>,
    /// Median cases to the first counterexample (over the runs that found one).
    pub cases_median: Option<u32>,
    /// Fewest and most cases.
    pub cases_range: Option<(u32, u32)>,
    /// Median shrunk size.
    pub size_median: Option<usize>,
    /// Smallest shrunk size.
    pub size_min: Option<usize>,
    /// Median wall time to the first counterexample (ms).
    pub wall_to_first_median_ms: Option<f64>,
    /// The smallest shrunk counterexample (first base seed among equals).
    pub smallest: Option<Plan>,
    /// Its violation.
    pub smallest_violation: Option<String>,
    /// The command that replays it.
    pub replay: Option<String>,
}

fn median<T: Copy + PartialOrd>(values: &[T]) -> Option<T> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(core::cmp::Ordering::Equal));
    // Lower median for an even count: a value that was actually measured.
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// Runs the searches of one target over `base_seeds`.
pub(crate) fn row(
    target: &SearchTarget,
    servers: &mut Servers,
    base_seeds: &[u64],
    meter: &mut Meter,
) -> Result<MutationRow, SetupError> {
    let space = (target.space)();
    let mut runs = Vec::new();
    let mut smallest: Option<(usize, Plan, String)> = None;
    for &base_seed in base_seeds {
        let config = SearchConfig { base_seed, cases: CASE_CAP, max_shrink_iters: SHRINK_RUNS, persistence: None };
        meter.say(format!("searching {} (base seed {base_seed})", target.name));
        let report = search::find(target, servers, config)?;
        meter.step(report.finding.is_some());
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        runs.push(SearchRun {
            base_seed,
            cases: report.finding.as_ref().map(|f| f.cases),
            shrunk_size: report.finding.as_ref().map(|f| f.size()),
            first_size: report.finding.as_ref().map(|f| f.first.size()),
            wall_to_first_ms: report.finding.as_ref().map(|f| ms(f.to_first)),
            wall_total_ms: ms(report.wall),
        });
        if let Some(f) = report.finding {
            if smallest.as_ref().is_none_or(|(size, _, _)| f.size() < *size) {
                smallest = Some((f.size(), f.shrunk, f.violation.to_string()));
            }
        }
    }
    let cases: Vec<u32> = runs.iter().filter_map(|r| r.cases).collect();
    let sizes: Vec<usize> = runs.iter().filter_map(|r| r.shrunk_size).collect();
    let walls: Vec<f64> = runs.iter().filter_map(|r| r.wall_to_first_ms).collect();
    Ok(MutationRow {
        target: target.name.to_string(),
        kind: match target.kind {
            TargetKind::BrokenVariant => "broken variant".into(),
            TargetKind::NonGuarantee => "non-guarantee".into(),
        },
        scenario: space.scenario.to_string(),
        invariant: target.invariant.to_string(),
        what: target.what.to_string(),
        cases_median: median(&cases),
        cases_range: cases.iter().min().copied().zip(cases.iter().max().copied()),
        size_median: median(&sizes),
        size_min: sizes.iter().min().copied(),
        wall_to_first_median_ms: median(&walls),
        replay: smallest.as_ref().map(|(_, p, _)| p.replay_command()),
        smallest_violation: smallest.as_ref().map(|(_, _, v)| v.clone()),
        smallest: smallest.map(|(_, p, _)| p),
        runs,
    })
}

/// Every target's row. Starts the five servers the largest scenario needs
/// first, so no wall time includes starting a process.
pub(crate) fn table(servers: &mut Servers, base_seeds: &[u64]) -> Result<Vec<MutationRow>, SetupError> {
    servers.ensure(5)?;
    let searches = search::targets().count() as u64 * base_seeds.len() as u64;
    let mut meter = Meter::new(Progress::for_stderr(), "mutation table", "searches", searches);
    let rows = search::targets().map(|t| row(t, servers, base_seeds, &mut meter)).collect();
    meter.finish();
    rows
}

fn opt<T: core::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "not found".to_string(), |v| v.to_string())
}

/// The Markdown section for `reports/README.md`.
pub(crate) fn markdown(rows: &[MutationRow], base_seeds: &[u64]) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "## Mutation table: what the property search catches\n");
    let _ = writeln!(
        m,
        "Every broken variant and documented non-guarantee, searched by proptest over random fault \
         schedules and workloads (`sim/src/search/`), against real redis-server processes, from \
         {} base seeds of proptest's RNG ({}), at most {CASE_CAP} cases and {SHRINK_RUNS} shrinking runs each. \
         *Cases* counts plans run up to and including the first counterexample; *size* is the shrunk \
         counterexample's faults (nemesis + workload-injected) plus actors; wall time is to the first \
         counterexample, servers already started. Medians over the base seeds (range or minimum in brackets).\n",
        base_seeds.len(),
        base_seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(m, "| target | kind | caught by | cases to find (median [min–max]) | shrunk size (median [min]) | wall to first counterexample (median) |");
    let _ = writeln!(m, "|---|---|---|---:|---:|---:|");
    for r in rows {
        let found = r.runs.iter().filter(|x| x.cases.is_some()).count();
        let cases = match (r.cases_median, r.cases_range) {
            (Some(med), Some((lo, hi))) => format!("{med} [{lo}–{hi}]"),
            _ => "not found".into(),
        };
        let missed = if found < r.runs.len() {
            format!(" ({} of {} seeds missed)", r.runs.len() - found, r.runs.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            m,
            "| `{}` | {} | `{}` | {}{} | {} [{}] | {} |",
            r.target,
            r.kind,
            r.invariant,
            cases,
            missed,
            opt(r.size_median),
            opt(r.size_min),
            r.wall_to_first_median_ms.map_or("-".into(), |ms| format!("{ms:.0} ms")),
        );
    }
    let _ = writeln!(m);
    let _ = writeln!(m, "The smallest counterexample of each, and the command that replays it:\n");
    for r in rows {
        let (Some(p), Some(replay)) = (&r.smallest, &r.replay) else { continue };
        let _ = writeln!(
            m,
            "- `{}` ({}): {}",
            r.target,
            r.what,
            r.smallest_violation.as_deref().unwrap_or("").replace('|', "\\|")
        );
        let _ = writeln!(m, "\n  ```text");
        for line in p.to_string().lines() {
            let _ = writeln!(m, "  {line}");
        }
        let _ = writeln!(m, "  ```\n\n  ```sh\n  {replay}\n  ```\n");
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_a_measured_value() {
        assert_eq!(median(&[5, 1, 3]), Some(3));
        assert_eq!(median(&[4, 1, 3, 2]), Some(2));
        assert_eq!(median::<u32>(&[]), None);
        assert_eq!(median(&[2.5, 1.0]), Some(1.0));
    }
}
