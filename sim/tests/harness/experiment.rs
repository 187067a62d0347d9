//! The runner for a user's own world: a [`Trial`] run by `check` /
//! `try_check` and `explore_with` like a registered scenario.
//!
//! The world is tiny (one client, three `INCR`s over ~150 simulated ms, a
//! real redis-server) and its judge plants a violation on one seed, so that
//! what is checked is the runner: which seed it names, the command it
//! prints, what `RP_SIM_SEED` and `RP_SIM_SEEDS` change, and that a clean
//! world passes.

use std::process::Command;

use core::fmt;
use core::time::Duration;
use redis_primitives_sim::Invariant;
use redis_primitives_sim::{
    check, explore_with, try_check, Actor, ActorResult, CheckError, ExploreOptions, Jobs, Operation, Outcome, Servers,
    SetupError, Situation, SituationName, Trial, Violation, World, WorldConfig,
};

/// The seed whose run the judge declares violating.
const PLANTED_SEED: u64 = 2;
const PLANTED: Invariant = Invariant::new("planted-by-the-judge");
const COUNTED: Situation = Situation { name: SituationName::new("counted"), meaning: "an INCR came back" };

/// The world's one operation, a type of the test's own.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct Count {
    value: Option<i64>,
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(n) => write!(f, "count -> {n}"),
            None => f.write_str("count"),
        }
    }
}

impl Operation for Count {
    fn verb(&self) -> &'static str {
        "count"
    }
}

async fn client(actor: Actor) -> ActorResult {
    let mut conn = actor.connection(0);
    for _ in 0..3 {
        let id = actor.invoke(Count { value: None });
        let reply: redis::RedisResult<i64> = redis::cmd("INCR").arg("n").query_async(&mut conn).await;
        match reply {
            Ok(n) => {
                actor.ok(id, Count { value: Some(n) });
                actor.reached(COUNTED.name);
            }
            Err(_) => actor.info(id, Count { value: None }),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Seed `seed` of the world; with `planted`, the judge finds a violation
/// on [`PLANTED_SEED`].
fn world(servers: &mut Servers, seed: u64, planted: bool) -> Result<Outcome, SetupError> {
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    world.actor("client-0", client);
    let mut outcome = Outcome::from_run(&world.run()?);
    if planted && seed == PLANTED_SEED {
        outcome.violations.push(Violation::new(PLANTED, None, format!("seed {seed} is the planted one")));
    }
    Ok(outcome)
}

#[test]
fn a_planted_violation_names_its_seed_and_the_command_that_replays_it() {
    let trial = Trial::new("planted", |servers, seed| world(servers, seed, true));
    // `cargo test` tells the test binary its package (run by hand, it has none).
    let package = std::env::var("CARGO_PKG_NAME").map_or(String::new(), |p| format!(" -p {p}"));
    let replay = format!(
        "RP_SIM_SEED=2 cargo test{package} -- --exact \
         experiment::a_planted_violation_names_its_seed_and_the_command_that_replays_it --nocapture"
    );
    match try_check(&trial, 5) {
        Err(CheckError::Violated { first, exploration }) => {
            assert_eq!(first.seed, PLANTED_SEED);
            assert_eq!(first.violations.iter().map(|v| &v.invariant).collect::<Vec<_>>(), [&PLANTED]);
            assert_eq!(first.replay, replay);
            // Fail-fast, in seed order: the seeds up to the planted one.
            assert_eq!(exploration.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), [0, 1, 2]);
        }
        other => panic!("expected the planted violation, got {other:?}"),
    }
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&trial, 5)))
        .expect_err("check panics on a violation");
    let message = panic.downcast_ref::<String>().expect("a formatted panic message");
    assert!(message.starts_with("planted: seed 2 violated 1 invariant:\n"), "{message}");
    assert!(message.contains("[planted-by-the-judge] seed 2 is the planted one"), "{message}");
    assert!(message.ends_with(&format!("replay: {replay}")), "{message}");
    if !package.is_empty() {
        assert_eq!(package, " -p redis-primitives-sim");
    }
}

#[test]
fn a_clean_world_passes_and_reaches_what_it_declares() {
    let trial = Trial::new("clean", |servers, seed| world(servers, seed, false)).declares(&[COUNTED]);
    let ex = check(&trial, 3);
    assert_eq!((ex.scenario.as_str(), ex.seeds), ("clean", 3));
    assert!(ex.violating.is_empty(), "{:?}", ex.violating);
    assert_eq!(ex.coverage.get("counted"), Some(&3), "{:?}", ex.coverage);

    // A declared situation no seed reaches fails the check.
    let never = Situation { name: SituationName::new("never"), meaning: "nothing gets here" };
    let trial = Trial::new("clean", |servers, seed| world(servers, seed, false)).declares(&[COUNTED, never]);
    match try_check(&trial, 2) {
        Err(CheckError::Unreached { situations, .. }) => assert_eq!(situations, ["never"]),
        other => panic!("expected `never` unreached, got {other:?}"),
    }
}

#[test]
fn a_trial_explores_like_a_scenario() {
    let trial = Trial::new("planted", |servers, seed| world(servers, seed, true));
    let mut servers = Servers::new();
    let one = explore_with(&trial, &mut servers, ExploreOptions::new(0, 4)).expect("one job");
    let two = explore_with(&trial, &mut servers, ExploreOptions::new(0, 4).jobs(Jobs::new(2).expect("2 jobs")))
        .expect("two jobs");
    assert_eq!(one.digest, two.digest, "the jobs split the seeds, not the result");
    assert_eq!(one.violating, two.violating);
    assert_eq!(one.violating.iter().map(|s| s.seed).collect::<Vec<_>>(), [PLANTED_SEED]);
    // The determinism self-check (`--twice`) holds for a world of one's own.
    explore_with(&trial, &mut servers, ExploreOptions::new(0, 2).twice(true)).expect("each seed gives one history");
}

/// The ignored test below, in a process of its own, with `vars` set: what
/// it printed.
fn child(vars: &[(&str, &str)]) -> String {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "experiment::seeds_from_the_environment", "--ignored", "--nocapture", "--test-threads", "1"])
        .env_remove("RP_SIM_SEED")
        .env_remove("RP_SIM_SEEDS")
        .envs(vars.iter().copied())
        .output()
        .expect("the test binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child test did not run: {text}");
    text
}

#[test]
fn the_environment_narrows_or_widens_the_seeds() {
    // One seed, its history printed, judged.
    let text = child(&[("RP_SIM_SEED", "2")]);
    assert!(text.contains("seeds run: [2]\n"), "{text}");
    assert!(text.contains("verdict: seed 2 violated\n"), "{text}");
    assert!(text.contains("planted seed 2: "), "the history's header: {text}");
    assert!(text.contains("count -> 3"), "the history's last count: {text}");
    assert!(text.contains("VIOLATION [planted-by-the-judge]"), "{text}");
    let text = child(&[("RP_SIM_SEED", "1")]);
    assert!(text.contains("seeds run: [1]\n") && text.contains("verdict: clean\n"), "{text}");
    // The test names one seed; the variable runs three.
    let text = child(&[("RP_SIM_SEEDS", "3")]);
    assert!(text.contains("seeds run: [0, 1, 2]\n") && text.contains("verdict: seed 2 violated\n"), "{text}");
}

#[test]
#[ignore = "run by the_environment_narrows_or_widens_the_seeds, with RP_SIM_SEED or RP_SIM_SEEDS set"]
fn seeds_from_the_environment() {
    let trial = Trial::new("planted", |servers, seed| world(servers, seed, true));
    let (ex, verdict) = match try_check(&trial, 1) {
        Ok(ex) => (ex, "clean".to_string()),
        Err(CheckError::Violated { first, exploration }) => (*exploration, format!("seed {} violated", first.seed)),
        Err(e) => panic!("{e}"),
    };
    println!("seeds run: {:?}", ex.runs.iter().map(|r| r.seed).collect::<Vec<_>>());
    println!("verdict: {verdict}");
}

/// A trial gets the baseline check as a library call: measured twice it
/// matches itself; a violation the baseline lacks is a departure naming the
/// seed and the invariant; the file round-trips.
#[test]
fn a_trial_is_held_to_its_baseline() {
    use redis_primitives_sim::{Baseline, Departure};
    let clean = Trial::new("baselined", |servers, seed| world(servers, seed, false));
    let planted = Trial::new("baselined", |servers, seed| world(servers, seed, true));
    let mut servers = Servers::new();
    let base = Baseline::measure(&mut servers, &[&clean]).expect("measured");
    let path = std::env::temp_dir().join(format!("rp-trial-baseline-{}.json", std::process::id()));
    base.write(&path).expect("written");
    let read = Baseline::read(&path).expect("read back");
    let _ = std::fs::remove_file(&path);
    assert_eq!(read, base);
    let again = Baseline::measure(&mut servers, &[&clean]).expect("measured again");
    assert!(read.departures(&again, &[&clean]).is_empty());
    let now = Baseline::measure(&mut servers, &[&planted]).expect("measured with the planted violation");
    let departures = read.departures(&now, &[&planted]);
    match departures.as_slice() {
        [Departure::NewViolation { scenario, seed, invariant }] => {
            assert_eq!((scenario.as_str(), *seed, invariant), ("baselined", PLANTED_SEED, &PLANTED));
        }
        other => panic!("expected one new violation, got {other:?}"),
    }
}
