//! The arguments of each `rp-sim` command, as clap reads them.

use std::path::PathBuf;

use clap::Args;

use super::*;

/// `check` options.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The baseline file.
    #[arg(long, default_value = "reports/baseline.json")]
    pub baseline: PathBuf,
    /// Only these scenarios (repeatable); default every scenario.
    #[arg(long, short = 's')]
    pub scenario: Vec<String>,
    /// Write the current figures as the baseline instead of comparing
    /// (with --scenario, only those scenarios' entries are replaced).
    #[arg(long)]
    pub update: bool,
}

/// `merge` options.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard files (`explore --out`), in any order.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object, as `explore --json` does.
    #[arg(long)]
    pub json: bool,
}

/// `explore` options.
#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// Scenario name (see `rp-sim scenarios`).
    #[arg(long, short = 's')]
    pub scenario: String,
    /// Number of seeds to run (at least 1).
    #[arg(long, short = 'n', default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub start_seed: u64,
    /// Print one JSON object on stdout instead of text: scenario, seeds,
    /// violations [{seed, invariant, detail, replay, schedule}], histograms
    /// {name: {count, min, p50, p90, p99, max, unit}}, coverage {situation:
    /// seeds reaching it}, operations {library operation: calls}, unreached
    /// [situations no seed reached], paths {library operation: {ok |
    /// refused | failed: seeds taking it}}, digest.
    #[arg(long)]
    pub json: bool,
    /// Stop at the first violating seed (what a search for one
    /// counterexample, or `rp-sim mutants`, wants).
    #[arg(long)]
    pub fail_fast: bool,
    /// Run only every N-th seed of the range: those whose offset from
    /// --start-seed is I modulo N (`0/4` … `3/4` on four machines; a
    /// Kubernetes Indexed Job's JOB_COMPLETION_INDEX is I). `rp-sim merge`
    /// combines the shards' --out files.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::shard::Shard>,
    /// Also write everything this run found (violations, every seed's
    /// digest, full histograms, coverage) to FILE, for `rp-sim merge`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also draw every histogram of the run as an SVG chart (cumulative
    /// distribution) into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// How many seeds run at once, each in a thread with redis-servers of
    /// its own (with the default placement, on a core of its own). The
    /// default is one per CPU this process may use. The result is the one a
    /// single job gives, --fail-fast included: the same seeds, violations,
    /// histograms and digest; only the wall time differs.
    #[arg(long, short = 'j', value_name = "N", default_value_t = Jobs::available())]
    pub jobs: Jobs,
    /// Run every seed twice and require the same history: the determinism
    /// self-check. A difference means the code under test reads something
    /// the simulation does not control (real time, unseeded randomness, a
    /// task spawned outside its actor, an unbiased select!, HashMap order);
    /// the first differing event is printed and explore exits 2. Doubles
    /// the time.
    #[arg(long)]
    pub twice: bool,
}

/// `live` options.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Scenario name (see `rp-sim scenarios`); with --agreement, repeatable
    /// (default: every scenario).
    #[arg(long, short = 's')]
    pub scenario: Vec<String>,
    /// Number of live runs (at least 1), one after another; run N draws
    /// the plan of seed --start-seed + N.
    #[arg(long, short = 'n', default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: u64,
    /// The first run's seed.
    #[arg(long, default_value_t = 0)]
    pub start_seed: u64,
    /// Print one JSON object on stdout instead of text (as `explore --json`).
    #[arg(long)]
    pub json: bool,
    /// Stop at the first violating run.
    #[arg(long)]
    pub fail_fast: bool,
    /// Run the scenarios in both tiers over seeds 0..--runs and write the
    /// agreement table to FILE (reports/live.md); its hand-written section
    /// ("## Disagreements explained") is kept.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "fail_fast", "start_seed"])]
    pub agreement: Option<PathBuf>,
}

/// `mutants` options.
#[derive(Debug, Args)]
pub struct MutantsArgs {
    /// Seeds per scenario a mutant must survive (0..N, stopping at the
    /// first violation).
    #[arg(long, short = 'n', default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    /// Only the mutants of this script (`lock_acquire`, `sliding_log`, …).
    #[arg(long)]
    pub script: Option<String>,
    /// Also write the Markdown table to this file (e.g. reports/mutants.md).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// List the mutants without running them.
    #[arg(long)]
    pub list: bool,
    /// Also report the Rust mutants `cargo mutants` found, from the output
    /// directory of `sim/cargo-mutants.sh` (`target/mutants`).
    #[arg(long, value_name = "DIR")]
    pub cargo_mutants: Option<std::path::PathBuf>,
}

/// `replay` options.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Scenario name (see `rp-sim scenarios`).
    #[arg(long, short = 's')]
    pub scenario: String,
    /// The seed to re-run.
    #[arg(long, required_unless_present = "plan", conflicts_with = "plan")]
    pub seed: Option<u64>,
    /// An explicit plan instead of a seed: its JSON (starting with `{`), or
    /// the path of a file holding it. Printed by the property tests and the
    /// mutation table with every shrunk counterexample.
    #[arg(long, value_name = "JSON|FILE")]
    pub plan: Option<String>,
    /// Print the whole history as a readable timeline.
    #[arg(long)]
    pub trace: bool,
    /// Also write the run as a self-contained HTML page (one lane per actor
    /// and Redis node, operations as bars, leases as bands, faults shaded,
    /// violations marked) to FILE, for a browser.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
}

/// `report` options.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output directory.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Seeds per scenario (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    /// Base seeds of proptest's RNG for the mutation table (each target is
    /// searched and shrunk once per base seed; 0 leaves the table out).
    #[arg(long, default_value_t = 5)]
    pub mutation_seeds: u64,
    /// How many seeds of each scenario's exploration run at once (as in
    /// `explore --jobs`; the default is one per CPU). The scenario table
    /// gives the speed of all of them together and of one.
    #[arg(long, short = 'j', value_name = "N", default_value_t = Jobs::available())]
    pub jobs: Jobs,
}
