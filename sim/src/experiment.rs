//! What an exploration runs: an [`Experiment`], one seed at a time.
//!
//! The explore machinery (`crate::explore`: jobs, shards, progress,
//! fail-fast, `--twice`, histograms merged over seeds) needs four things of
//! what it runs: a name, a way to run one seed on a pool of servers into an
//! [`Outcome`], the situations it declares, and the command that replays one
//! seed. A registered [`Scenario`] is one (its command is `rp-sim replay`);
//! a user's own world is another, written as a closure and wrapped in a
//! [`Trial`], so that a user's code gets everything the registry's scenarios
//! get without copying the harness's seed loop.
//!
//! The trait sits below the explore machinery and beside the registry:
//! `crate::exploration`, `crate::jobs` and `crate::explore` depend on it, it
//! depends on neither of them.

use crate::api::Api;
use crate::checker::Invariant;
use crate::outcome::{Outcome, Situation};
use crate::path::Path;
use crate::scenario::{Expect, Scenario};
use crate::servers::{Servers, SetupError};
use crate::timeline::Tenure;

/// Something whose seeds an exploration runs: a registered [`Scenario`], a
/// user's [`Trial`], or a type of one's own.
///
/// `Sync` because the jobs of one exploration run its seeds on several
/// threads at once, each with a server pool of its own.
pub trait Experiment: Sync {
    /// Its name, as progress, reports and shard files show it.
    fn name(&self) -> &str;

    /// Runs seed `seed` on `servers` and judges it: the outcome carries the
    /// history, its digest and the violations found. The same seed must give
    /// the same history (see the crate docs' rules for code under test).
    fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError>;

    /// The situations it exists to reach ([`Situation`]): an exploration
    /// counts each (0 when no seed reached it) and warns about the
    /// unreached ones; [`crate::check()`] fails on them. None by default.
    fn situations(&self) -> &[Situation] {
        &[]
    }

    /// The (operation, path) pairs it exists to reach ([`Path`]): an
    /// exploration counts the seeds taking each (0 when none did). None by
    /// default.
    fn paths(&self) -> &[(Api, Path)] {
        &[]
    }

    /// The shell command that reruns exactly seed `seed`, printed beside
    /// every violation and every panicking seed.
    fn replay_command(&self, seed: u64) -> String;

    /// The seeds a baseline measures of it ([`crate::Baseline::measure`]):
    /// seeds `0..12` by default.
    fn baseline_seeds(&self) -> Vec<u64> {
        (0..BASELINE_SEEDS).collect()
    }

    /// The invariant it exists to violate (a broken variant kept to show
    /// the harness catches it): a baseline then also flags a seed that stops
    /// violating it. `None` by default: anything it violates is compared
    /// exactly.
    fn must_violate(&self) -> Option<&'static Invariant> {
        None
    }

    /// One of its runs as a self-contained HTML timeline page
    /// ([`crate::Timeline`]); `replay` is the command that reproduces it.
    /// By default: one Redis node's lane, a lane per actor, and the leases
    /// its clients record as [`crate::late_writes::LeaseOp`]s drawn as
    /// bands (trusted for the validity they computed, alive to the TTL).
    fn timeline(&self, outcome: &Outcome, replay: &str) -> String {
        let digest = outcome.digest.to_string();
        crate::timeline::Timeline {
            scenario: self.name(),
            expectation: "a run of one's own",
            replay,
            nodes: 1,
            simulated_ms: outcome.simulated_ms(),
            digest: &digest,
            events: &outcome.history,
            violations: &outcome.violations,
            tenures: &leases(&outcome.history),
        }
        .html()
    }
}

/// The leases `events` record as [`crate::late_writes::LeaseOp`]s, as
/// timeline bands.
fn leases(events: &[crate::history::Event]) -> Vec<Tenure> {
    use crate::checker::late_writes::LeaseOp;
    use crate::history::EventKind;
    events
        .iter()
        .filter(|e| e.kind == EventKind::Ok)
        .filter_map(|e| match e.op.family::<LeaseOp>()? {
            LeaseOp::Acquire { owner, ttl_ms, validity: Some(v) } => Some(Tenure {
                process: e.process.clone(),
                from: e.time,
                trusted: (e.time + v.as_millis() as u64).min(e.time + ttl_ms),
                to: e.time + ttl_ms,
                title: format!("{owner}: trusted {v:?}, alive at most {ttl_ms}ms"),
            }),
            _ => None,
        })
        .collect()
}

// The registry rows: unchanged behaviour, the replay command `rp-sim` has
// always printed.
impl Experiment for Scenario {
    fn name(&self) -> &str {
        self.name
    }

    fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        // The inherent method: the run of the plan the seed draws.
        Scenario::run(self, servers, seed)
    }

    fn situations(&self) -> &[Situation] {
        self.situations
    }

    fn paths(&self) -> &[(Api, Path)] {
        self.paths
    }

    fn replay_command(&self, seed: u64) -> String {
        replay_command(self.name, seed)
    }

    /// A broken variant's pinned seeds; a correct one's `0..12`.
    fn baseline_seeds(&self) -> Vec<u64> {
        match self.expect {
            Expect::Clean => (0..BASELINE_SEEDS).collect(),
            Expect::Violates(_) => self.pinned_seeds.to_vec(),
        }
    }

    fn must_violate(&self) -> Option<&'static Invariant> {
        match self.expect {
            Expect::Clean => None,
            Expect::Violates(invariant) => Some(invariant),
        }
    }

    fn timeline(&self, outcome: &Outcome, replay: &str) -> String {
        // The inherent method: the family's nodes and tenures.
        Scenario::timeline(self, outcome, replay)
    }
}

/// Seeds a baseline measures of an experiment by default (and of every
/// correct registered scenario).
pub(crate) const BASELINE_SEEDS: u64 = 12;

/// The command that replays `seed` of the registered scenario `scenario`.
pub fn replay_command(scenario: &str, seed: u64) -> String {
    format!("rp-sim replay --scenario {scenario} --seed {seed}")
}

/// The variable [`crate::check()`] reads a single seed from: set, only that
/// seed runs, and its whole history is printed.
pub const SEED_ENV: &str = "RP_SIM_SEED";

/// The variable [`crate::check()`] reads a seed count from: set, it replaces
/// the count the test gives (`RP_SIM_SEEDS=10000 cargo test` for a long run).
pub const SEEDS_ENV: &str = "RP_SIM_SEEDS";

/// A user's own world as an [`Experiment`]: a name and a closure that, given
/// a server pool and a seed, builds a [`crate::World`], runs it and judges
/// its history.
///
/// ```no_run
/// use redis_primitives_sim::{Outcome, Trial, World, WorldConfig};
///
/// let trial = Trial::new("my-lock", |servers, seed| {
///     let mut world = World::new(servers, WorldConfig::new(seed))?;
///     world.actor("client-0", |actor| async move {
///         // ... your code on actor.connection(0), recorded through actor.invoke/ok/fail/info
///         Ok(())
///     });
///     let mut outcome = Outcome::from_run(&world.run()?);
///     // ... outcome.violations.extend(your_checker(&outcome.history));
///     Ok(outcome)
/// });
/// let exploration = redis_primitives_sim::check(&trial, 50);
/// # let _ = exploration;
/// ```
///
/// Its replay command, unless [`Trial::replay_with`] gives another, is made
/// where the trial is made: inside a `#[test]` (whose thread libtest names
/// after the test) `RP_SIM_SEED=N cargo test -p PACKAGE -- --exact TEST
/// --nocapture`, which runs that test with only seed `N` and prints its
/// history ([`crate::check()`] honours the variable); anywhere else the same
/// process's command line with `RP_SIM_SEED=N` in front.
pub struct Trial<F> {
    name: String,
    world: F,
    situations: Vec<Situation>,
    replay: Box<dyn Fn(u64) -> String + Send + Sync>,
}

impl<F> Trial<F>
where
    F: Fn(&mut Servers, u64) -> Result<Outcome, SetupError> + Sync,
{
    /// The experiment named `name` whose seed `s` is `world(servers, s)`.
    pub fn new(name: impl Into<String>, world: F) -> Trial<F> {
        let here = Invocation::current();
        Trial { name: name.into(), world, situations: Vec::new(), replay: Box::new(move |seed| here.command(seed)) }
    }

    /// Declares the situations its seeds exist to reach (the actors record
    /// them with [`crate::Actor::reached`], or the judge adds them with
    /// [`Outcome::reach`]).
    pub fn declares(mut self, situations: &[Situation]) -> Trial<F> {
        self.situations = situations.to_vec();
        self
    }

    /// Replays a seed with `command(seed)` instead: for a program that
    /// takes its seed its own way (`--replay N`).
    pub fn replay_with(mut self, command: impl Fn(u64) -> String + Send + Sync + 'static) -> Trial<F> {
        self.replay = Box::new(command);
        self
    }
}

impl<F> Experiment for Trial<F>
where
    F: Fn(&mut Servers, u64) -> Result<Outcome, SetupError> + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        (self.world)(servers, seed)
    }

    fn situations(&self) -> &[Situation] {
        &self.situations
    }

    fn replay_command(&self, seed: u64) -> String {
        (self.replay)(seed)
    }
}

impl<F> core::fmt::Debug for Trial<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trial").field("name", &self.name).field("situations", &self.situations).finish_non_exhaustive()
    }
}

/// How the process that made a trial was started, captured then: the
/// replay command is printed later, possibly from another job's thread.
#[derive(Debug)]
enum Invocation {
    /// A libtest test: its package (cargo sets `CARGO_PKG_NAME` when it
    /// runs a test binary) and its full path, which libtest gives the
    /// thread that runs it.
    Test { package: Option<String>, test: String },
    /// Anything else: the command line, to be rerun as it was.
    Process(Vec<String>),
}

impl Invocation {
    fn current() -> Invocation {
        match std::thread::current().name() {
            Some(test) if test != "main" => {
                Invocation::Test { package: std::env::var("CARGO_PKG_NAME").ok(), test: test.to_string() }
            }
            // `args_os`: `args` panics on an argument that is not UTF-8.
            _ => Invocation::Process(std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect()),
        }
    }

    fn command(&self, seed: u64) -> String {
        let env = format!("{SEED_ENV}={seed}");
        match self {
            Invocation::Test { package, test } => {
                let package = package.as_deref().map_or(String::new(), |p| format!(" -p {}", quoted(p)));
                format!("{env} cargo test{package} -- --exact {} --nocapture", quoted(test))
            }
            Invocation::Process(args) => {
                let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
                format!("{env} {}", args.join(" "))
            }
        }
    }
}

/// `word` as one shell word: as it is when nothing in it is special to a
/// shell, single-quoted otherwise.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@'));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_made_in_a_test_replays_that_test_with_one_seed() {
        let trial = Trial::new("t", |_servers, _seed| Ok(Outcome::new(Vec::new())));
        let package = std::env::var("CARGO_PKG_NAME").map_or(String::new(), |p| format!(" -p {p}"));
        assert_eq!(
            trial.replay_command(7),
            format!(
                "RP_SIM_SEED=7 cargo test{package} -- --exact \
                 experiment::tests::a_trial_made_in_a_test_replays_that_test_with_one_seed --nocapture"
            )
        );
        let trial = trial.replay_with(|seed| format!("my-prog --replay {seed}"));
        assert_eq!(trial.replay_command(3), "my-prog --replay 3");
    }

    #[test]
    fn outside_a_test_the_command_line_is_rerun_quoted() {
        let process = Invocation::Process(vec!["/bin/prog".into(), "--seeds".into(), "it's here".into()]);
        assert_eq!(process.command(4), r"RP_SIM_SEED=4 /bin/prog --seeds 'it'\''s here'");
    }

    #[test]
    fn a_scenario_replays_through_rp_sim() {
        let lock = crate::scenarios::find("lock").expect("the lock scenario");
        let experiment: &dyn Experiment = lock;
        assert_eq!(experiment.name(), "lock");
        assert_eq!(experiment.replay_command(5), "rp-sim replay --scenario lock --seed 5");
        assert_eq!(experiment.situations().len(), lock.situations.len());
    }
}
