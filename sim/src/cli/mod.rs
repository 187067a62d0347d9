//! The `rp-sim` command line: `scenarios`, `explore`, `replay`, `live`,
//! `report`, `mutants`, `merge`, `check`.
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

use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};

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

use crate::experiment::replay_command;
use crate::exploration::{coverage_table, histogram_table, operations_table};
use crate::explore::{explore_with, ExploreOptions};
use crate::jobs::Jobs;
use crate::placement::Placement;
use crate::scenarios::{self, Expect, Scenario};
use crate::servers::{self, Servers};

mod args;
mod explore;
mod interrupt;
mod live;
mod mutants;
mod replay;

pub use args::{CheckArgs, ExploreArgs, LiveArgs, MergeArgs, MutantsArgs, ReplayArgs, ReportArgs};
use explore::{check_cmd, explore_cmd, merge_cmd, print_exploration};
pub use interrupt::install_interrupt_handler;
use mutants::mutants_cmd;
use replay::replay_cmd;

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
    /// Run a scenario in real time: the live tier, held against the simulation.
    ///
    /// Each run draws the plan of its seed (workload and fault schedule) as
    /// `explore` does and runs the same actors in real time: a real tokio
    /// runtime, loopback TCP through a fault proxy per node, redis-servers
    /// on their real clocks (offset to the simulation's epoch), and the
    /// faults made for real: partitions, holds and latency in the proxy,
    /// SIGSTOP/SIGCONT of redis-server for a server pause, SIGKILL and a new
    /// process for a restart, the clock library's offset for a clock step,
    /// real replicas for failovers. The same checkers judge the history and
    /// the same tables summarise it. A live run does not replay: a
    /// violation prints the command that runs its plan live again and the
    /// one that replays it in the simulation. Runs take their scenario's
    /// length in wall time, one after another; servers are left to the
    /// operating system's placement (--placement is not used).
    ///
    /// Exit status: 0 no violation, 1 a violation, 2 usage or set-up error,
    /// 130 interrupted (servers killed first).
    #[command(
        after_help = "Example:\n  rp-sim live --scenario lock --runs 20\n  rp-sim live --scenario lock-naive --runs 5 --fail-fast\n  rp-sim live --agreement reports/live.md --runs 20          # every scenario, both tiers"
    )]
    Live(LiveArgs),
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
            let width = scenarios::all().map(|s| s.name.len()).max().unwrap_or(0);
            for s in scenarios::all() {
                println!("{:<width$}  {}", s.name, s.description);
            }
            println!();
            println!("Broken variants (expected to violate):");
            for s in scenarios::all() {
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
        Command::Live(args) => live::live_cmd(args),
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
