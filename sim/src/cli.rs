//! The `rp-sim` command line: `scenarios`, `explore`, `replay`, `report`.
//!
//! Exit status is part of the interface, so scripts and CI can rely on it:
//! 0 = no invariant violated, 1 = at least one violated, 2 = usage or
//! set-up error (unknown scenario, redis-server or clock library missing),
//! 130 = interrupted by Ctrl-C (servers killed first).
//!
//! Ctrl-C: a `SIGINT`/`SIGTERM` handler, installed with `libc::sigaction`,
//! kills every redis-server the process started (through the lock-free
//! registry in [`crate::Servers`], which is async-signal-safe) and exits
//! with `_exit(130)`. The servers are in their own process groups, so the
//! terminal's SIGINT never reaches them directly, and `PR_SET_PDEATHSIG`
//! catches any path that skips the handler (SIGKILL of rp-sim itself).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, Parser, Subcommand};

/// `println!` for a command's output, through [`out`]: a reader that went
/// away drops the rest of it instead of panicking the process.
macro_rules! println {
    () => {
        out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`out`], as `println!` above.
macro_rules! print {
    ($($arg:tt)*) => {
        out(format_args!($($arg)*))
    };
}

/// Set once stdout could not be written (its reader went away:
/// `rp-sim scenarios | head`).
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes a command's output to stdout. Rust ignores `SIGPIPE` (a bridge
/// writing to a killed server must get `EPIPE`, not die), so a closed pipe
/// makes every write fail; `std`'s `println!` panics on that. Here the rest
/// of the output is dropped and the command finishes as it would have:
/// destructors run (servers stopped, clock files removed) and the exit
/// status still says what was found.
fn out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("rp-sim: cannot write to stdout ({e}); the rest of the output is dropped");
        }
    }
}

use crate::exploration::{coverage_table, histogram_table, operations_table, replay_command};
use crate::explore::{explore_with, ExploreOptions};
use crate::jobs::Jobs;
use crate::placement::Placement;
use crate::scenarios::{self, Expect, Scenario, SCENARIOS};
use crate::servers::{self, Servers};

const AFTER_HELP: &str = "\
Every Redis command in a simulation is executed by a real redis-server (from
PATH or $REDIS_SERVER), started on an ephemeral loopback port with the clock
library preloaded so that its wall clock follows simulated time. The same seed
gives the same history, bit for bit: `explore` finds a violating seed, `replay`
shows it.

Quick start:
  cargo run --release -p redis-primitives-sim -- scenarios
  cargo run --release -p redis-primitives-sim -- explore --scenario election --seeds 200
  cargo run --release -p redis-primitives-sim -- replay --scenario lock-naive --seed 1 --trace

Exit status: 0 no violation, 1 a violation was found, 2 usage or set-up error,
130 interrupted.";

/// rp-sim: deterministic fault exploration of redis-primitives against real redis-server processes.
#[derive(Debug, Parser)]
#[command(name = "rp-sim", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Where the simulation and its redis-servers run. `shared-core` (the
    /// default) pins them to one CPU: they take turns, and a turn on one
    /// core is a context switch instead of two cross-core wake-ups (2-3x
    /// faster on a VM; the same histories either way). `anywhere` leaves
    /// placement to the operating system.
    #[arg(long, global = true, value_enum, default_value_t = Placement::SharedCore)]
    pub placement: Placement,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every scenario with one line of description, and the invariants.
    Scenarios,
    /// Run a scenario over many seeds and report every invariant violation.
    ///
    /// Seeds S..S+N are run one after another. Each seed draws its plan (the
    /// workload and the fault schedule) from the scenario's space with the
    /// same proptest strategy the property search uses, and seeds all other
    /// randomness; `replay --seed` reruns it. Every violation is printed
    /// with its seed, the invariant, a short explanation, the fault schedule
    /// and the exact `rp-sim replay` command that reproduces it. Histograms of
    /// all seeds are merged and summarised. Exit status 1 if anything was
    /// violated (broken variants such as `lock-naive` are expected to).
    #[command(
        after_help = "Example:\n  rp-sim explore --scenario election --seeds 200\n  rp-sim explore --scenario lock-naive --seeds 50 --json | jq .violations[0]"
    )]
    Explore(ExploreArgs),
    /// Re-run one seed of a scenario, deterministically.
    ///
    /// Prints the fault schedule, the violations and the histograms of that
    /// seed; with --trace also the whole history as a timeline (simulated
    /// milliseconds, process, invoke/ok/fail/info, operation). The last line
    /// is always `digest: <hex>`, the stable hash of the history: the same
    /// seed gives the same digest in every run and every process.
    ///
    /// With --plan instead of --seed it runs an explicit plan (workload
    /// parameters and fault schedule spelled out, as JSON): this is how a
    /// counterexample shrunk by the property tests is reproduced.
    ///
    /// Exit status: 0 no violation, 1 a violation (expected of the broken
    /// variants), 2 usage or set-up error.
    #[command(
        after_help = "Example:\n  rp-sim replay --scenario fencing-unfenced --seed 3 --trace\n  rp-sim replay --scenario lock-naive --seed 1 --timeline lock-naive-1.html\n  rp-sim replay --scenario lock-naive --plan shrunk.json --trace"
    )]
    Replay(ReplayArgs),
    /// Run the standard scenario set and write a Markdown + JSON report.
    ///
    /// Writes OUT/README.md (tables: violations per scenario, histograms,
    /// the reference's election figures in simulated time, the mutation
    /// table of the property search, speed) and
    /// OUT/report.json (full percentiles). Build with --release for
    /// meaningful speed figures.
    Report(ReportArgs),
    /// Mutate the library's Lua scripts and count what the checkers kill.
    ///
    /// Each mutant is one edit to one line of one script (a comparison
    /// flipped, `and` for `or`, an integer one up or down — which covers
    /// `KEYS[1]` for `KEYS[2]` and off-by-one bounds). Each is run, in a
    /// child `rp-sim explore` with the mutated text loaded into the
    /// production types, over the correct scenarios that use the script,
    /// seeds 0..N, until a checker reports a violation (killed). A survivor
    /// not listed as equivalent is a gap in the harness. Exit status 0 when
    /// every non-equivalent mutant was killed, 1 when one survived, 2 on a
    /// usage or set-up error.
    #[command(
        after_help = "Example:\n  rp-sim mutants --seeds 20 --out reports/mutants.md\n  rp-sim mutants --script sliding_log --list"
    )]
    Mutants(MutantsArgs),
    /// Merge the shard files of one exploration into the result one
    /// unsharded run gives.
    ///
    /// Each file is what `rp-sim explore --shard I/N --out FILE` wrote; the
    /// files must be the N shards of one scenario's seed range, each once.
    /// Prints what `explore` prints for the whole range (text, or the same
    /// JSON with --json): the same violations, identical histograms, the
    /// same coverage and digest; only the wall time is the shards' sum.
    /// Exit status 1 if any seed violated an invariant, 2 if the files
    /// cannot be read or are not the shards of one exploration.
    #[command(
        after_help = "Example (four machines, or four processes):\n  for i in 0 1 2 3; do rp-sim explore --scenario election --seeds 100000 --shard $i/4 --out election-$i.json & done; wait\n  rp-sim merge election-*.json"
    )]
    Merge(MergeArgs),
    /// Compare the pinned seed sets' violations and histograms with a
    /// committed baseline: timing regressions caught.
    ///
    /// Runs every scenario's seed set (a broken variant's pinned seeds,
    /// seeds 0..12 of a correct one) and compares with the baseline: a new
    /// violation, a broken variant's lost violation, or a histogram's count,
    /// p50, p90, p99 or max moved beyond the baseline's tolerance (±10 %, at
    /// least 5) fails, one line per difference. Histograms are in simulated
    /// time and runs are deterministic, so the same code gives the same
    /// figures exactly. Exit status 0 when everything matches, 1 on a
    /// difference, 2 on a usage or set-up error.
    #[command(
        after_help = "Example:\n  rp-sim check                       # against reports/baseline.json\n  rp-sim check --scenario election   # one scenario\n  rp-sim check --update              # accept the current figures"
    )]
    Check(CheckArgs),
}

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
    /// [situations no seed reached], digest.
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

extern "C" fn on_interrupt(_signal: libc::c_int) {
    servers::shutdown_all();
    // SAFETY: waitpid(2), nanosleep(2), write(2) and _exit(2) are
    // async-signal-safe; the buffers are static or on this stack.
    unsafe {
        // Reap the killed servers (bounded: at most ~1 s) so that they are
        // gone, not merely dying, when the shell gets its prompt back.
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
        for _ in 0..100 {
            match libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) {
                -1 => break,
                0 => {
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
                _ => {}
            }
        }
        remove_clock_files();
        let msg = b"\nrp-sim: interrupted; every redis-server it started has been killed\n";
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(130);
    }
}

/// `<tmp>/rp-clock-<pid>-`, the prefix of this process's clock control files
/// (see `clock::ServerClock::create`), NUL-padded; written once before the
/// handler is installed, only read inside it.
static mut CLOCK_PREFIX: [u8; 240] = [0; 240];

/// Unlinks `<prefix>0` … `<prefix>1023` without allocating (the handler
/// skips destructors, which would otherwise delete them).
///
/// # Safety
/// Only from the signal handler, after `install_interrupt_handler`.
unsafe fn remove_clock_files() {
    // SAFETY: written before the handler was installed, never again.
    let prefix = unsafe { &*core::ptr::addr_of!(CLOCK_PREFIX) };
    let len = prefix.iter().position(|b| *b == 0).unwrap_or(0);
    if len == 0 {
        return;
    }
    for n in 0u32..1024 {
        let mut path = [0u8; 256];
        path[..len].copy_from_slice(&prefix[..len]);
        let mut digits = [0u8; 10];
        let mut d = 0;
        let mut v = n;
        loop {
            digits[d] = b'0' + (v % 10) as u8;
            d += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for i in 0..d {
            path[len + i] = digits[d - 1 - i];
        }
        // SAFETY: `path` is NUL-terminated (zero-filled past the digits).
        unsafe {
            libc::unlink(path.as_ptr().cast());
        }
    }
}

/// Installs the Ctrl-C (and SIGTERM) handler described in the module docs.
pub fn install_interrupt_handler() {
    let prefix = std::env::temp_dir().join(format!("rp-clock-{}-", std::process::id()));
    let bytes = prefix.as_os_str().as_encoded_bytes();
    if bytes.len() < 240 - 12 {
        // SAFETY: no handler is installed yet, so nothing reads it concurrently.
        unsafe {
            let dst = &mut *core::ptr::addr_of_mut!(CLOCK_PREFIX);
            dst[..bytes.len()].copy_from_slice(bytes);
        }
    }
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the
    // handler only calls async-signal-safe functions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn lookup(name: &str) -> Result<&'static Scenario, i32> {
    match scenarios::find(name) {
        Some(s) => Ok(s),
        None => {
            eprintln!("rp-sim: unknown scenario {name:?}; known scenarios: {}", scenarios::names());
            Err(2)
        }
    }
}

/// Runs the CLI; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Scenarios => {
            let width = SCENARIOS.iter().map(|s| s.name.len()).max().unwrap_or(0);
            for s in SCENARIOS {
                println!("{:<width$}  {}", s.name, s.description);
            }
            println!();
            println!("Broken variants (expected to violate):");
            for s in SCENARIOS {
                if let Expect::Violates(inv) = s.expect {
                    println!("  {:<width$}  {inv}", s.name);
                }
            }
            println!();
            println!("Invariants:");
            for (name, meaning) in crate::scenarios::invariants() {
                println!("  {name:<26} {meaning}");
            }
            0
        }
        Command::Explore(args) => explore_cmd(args, cli.placement),
        Command::Replay(args) => replay_cmd(args, cli.placement),
        Command::Mutants(args) => mutants_cmd(args),
        Command::Merge(args) => merge_cmd(args),
        Command::Check(args) => check_cmd(args, cli.placement),
        Command::Report(args) => match crate::report::write_report(
            &args.out,
            args.seeds,
            args.mutation_seeds,
            args.jobs,
            Servers::with_placement(cli.placement),
        ) {
            Ok(path) => {
                println!("report written to {}", path.display());
                0
            }
            Err(e) => {
                eprintln!("rp-sim report: {e}");
                2
            }
        },
    }
}

fn explore_cmd(args: ExploreArgs, placement: Placement) -> i32 {
    let scenario = match lookup(&args.scenario) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut servers = Servers::with_placement(placement);
    let shard = args.shard.unwrap_or(crate::shard::Shard::WHOLE);
    let options = ExploreOptions::new(args.start_seed, args.seeds)
        .shard(shard)
        .jobs(args.jobs)
        .progress(crate::progress::Progress::for_stderr())
        .fail_fast(args.fail_fast)
        .twice(args.twice);
    let ex = match explore_with(scenario, &mut servers, options) {
        Ok(ex) => ex,
        Err(e @ crate::servers::SetupError::Nondeterministic(_)) => {
            eprintln!("rp-sim: not deterministic: {e}");
            return 2;
        }
        Err(e) => {
            eprintln!("rp-sim: set-up error: {e}");
            return 2;
        }
    };
    drop(servers);
    if let Some(dir) = &args.plot {
        let curves = [(
            scenario.runs.family().to_string(),
            vec![crate::plot::Curve { scenario: scenario.name, histograms: &ex.histograms }],
        )];
        let bounds = [(scenario.runs.family().to_string(), scenario.runs.bounds())];
        match crate::plot::write_plots(dir, &curves.into_iter().collect(), &bounds.into_iter().collect()) {
            Ok(files) => {
                for f in files {
                    eprintln!("plot: {}", dir.join(f.path).display());
                }
            }
            Err(e) => {
                eprintln!("rp-sim: cannot write the plots to {}: {e}", dir.display());
                return 2;
            }
        }
    }
    if let Some(out) = &args.out {
        if let Err(e) = crate::shard::ShardFile::of(&ex, shard, args.seeds).write(out) {
            eprintln!("rp-sim: {e}");
            return 2;
        }
    }
    print_exploration(&ex, scenario, args.json)
}

fn check_cmd(args: CheckArgs, placement: Placement) -> i32 {
    use crate::baseline::{compare, measure, Baseline};
    let mut chosen = Vec::new();
    for name in &args.scenario {
        match lookup(name) {
            Ok(s) => chosen.push(s),
            Err(code) => return code,
        }
    }
    if chosen.is_empty() {
        chosen = SCENARIOS.iter().collect();
    }
    let base = if args.update && !args.baseline.exists() {
        None
    } else {
        match Baseline::read(&args.baseline) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("rp-sim check: {e} (write one with `rp-sim check --update`)");
                return 2;
            }
        }
    };
    let mut servers = Servers::with_placement(placement);
    let now = match measure(&mut servers, &chosen) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rp-sim: set-up error: {e}");
            return 2;
        }
    };
    drop(servers);
    if args.update {
        let mut next = base.unwrap_or_else(|| Baseline { scenarios: Default::default(), ..now.clone() });
        next.scenarios.extend(now.scenarios);
        if let Err(e) = next.write(&args.baseline) {
            eprintln!("rp-sim check: {e}");
            return 2;
        }
        println!("baseline written to {} ({} scenarios)", args.baseline.display(), next.scenarios.len());
        return 0;
    }
    let Some(base) = base else { return 2 };
    let expect = |name: &str| match scenarios::find(name).map(|s| s.expect) {
        Some(Expect::Violates(inv)) => Some(inv),
        _ => None,
    };
    let drift = compare(&base, &now, expect);
    if drift.is_empty() {
        println!(
            "check: {} scenario(s) match {} (violations exactly; histograms within ±{:.0} %, at least {})",
            now.scenarios.len(),
            args.baseline.display(),
            base.tolerance.relative * 100.0,
            base.tolerance.absolute
        );
        return 0;
    }
    println!("check: {} difference(s) from {}:", drift.len(), args.baseline.display());
    for d in &drift {
        println!("  {d}");
    }
    let only: String = args.scenario.iter().map(|s| format!(" --scenario {s}")).collect();
    println!("if the change is meant, accept it: rp-sim check --update --baseline {}{only}", args.baseline.display());
    1
}

fn merge_cmd(args: MergeArgs) -> i32 {
    let files: Result<Vec<_>, _> = args.files.iter().map(|p| crate::shard::ShardFile::read(p)).collect();
    let merged = files.and_then(|f| crate::shard::merge(&f));
    match merged {
        Ok(ex) => match scenarios::find(ex.scenario) {
            Some(scenario) => print_exploration(&ex, scenario, args.json),
            None => 2,
        },
        Err(e) => {
            eprintln!("rp-sim merge: {e}");
            2
        }
    }
}

/// Prints an exploration (text, or `--json`); its exit status.
fn print_exploration(ex: &crate::exploration::Exploration, scenario: &'static Scenario, json: bool) -> i32 {
    if json {
        match serde_json::to_string_pretty(&ex.to_json()) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rp-sim: cannot serialise the result: {e}");
                return 2;
            }
        }
    } else {
        const SHOWN: usize = 10;
        for s in ex.violating.iter().take(SHOWN) {
            println!("VIOLATION  seed {}", s.seed);
            for v in &s.violations {
                println!("  [{}] {}", v.invariant, v.detail);
            }
            println!("  replay: {}", s.replay);
            if s.schedule.is_empty() {
                println!("  fault schedule: (none)");
            } else {
                println!("  fault schedule:");
                for f in &s.schedule {
                    println!("    {f}");
                }
            }
            println!();
        }
        if ex.violating.len() > SHOWN {
            let rest: Vec<String> = ex.violating[SHOWN..].iter().map(|s| s.seed.to_string()).collect();
            println!("... and {} more violating seeds: {}\n", rest.len(), rest.join(" "));
        }
        println!(
            "{}: {} seeds ({}..{}), {} violating; {}",
            ex.scenario,
            ex.seeds,
            ex.start_seed,
            ex.start_seed + ex.seeds,
            ex.violating.len(),
            scenario.expectation()
        );
        for (name, _) in crate::scenarios::invariants() {
            let n = ex.count_of(name);
            if n > 0 {
                println!("  {name}: {n} violations");
            }
        }
        if ex.jobs > 1 {
            let on = if ex.cpus.is_empty() {
                String::new()
            } else {
                format!(" on CPUs {}", ex.cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))
            };
            println!(
                "wall {:.2}s, {} jobs{on}, {:.1} seeds/s, {:.0}x real time ({:.0}x per job)",
                ex.wall.as_secs_f64(),
                ex.jobs,
                ex.seeds_per_second(),
                ex.speedup(),
                ex.speedup_per_job()
            );
        } else {
            println!(
                "wall {:.2}s, {:.1} seeds/s, {:.0}x real time",
                ex.wall.as_secs_f64(),
                ex.seeds_per_second(),
                ex.speedup()
            );
        }
        println!();
        print!("{}", histogram_table(&ex.histograms));
        let coverage = coverage_table(ex);
        if !coverage.is_empty() {
            println!();
            print!("{coverage}");
        }
        let operations = operations_table(ex);
        if !operations.is_empty() {
            println!();
            print!("{operations}");
        }
        println!("digest: {}", ex.digest);
    }
    if !ex.unreached().is_empty() {
        eprintln!(
            "rp-sim: warning: {} declared situation(s) of {} reached by no seed: {}",
            ex.unreached().len(),
            ex.scenario,
            ex.unreached().join(", ")
        );
    }
    if ex.violating.is_empty() {
        0
    } else {
        1
    }
}

fn mutants_cmd(args: MutantsArgs) -> i32 {
    use crate::mutants::{generate, judge, markdown, scratch_file, MutantResult, Verdict};
    let all = crate::mutants::scripts();
    let scripts: Vec<_> = all.iter().filter(|s| args.script.as_deref().is_none_or(|n| n == s.name)).collect();
    if scripts.is_empty() {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        eprintln!("rp-sim: no script named {:?}; scripts: {}", args.script.unwrap_or_default(), names.join(", "));
        return 2;
    }
    if args.list {
        for s in &scripts {
            for m in generate(s) {
                println!("{m}");
            }
        }
        return 0;
    }
    if !redis_primitives::mutation_hooks_enabled() {
        eprintln!(
            "rp-sim mutants: this rp-sim was built without the library's mutation hooks, so no mutant \
             could take effect and every one would survive. Build it with the `mutants` feature: \
             cargo run --release -p redis-primitives-sim --features mutants -- mutants"
        );
        return 2;
    }
    let rp_sim = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rp-sim: cannot find its own executable to run mutants in: {e}");
            return 2;
        }
    };
    let scratch = scratch_file();
    let mut results = Vec::new();
    let total: usize = scripts.iter().map(|s| generate(s).len()).sum();
    for s in &scripts {
        for mutant in generate(s) {
            let verdict = match judge(&rp_sim, &scratch, &mutant, &s.scenarios, args.seeds) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("rp-sim: cannot run a mutant: {e}");
                    let _ = std::fs::remove_file(&scratch);
                    return 2;
                }
            };
            let label = match &verdict {
                Verdict::Killed { scenario, seed, invariant } => {
                    format!("killed ({scenario} seed {seed}: {invariant})")
                }
                Verdict::Equivalent { .. } => "equivalent".to_string(),
                Verdict::Survived => "SURVIVED".to_string(),
                Verdict::Error { message } => format!("error: {message}"),
            };
            eprintln!("[{}/{total}] {mutant}: {label}", results.len() + 1);
            results.push(MutantResult { mutant, verdict });
        }
    }
    let _ = std::fs::remove_file(&scratch);
    let mut md = markdown(&results, args.seeds);
    if let Some(dir) = &args.cargo_mutants {
        match crate::rust_mutants::read(dir) {
            Ok(outcomes) => {
                md.push('\n');
                md.push_str(&crate::rust_mutants::markdown(&outcomes));
            }
            Err(e) => {
                eprintln!("rp-sim: cannot read cargo-mutants results in {}: {e}", dir.display());
                return 2;
            }
        }
    }
    print!("{md}");
    if let Some(out) = &args.out {
        if let Err(e) = std::fs::write(out, &md) {
            eprintln!("rp-sim: cannot write {}: {e}", out.display());
            return 2;
        }
    }
    let survived = results.iter().any(|r| matches!(r.verdict, Verdict::Survived));
    let errors = results.iter().any(|r| matches!(r.verdict, Verdict::Error { .. }));
    if errors {
        2
    } else if survived {
        1
    } else {
        0
    }
}

/// Reads `--plan`: inline JSON, or a file holding it.
fn read_plan(arg: &str) -> Result<crate::plan::Plan, String> {
    let json = if arg.trim_start().starts_with('{') {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read plan file {arg}: {e}"))?
    };
    crate::plan::Plan::from_json(&json)
}

fn replay_cmd(args: ReplayArgs, placement: Placement) -> i32 {
    let scenario = match lookup(&args.scenario) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let plan = match args.plan.as_deref().map(read_plan).transpose() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rp-sim: {e}");
            return 2;
        }
    };
    let mut servers = Servers::with_placement(placement);
    let result = match (&plan, args.seed) {
        (Some(plan), _) if plan.scenario != scenario.name => {
            eprintln!("rp-sim: the plan is for scenario {}, not {}", plan.scenario, scenario.name);
            return 2;
        }
        (Some(plan), _) => crate::plan::run(&mut servers, plan),
        (None, Some(seed)) => scenario.run(&mut servers, seed),
        // clap requires one of the two.
        (None, None) => return 2,
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rp-sim: set-up error: {e}");
            return 2;
        }
    };
    drop(servers);
    let seed = plan.as_ref().map_or(args.seed.unwrap_or_default(), |p| p.seed);
    match &plan {
        Some(p) => {
            println!("scenario {} with an explicit plan ({})", scenario.name, scenario.expectation());
            println!("{p}");
        }
        None => println!("scenario {} seed {seed} ({})", scenario.name, scenario.expectation()),
    }
    if outcome.schedule.is_empty() {
        println!("fault schedule: (none)");
    } else {
        println!("fault schedule:");
        for f in &outcome.schedule {
            println!("  {f}");
        }
    }
    if args.trace {
        println!();
        print!("{}", crate::history::render_timeline(&outcome.history));
    }
    println!();
    if outcome.violations.is_empty() {
        println!("no violations");
    } else {
        for v in &outcome.violations {
            println!("VIOLATION {v}");
        }
        match &plan {
            Some(p) => println!("replay: {}", p.replay_command()),
            None => println!("replay: {}", replay_command(scenario.name, seed)),
        }
    }
    println!();
    print!("{}", histogram_table(&outcome.histograms));
    println!("events: {}, simulated: {}ms", outcome.history.len(), outcome.simulated_ms());
    if let Some(path) = &args.timeline {
        let replay = match &plan {
            Some(p) => p.replay_command(),
            None => replay_command(scenario.name, seed),
        };
        if let Err(e) = std::fs::write(path, scenario.timeline(&outcome, &replay)) {
            eprintln!("rp-sim: cannot write the timeline to {}: {e}", path.display());
            return 2;
        }
        println!("timeline: {}", path.display());
    }
    println!("digest: {}", outcome.digest);
    if outcome.violations.is_empty() {
        0
    } else {
        1
    }
}
