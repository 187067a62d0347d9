//! `rp-sim report`: the standard scenario set, as Markdown tables and JSON.
//!
//! Writes `<out>/README.md` (what a person reads: one row per scenario, the
//! histograms, each family's own section (`crate::families::REGISTRY`:
//! figures measured in simulated time), the harness's speed, and how to
//! regenerate all of it) and `<out>/report.json` (the same data with full
//! percentiles, for tools).
//!
//! Wall-clock figures (speed) are measured with `std::time::Instant` outside
//! the simulation; they vary with the machine and load and are reported, not
//! asserted. Everything else is a function of the seeds and reproduces
//! exactly.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::exploration::Exploration;
use crate::explore::{explore_with, ExploreOptions};
use crate::family::{ReportJson, ReportSection};
use crate::history::Api;
use crate::jobs::Jobs;
use crate::progress::Progress;
use crate::scenarios::{self, Expect, Scenario};
use crate::servers::{Servers, SetupError};
use crate::stats::{Percentiles, HISTOGRAM_MEANINGS};

/// Why the report could not be written.
#[derive(Debug)]
pub(crate) enum ReportError {
    /// A scenario could not set up its servers.
    Setup(SetupError),
    /// Writing the files failed.
    Io(std::io::Error),
}

impl core::fmt::Display for ReportError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReportError::Setup(e) => write!(f, "set-up error: {e}"),
            ReportError::Io(e) => write!(f, "cannot write the report: {e}"),
        }
    }
}

impl std::error::Error for ReportError {}

impl From<SetupError> for ReportError {
    fn from(e: SetupError) -> Self {
        ReportError::Setup(e)
    }
}

impl From<std::io::Error> for ReportError {
    fn from(e: std::io::Error) -> Self {
        ReportError::Io(e)
    }
}

/// One scenario's row.
#[derive(Debug, Serialize)]
pub(crate) struct ScenarioRow {
    /// Name.
    pub scenario: String,
    /// What it should find.
    pub expected: String,
    /// Seeds run.
    pub seeds: u64,
    /// First seed.
    pub start_seed: u64,
    /// Seeds with at least one violation.
    pub violating_seeds: u64,
    /// Violations per invariant.
    pub violations: BTreeMap<String, u64>,
    /// First violating seed, with its replay command.
    pub first_violation: Option<(u64, String, String)>,
    /// Whether the result matches the expectation.
    pub as_expected: bool,
    /// Exploration throughput.
    pub seeds_per_second: f64,
    /// Simulated time over wall time, every job together.
    pub speedup: f64,
    /// Simulated time over the jobs' added-up wall time: one simulation
    /// on one core.
    pub speedup_per_job: f64,
    /// Simulations that ran at once.
    pub jobs: u32,
    /// Exploration digest.
    pub digest: String,
    /// Histograms with full percentiles.
    pub histograms: BTreeMap<String, Percentiles>,
    /// Situation → seeds that reached it (every declared situation).
    pub coverage: BTreeMap<String, u64>,
    /// Public library operation → invocations.
    pub operations: BTreeMap<Api, u64>,
}

/// The speed benchmark.
#[derive(Debug, Serialize)]
pub(crate) struct Benchmark {
    /// Scenario used.
    pub scenario: String,
    /// Runs measured.
    pub runs: u64,
    /// Simulated milliseconds per run (mean).
    pub simulated_ms_per_run: f64,
    /// Wall milliseconds per run: min, median, max.
    pub wall_ms: (f64, f64, f64),
    /// Simulated over wall time, from the median run.
    pub speedup_median: f64,
    /// Simulated over wall time, from the slowest run.
    pub speedup_worst: f64,
    /// Whether the binary was optimised (`--release`).
    pub release_build: bool,
}

/// The whole report. `report.json` is its fields in this order, each
/// family section's entries in its place (`json`).
#[derive(Debug)]
pub(crate) struct Report {
    /// Scenario rows.
    pub scenarios: Vec<ScenarioRow>,
    /// Speed benchmark, if the benchmark scenario is implemented.
    pub benchmark: Option<Benchmark>,
    /// The families' own sections, in `crate::families::REGISTRY`'s order.
    pub sections: Vec<Box<dyn ReportSection>>,
    /// proptest base seeds of the mutation table (empty: no table).
    pub mutation_seeds: Vec<u64>,
    /// The mutation table: what the property search catches, how fast, how small.
    pub mutation: Vec<crate::mutation::MutationRow>,
    /// The charts in `plots/`, one per family and histogram.
    pub plots: Vec<crate::plot::PlotFile>,
    /// Scenario → the timeline of its first violating seed, under
    /// `timelines/`.
    pub timelines: BTreeMap<String, String>,
    /// The command that regenerates this report.
    pub regenerate: String,
}

/// The scenario the speed benchmark runs: 3 simulated seconds, 3 clients.
pub(crate) const BENCHMARK_SCENARIO: &str = "lock";

fn row(s: &Scenario, ex: &Exploration) -> ScenarioRow {
    let mut violations = BTreeMap::new();
    for sr in &ex.violating {
        for v in &sr.violations {
            *violations.entry(v.invariant.to_string()).or_insert(0) += 1;
        }
    }
    let as_expected = match s.expect {
        Expect::Clean => ex.violating.is_empty(),
        Expect::Violates(inv) => violations.contains_key(inv.name()),
    };
    ScenarioRow {
        scenario: s.name.to_string(),
        expected: match s.expect {
            Expect::Clean => "clean".to_string(),
            Expect::Violates(inv) => format!("violates {inv}"),
        },
        seeds: ex.seeds,
        start_seed: ex.start_seed,
        violating_seeds: ex.violating.len() as u64,
        violations,
        first_violation: ex.violating.first().map(|sr| {
            let what = sr.violations.first().map(|v| v.to_string()).unwrap_or_default();
            (sr.seed, sr.replay.clone(), what)
        }),
        as_expected,
        seeds_per_second: ex.seeds_per_second(),
        speedup: ex.speedup(),
        speedup_per_job: ex.speedup_per_job(),
        jobs: ex.jobs,
        digest: ex.digest.to_string(),
        histograms: ex.histograms.percentiles().into_iter().filter(|(_, p)| p.summary.count > 0).collect(),
        coverage: ex.coverage.clone(),
        operations: ex.operations.clone(),
    }
}

/// Runs the benchmark scenario `runs` times and measures wall time per run.
pub(crate) fn benchmark(servers: &mut Servers, runs: u64) -> Result<Option<Benchmark>, SetupError> {
    let Some(s) = crate::scenarios::find(BENCHMARK_SCENARIO) else {
        return Ok(None);
    };
    // One warm-up run starts the servers and loads the scripts.
    s.run(servers, 0)?;
    let mut walls = Vec::new();
    let mut sim_total = 0u64;
    for seed in 0..runs {
        let t = Instant::now();
        let o = s.run(servers, seed)?;
        walls.push(t.elapsed().as_secs_f64() * 1000.0);
        sim_total += o.simulated_ms();
    }
    walls.sort_by(f64::total_cmp);
    let n = walls.len().max(1);
    let sim_per_run = sim_total as f64 / n as f64;
    let (min, med, max) = (
        walls.first().copied().unwrap_or(0.0),
        walls.get(n / 2).copied().unwrap_or(0.0),
        walls.last().copied().unwrap_or(0.0),
    );
    Ok(Some(Benchmark {
        scenario: s.name.to_string(),
        runs,
        simulated_ms_per_run: sim_per_run,
        wall_ms: (min, med, max),
        speedup_median: sim_per_run / med.max(1e-9),
        speedup_worst: sim_per_run / max.max(1e-9),
        release_build: !cfg!(debug_assertions),
    }))
}

/// Runs everything and writes `<out>/README.md` and `<out>/report.json`.
/// Returns the Markdown file's path.
///
/// `mutation_seeds` base seeds of proptest's RNG feed the mutation table
/// (`crate::mutation`); 0 leaves it out. Every run uses `servers`; each
/// scenario's exploration runs `jobs` seeds at once (more pools beside it).
pub(crate) fn write_report(
    out: &Path,
    seeds: u64,
    mutation_seeds: u64,
    jobs: Jobs,
    mut servers: Servers,
) -> Result<PathBuf, ReportError> {
    let options = ExploreOptions::new(0, seeds).jobs(jobs).progress(Progress::for_stderr());
    let mut rows = Vec::new();
    let mut explorations = Vec::new();
    for s in scenarios::all() {
        let ex = explore_with(s, &mut servers, options)?;
        rows.push(row(s, &ex));
        explorations.push((s, ex));
    }
    std::fs::create_dir_all(out)?;
    let plots = plots(&out.join("plots"), &explorations)?;
    let timelines = timelines(&out.join("timelines"), &mut servers, &explorations)?;
    let bench = benchmark(&mut servers, 20)?;
    let mut sections = Vec::new();
    for measure in crate::families::REGISTRY.iter().filter_map(|family| family.report.section) {
        sections.push(measure(&mut servers)?);
    }
    let mutation_base_seeds: Vec<u64> = (0..mutation_seeds).collect();
    let mutation = if mutation_base_seeds.is_empty() {
        Vec::new()
    } else {
        crate::mutation::table(&mut servers, &mutation_base_seeds)?
    };
    let report = Report {
        scenarios: rows,
        benchmark: bench,
        sections,
        mutation_seeds: mutation_base_seeds,
        mutation,
        plots,
        timelines,
        regenerate: format!(
            "cargo run --release -p redis-primitives-sim -- report --out {} --seeds {seeds} --mutation-seeds {mutation_seeds} --jobs {jobs}",
            out.display()
        ),
    };
    let mut json = json(&report).map_err(std::io::Error::other)?;
    json.push(b'\n');
    std::fs::write(out.join("report.json"), json)?;
    let md_path = out.join("README.md");
    std::fs::write(&md_path, markdown(&report))?;
    Ok(md_path)
}

/// `report.json`: the report's fields in declaration order, pretty-printed,
/// each family section writing its own entries in its place. (Taken apart
/// whole, so that a new field is a compile error here until it is written.)
fn json(r: &Report) -> serde_json::Result<Vec<u8>> {
    let Report { scenarios, benchmark, sections, mutation_seeds, mutation, plots, timelines, regenerate } = r;
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, serde_json::ser::PrettyFormatter::new());
    let mut out = ReportJson::open(&mut serializer)?;
    out.entry("scenarios", scenarios)?;
    out.entry("benchmark", benchmark)?;
    for section in sections {
        section.json(&mut out)?;
    }
    out.entry("mutation_seeds", mutation_seeds)?;
    out.entry("mutation", mutation)?;
    out.entry("plots", plots)?;
    out.entry("timelines", timelines)?;
    out.entry("regenerate", regenerate)?;
    out.close()?;
    Ok(bytes)
}

/// Every family's charts: its variants' histograms on shared axes.
fn plots(dir: &Path, explorations: &[(&'static Scenario, Exploration)]) -> std::io::Result<Vec<crate::plot::PlotFile>> {
    let mut families: BTreeMap<String, Vec<crate::plot::Curve<'_>>> = BTreeMap::new();
    let mut bounds = BTreeMap::new();
    for (s, ex) in explorations {
        let family = s.runs.family().to_string();
        families
            .entry(family.clone())
            .or_default()
            .push(crate::plot::Curve { scenario: s.name, histograms: &ex.histograms });
        bounds.entry(family).or_insert_with(|| s.runs.bounds());
    }
    let files = crate::plot::write_plots(dir, &families, &bounds)?;
    Ok(files.into_iter().map(|f| crate::plot::PlotFile { path: Path::new("plots").join(f.path), ..f }).collect())
}

/// The timeline of each scenario's first violating seed (re-run: an
/// exploration keeps seeds' reports, not their histories).
fn timelines(
    dir: &Path,
    servers: &mut Servers,
    explorations: &[(&'static Scenario, Exploration)],
) -> Result<BTreeMap<String, String>, ReportError> {
    let mut out = BTreeMap::new();
    for (s, ex) in explorations {
        let Some(first) = ex.violating.first() else { continue };
        let outcome = s.run(servers, first.seed)?;
        std::fs::create_dir_all(dir)?;
        let file = format!("{}-seed-{}.html", s.name, first.seed);
        std::fs::write(dir.join(&file), s.timeline(&outcome, &first.replay))?;
        out.insert(s.name.to_string(), format!("timelines/{file}"));
    }
    Ok(out)
}

/// The Markdown form of a report.
pub(crate) fn markdown(r: &Report) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "# rp-sim report\n");
    let _ = writeln!(
        m,
        "Generated by `rp-sim report`: every scenario below ran against real redis-server \
         processes inside a deterministic turmoil simulation. Everything except the speed \
         figures is a function of the seeds and reproduces exactly.\n"
    );
    let _ = writeln!(m, "Regenerate (from the workspace root):\n\n```sh\n{}\n```\n", r.regenerate);
    let _ = writeln!(m, "`report.json` holds the same data with full percentiles.\n");

    scenarios_section(&mut m, r);
    coverage_section(&mut m, r);
    operations_section(&mut m, r);
    histograms_section(&mut m, r);
    plots_section(&mut m, r);
    for section in &r.sections {
        section.markdown(&mut m);
    }
    if !r.mutation.is_empty() {
        m.push_str(&crate::mutation::markdown(&r.mutation, &r.mutation_seeds));
    }

    speed_section(&mut m, r);
    invariants_section(&mut m);
    m
}

/// The scenarios table and each first violation.
fn scenarios_section(m: &mut String, r: &Report) {
    let _ = writeln!(m, "## Scenarios\n");
    let jobs = r.scenarios.iter().map(|s| s.jobs).max().unwrap_or(1);
    let _ = writeln!(
        m,
        "Each scenario's seeds ran {jobs} at a time, each job in a thread with redis-servers of its own \
         (`--jobs`; the results are those of one job). `seeds/s` and `x real time` are the exploration's \
         (simulated time over wall time, every job together); `x real time, one job` is one simulation \
         on one core (simulated time over the jobs' wall times added up).\n"
    );
    let _ = writeln!(
        m,
        "| scenario | expected | seeds | violating seeds | violations | as expected | seeds/s | x real time | x real time, one job |"
    );
    let _ = writeln!(m, "|---|---|---:|---:|---|:---:|---:|---:|---:|");
    for s in &r.scenarios {
        let v = if s.violations.is_empty() {
            "none".to_string()
        } else {
            s.violations.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(", ")
        };
        let _ = writeln!(
            m,
            "| `{}` | {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.0} |",
            s.scenario,
            s.expected,
            s.seeds,
            s.violating_seeds,
            v,
            if s.as_expected { "yes" } else { "**NO**" },
            s.seeds_per_second,
            s.speedup,
            s.speedup_per_job
        );
    }
    let _ = writeln!(m);
    let firsts: Vec<&ScenarioRow> = r.scenarios.iter().filter(|s| s.first_violation.is_some()).collect();
    if !firsts.is_empty() {
        let _ = writeln!(m, "First violation found per scenario, and how to see it:\n");
        for s in firsts {
            if let Some((_, replay, what)) = &s.first_violation {
                let timeline = r.timelines.get(&s.scenario).map_or(String::new(), |t| format!(" ([timeline]({t}))"));
                let _ =
                    writeln!(m, "- `{}`: {}{timeline}  \n  `{} --trace`", s.scenario, what.replace('|', "\\|"), replay);
            }
        }
        let _ = writeln!(m);
    }
}

/// Seeds that reached each declared situation.
fn coverage_section(m: &mut String, r: &Report) {
    let _ = writeln!(m, "## Coverage: the situations each scenario exists to reach\n");
    let _ = writeln!(
        m,
        "Seeds (of each scenario's run above) that reached each declared situation. A situation no \
         seed reached is marked **unreached**: the scenario no longer gets where it should, and \
         `sim/tests/slow/coverage.rs` fails when its pinned seeds stop reaching one.\n"
    );
    let _ = writeln!(m, "| scenario | situation | seeds |");
    let _ = writeln!(m, "|---|---|---:|");
    for s in &r.scenarios {
        for (situation, n) in &s.coverage {
            let n = if *n == 0 { "**unreached**".to_string() } else { n.to_string() };
            let _ = writeln!(m, "| `{}` | {} | {} |", s.scenario, situation, n);
        }
    }
    let _ = writeln!(m);
}

/// Which public calls each scenario makes.
fn operations_section(m: &mut String, r: &Report) {
    let _ = writeln!(m, "## Operations: which public library calls each scenario makes\n");
    let mut ops: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for s in &r.scenarios {
        for (op, n) in &s.operations {
            ops.entry(op.name()).or_default().push((s.scenario.as_str(), *n));
        }
    }
    let _ = writeln!(m, "| operation | scenarios (calls) |");
    let _ = writeln!(m, "|---|---|");
    for (op, uses) in &ops {
        let uses: Vec<String> = uses.iter().map(|(s, n)| format!("`{s}` ({n})")).collect();
        let _ = writeln!(m, "| `{op}` | {} |", uses.join(", "));
    }
    let _ = writeln!(m);
}

/// Every histogram's percentiles.
fn histograms_section(m: &mut String, r: &Report) {
    let _ = writeln!(m, "## Histograms (simulated time)\n");
    let _ = writeln!(m, "All seeds of a scenario merged. What each measures:\n");
    // The families' own histograms first, then the ones the harness shares.
    let families = crate::families::REGISTRY.iter().flat_map(|family| family.report.histograms);
    for (name, meaning) in families.chain(HISTOGRAM_MEANINGS) {
        let _ = writeln!(m, "- **{name}**: {meaning}");
    }
    let _ = writeln!(m);
    let _ = writeln!(m, "| scenario | histogram | count | min | p50 | p90 | p99 | max | unit |");
    let _ = writeln!(m, "|---|---|---:|---:|---:|---:|---:|---:|---|");
    for s in &r.scenarios {
        for (name, p) in &s.histograms {
            let q = &p.summary;
            let _ = writeln!(
                m,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.scenario, name, q.count, q.min, q.p50, q.p90, q.p99, q.max, q.unit
            );
        }
    }
    let _ = writeln!(m);
}

/// The plots, by family.
fn plots_section(m: &mut String, r: &Report) {
    if !r.plots.is_empty() {
        let _ = writeln!(m, "## Plots\n");
        let _ = writeln!(
            m,
            "Each chart is one histogram of one family, every variant on the same axes, as a cumulative \
             distribution (the fraction of samples at or below x; a time axis is logarithmic when the \
             samples span more than {}x). A dashed line is a bound the family promises (a limiter's \
             limit).\n",
            crate::plot::LOG_SPREAD
        );
        let mut family = "";
        for p in &r.plots {
            if p.family != family {
                family = &p.family;
                let _ = writeln!(m, "### {family}\n");
            }
            let _ = writeln!(m, "![{}: {}]({})\n", p.family, p.histogram, p.path.display());
        }
    }
}

/// The benchmark and the exploration speeds.
fn speed_section(m: &mut String, r: &Report) {
    let _ = writeln!(m, "## Speed\n");
    match &r.benchmark {
        Some(b) => {
            let _ = writeln!(
                m,
                "Benchmark: scenario `{}` ({:.0} simulated ms per run, 3 clients), {} runs, {} build. \
                 Wall time measured outside the simulation with `std::time::Instant`; it includes \
                 resetting the servers between runs.\n",
                b.scenario,
                b.simulated_ms_per_run,
                b.runs,
                if b.release_build { "release" } else { "**debug** (rebuild with --release for real figures)" }
            );
            let _ = writeln!(
                m,
                "| wall ms per run (min / median / max) | x real time (median) | x real time (slowest run) | target |"
            );
            let _ = writeln!(m, "|---|---:|---:|---|");
            let _ = writeln!(
                m,
                "| {:.1} / {:.1} / {:.1} | {:.0} | {:.0} | >= 20 |",
                b.wall_ms.0, b.wall_ms.1, b.wall_ms.2, b.speedup_median, b.speedup_worst
            );
        }
        None => {
            let _ = writeln!(m, "Benchmark scenario `{BENCHMARK_SCENARIO}` is not implemented yet.");
        }
    }
    let _ = writeln!(m, "\nExplore throughput per scenario is the `seeds/s` column of the scenario table.\n");
}

/// What each invariant means.
fn invariants_section(m: &mut String) {
    let _ = writeln!(m, "## Invariants\n");
    for (name, meaning) in crate::scenarios::invariants() {
        let _ = writeln!(m, "- **{name}**: {meaning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family's section, as the report sees one.
    #[derive(Debug)]
    struct Own;

    impl ReportSection for Own {
        fn markdown(&self, m: &mut String) {
            m.push_str("## A family's own section\n\n");
        }

        fn json(&self, out: &mut ReportJson<'_, '_>) -> serde_json::Result<()> {
            out.entry("own_figures", &[1, 2])
        }
    }

    fn report() -> Report {
        Report {
            scenarios: Vec::new(),
            benchmark: None,
            sections: vec![Box::new(Own)],
            mutation_seeds: Vec::new(),
            mutation: Vec::new(),
            plots: Vec::new(),
            timelines: BTreeMap::new(),
            regenerate: "rp-sim report".into(),
        }
    }

    #[test]
    fn a_family_section_lands_where_the_family_figures_always_did() {
        let json = String::from_utf8(json(&report()).unwrap()).unwrap();
        assert_eq!(
            json,
            "{\n  \"scenarios\": [],\n  \"benchmark\": null,\n  \"own_figures\": [\n    1,\n    2\n  ],\n  \"mutation_seeds\": [],\n  \"mutation\": [],\n  \"plots\": [],\n  \"timelines\": {},\n  \"regenerate\": \"rp-sim report\"\n}"
        );
        let m = markdown(&report());
        let at = |s: &str| m.find(s).unwrap_or_else(|| panic!("{s} in {m}"));
        assert!(at("## Histograms") < at("## A family's own section"));
        assert!(at("## A family's own section") < at("## Speed"));
        // Every family's histograms are explained, before the shared ones.
        let mut last = 0;
        for (metric, meaning) in
            crate::families::REGISTRY.iter().flat_map(|f| f.report.histograms).chain(HISTOGRAM_MEANINGS)
        {
            let line = at(&format!("- **{metric}**: {meaning}\n"));
            assert!(line > last, "{metric}");
            last = line;
        }
    }
}
