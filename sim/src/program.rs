//! A simulation of one's own as a whole program: [`run_main`].
//!
//! An example or a small binary that explores a [`crate::Trial`] needs the
//! same forty lines every time: read a seed count, run the seeds on every
//! CPU, print each violation with its replay command, draw the first
//! violating seed's timeline, replay one seed with its history, and exit
//! 0, 1 or 2. Written once here, so a user's file holds only their code,
//! their workload and their judge.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::experiment::{Experiment, SEED_ENV};
use crate::explore::{explore_with, ExploreOptions};
use crate::jobs::Jobs;
use crate::outcome::Outcome;
use crate::progress::Progress;
use crate::servers::{Servers, SetupError};

/// Runs `experiment` as a program's `main` and returns its exit status.
///
/// From the command line (other arguments, the program's own flags, are
/// left alone): `--seeds N` (default `seeds`), `--start N` (default 0),
/// `--jobs N` (default: one per CPU), `--twice` (the determinism
/// self-check: every seed run twice, exit 2 at the first that gives two
/// histories), `--timeline DIR` (where timeline pages go; default
/// `$CARGO_TARGET_DIR/rp-sim`, else `target/rp-sim`), `--plot DIR` (an
/// SVG chart of each histogram the seeds recorded; with the `cli`
/// feature). With `RP_SIM_SEED=N`
/// in the environment (what the printed replay commands set) only seed `N`
/// runs, and its whole history is printed.
///
/// Prints each violating seed (the first five) with its violations and
/// replay command, then a summary line, and writes the timeline page of the
/// first violating seed (of the replayed seed, with `RP_SIM_SEED`). Exit
/// status: 0 when no seed violated anything, 1 when one did, 2 on a bad
/// argument or a set-up error (a server, a nondeterministic seed).
pub fn run_main(experiment: &dyn Experiment, seeds: u64) -> ExitCode {
    let name = experiment.name().to_string();
    match run(experiment, seeds) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(2)
        }
    }
}

/// Why `--plot` is refused in a build without the `cli` feature.
const PLOT_NEEDS_CLI: &str = "--plot needs redis-primitives-sim's `cli` feature (plotters)";

/// The command line's options.
struct Args {
    seeds: u64,
    start: u64,
    jobs: Option<u32>,
    twice: bool,
    timeline: PathBuf,
    plot: Option<PathBuf>,
}

impl Args {
    fn parse(seeds: u64) -> Result<Args, String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let number = |flag: &str| -> Result<Option<u64>, String> {
            match args.iter().position(|a| a == flag) {
                None => Ok(None),
                Some(i) => match args.get(i + 1).map(|v| v.parse::<u64>()) {
                    Some(Ok(n)) => Ok(Some(n)),
                    _ => Err(format!("{flag} needs a whole number")),
                },
            }
        };
        let timeline = match args.iter().position(|a| a == "--timeline") {
            Some(i) => PathBuf::from(args.get(i + 1).ok_or("--timeline needs a folder")?),
            None => std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| PathBuf::from("target"), PathBuf::from)
                .join("rp-sim"),
        };
        let plot = match args.iter().position(|a| a == "--plot") {
            Some(i) => Some(PathBuf::from(args.get(i + 1).ok_or("--plot needs a folder")?)),
            None => None,
        };
        if plot.is_some() && !cfg!(feature = "cli") {
            return Err(PLOT_NEEDS_CLI.to_string());
        }
        let jobs = number("--jobs")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        Ok(Args {
            seeds: number("--seeds")?.unwrap_or(seeds),
            start: number("--start")?.unwrap_or(0),
            jobs,
            twice: args.iter().any(|a| a == "--twice"),
            timeline,
            plot,
        })
    }
}

/// `Ok(clean)`, or why nothing could be judged.
fn run(experiment: &dyn Experiment, seeds: u64) -> Result<bool, String> {
    let args = Args::parse(seeds)?;
    let mut servers = Servers::new();
    if let Ok(seed) = std::env::var(SEED_ENV) {
        let seed = seed.trim().parse().map_err(|_| format!("{SEED_ENV}={seed:?}: expected a whole number"))?;
        return replay(experiment, &mut servers, seed, &args);
    }
    let jobs = match args.jobs {
        Some(n) => Jobs::new(n).map_err(|e| e.to_string())?,
        None => Jobs::new(Jobs::available().get().min(u32::try_from(args.seeds.max(1)).unwrap_or(u32::MAX)))
            .unwrap_or(Jobs::ONE),
    };
    let options =
        ExploreOptions::new(args.start, args.seeds).jobs(jobs).progress(Progress::for_stderr()).twice(args.twice);
    let ex = explore_with(experiment, &mut servers, options).map_err(|e| e.to_string())?;
    for s in ex.violating.iter().take(5) {
        for v in &s.violations {
            println!("seed {}: {v}", s.seed);
        }
        println!("  replay: {}", s.replay);
    }
    let (end, twice) = (args.start + args.seeds, if args.twice { ", each run twice" } else { "" });
    println!(
        "{}: {} of {} seeds ({}..{end}{twice}) violated something",
        ex.scenario,
        ex.violating.len(),
        ex.seeds,
        args.start
    );
    if !ex.histograms.is_empty() {
        print!("{}", crate::exploration::histogram_table(&ex.histograms));
    }
    if let Some(dir) = &args.plot {
        plot(experiment.name(), &ex.histograms, dir)?;
    }
    let Some(first) = ex.violating.first() else { return Ok(true) };
    // An exploration keeps no histories: the page's seed runs again.
    let outcome = experiment.run(&mut servers, first.seed).map_err(|e| e.to_string())?;
    page(experiment, &outcome, first.seed, &args)?;
    Ok(false)
}

/// Seed `seed` alone, its history printed, its page written.
fn replay(experiment: &dyn Experiment, servers: &mut Servers, seed: u64, args: &Args) -> Result<bool, String> {
    let run = |servers: &mut Servers| experiment.run(servers, seed).map_err(|e: SetupError| e.to_string());
    let outcome = run(servers)?;
    if args.twice {
        crate::determinism::compare_histories(seed, &outcome.history, &run(servers)?.history)
            .map_err(|d| d.to_string())?;
    }
    println!("{} seed {seed}: {} events", experiment.name(), outcome.history.len());
    print!("{}", crate::history::render_timeline(&outcome.history));
    for v in &outcome.violations {
        println!("VIOLATION {v}");
    }
    println!("digest: {}", outcome.digest);
    if outcome.violations.is_empty() {
        return Ok(true);
    }
    page(experiment, &outcome, seed, args)?;
    Ok(false)
}

/// Writes `outcome`'s timeline page under `args.timeline` and says where.
fn page(experiment: &dyn Experiment, outcome: &Outcome, seed: u64, args: &Args) -> Result<(), String> {
    let path = args.timeline.join(format!("{}-seed-{seed}.html", experiment.name()));
    let html = experiment.timeline(outcome, &experiment.replay_command(seed));
    std::fs::create_dir_all(&args.timeline)
        .and_then(|()| std::fs::write(&path, html))
        .map_err(|e| format!("cannot write the timeline to {}: {e}", path.display()))?;
    println!("timeline: {}", path.display());
    Ok(())
}

/// One SVG chart per histogram of the exploration, in `dir`.
#[cfg(feature = "cli")]
fn plot(name: &str, histograms: &crate::stats::Histograms, dir: &std::path::Path) -> Result<(), String> {
    let files = crate::plot::write_one(dir, name, name, histograms, Vec::new())
        .map_err(|e| format!("cannot write the plots to {}: {e}", dir.display()))?;
    for f in files {
        eprintln!("plot: {}", f.display());
    }
    Ok(())
}

/// Refused when the arguments are read (`--plot` needs the `cli` feature).
#[cfg(not(feature = "cli"))]
fn plot(_name: &str, _histograms: &crate::stats::Histograms, _dir: &std::path::Path) -> Result<(), String> {
    Err(PLOT_NEEDS_CLI.to_string())
}
