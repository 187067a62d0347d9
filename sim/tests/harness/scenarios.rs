//! Pinned seeds of every scenario, against real redis-server processes.
//!
//! - Every broken variant must produce *its* violation on each of its pinned
//!   seeds: a harness that stops catching them is broken itself.
//! - Every correct scenario must produce none on its pinned seeds.
//! - Determinism: one seed run twice gives the same digest, in this process
//!   and in a separate `rp-sim replay` process.
//!
//! Seeds are pinned rather than searched so a failure names the exact
//! `rp-sim replay --scenario NAME --seed S --trace` to look at.

use redis_primitives_sim::scenarios::{self, Expect, Scenario};
use redis_primitives_sim::Invariant;
use redis_primitives_sim::Servers;

/// Seeds on which each correct scenario must pass: the same set the
/// coverage test requires to reach every declared situation, so these runs
/// are the ones that judge a bug in a correct primitive. They are also the
/// test command of the Rust mutation run (`reports/mutants.md`): a mutant of
/// the library counts as killed when one of these seeds violates.
const CLEAN_SEEDS: std::ops::Range<u64> = 0..24;

fn replay_hint(name: &str, seed: u64) -> String {
    format!("rp-sim replay --scenario {name} --seed {seed} --trace")
}

#[test]
fn broken_variants_produce_their_violation() {
    let mut servers = Servers::new();
    let mut checked = 0;
    for s in scenarios::all() {
        let Expect::Violates(invariant) = s.expect else { continue };
        for &seed in s.pinned_seeds {
            let o = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name));
            let found: Vec<&Invariant> = o.violations.iter().map(|v| &v.invariant).collect();
            assert!(
                found.contains(&invariant),
                "{} seed {seed}: expected a {invariant} violation, found {found:?}\n  {}",
                s.name,
                replay_hint(s.name, seed)
            );
            println!("{} seed {seed}: {}", s.name, o.violations[0]);
            checked += 1;
        }
    }
    let broken = scenarios::all().filter(|s| s.expect != Expect::Clean).map(|s| s.pinned_seeds.len()).sum::<usize>();
    assert_eq!(checked, broken, "every pinned seed of every broken variant ran");
}

/// `RP_GATE_SCENARIOS=a,b` restricts the clean runs to those scenarios (the
/// Rust mutation run tests each file against the scenarios of its family:
/// `reports/mutants.md`); unset, every correct scenario runs.
fn gate_scenarios() -> Option<Vec<String>> {
    std::env::var("RP_GATE_SCENARIOS").ok().map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
}

/// Whether `s` is one of the gate's scenarios (`only`, from
/// [`gate_scenarios`]): every scenario when the variable is unset.
fn in_gate(only: &Option<Vec<String>>, s: &Scenario) -> bool {
    only.as_ref().is_none_or(|names| names.iter().any(|n| n == s.name))
}

/// The correct lock and election scenarios on Valkey 9 (`VALKEY_SERVER`,
/// or `valkey-server` on `PATH`; the install hint without one). On Redis 7
/// every release and extend is a script; on Valkey they are the native
/// `DELIFEQ` and `SET … IFEQ … PX` (ADR 0013), which no other scenario run
/// reaches. Each runs in an `rp-sim` process of its own with
/// `REDIS_SERVER` pointing at Valkey, over the clean seeds.
#[test]
fn correct_lock_scenarios_violate_nothing_on_valkey() {
    let valkey = redis_primitives_testkit::valkey_server_binary().unwrap_or_else(|e| panic!("{e}"));
    for name in ["lock", "fencing", "election", "election-renew-only"] {
        let seeds = CLEAN_SEEDS.count().to_string();
        let start = CLEAN_SEEDS.start.to_string();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rp-sim"))
            .args(["explore", "--scenario", name, "--seeds", &seeds, "--start-seed", &start])
            .env("REDIS_SERVER", &valkey)
            .output()
            .expect("run rp-sim");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name} on Valkey, seeds {CLEAN_SEEDS:?} (replay with REDIS_SERVER={}):\n{stdout}\n{}",
            valkey.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(", 0 violating;"), "{name} on Valkey: no clean summary in\n{stdout}");
    }
}

#[test]
fn correct_scenarios_violate_nothing() {
    let mut servers = Servers::new();
    let mut checked = 0;
    let only = gate_scenarios();
    if let Some(names) = &only {
        for n in names {
            assert!(
                scenarios::find(n).is_some_and(|s| s.expect == Expect::Clean),
                "RP_GATE_SCENARIOS: {n} is not a correct scenario"
            );
        }
    }
    for s in scenarios::all().filter(|s| s.expect == Expect::Clean && in_gate(&only, s)) {
        for seed in CLEAN_SEEDS {
            let o = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name));
            assert!(
                o.violations.is_empty(),
                "{} seed {seed} violated: {:?}\n  {}\n  schedule: {:?}",
                s.name,
                o.violations,
                replay_hint(s.name, seed),
                o.schedule
            );
            assert!(!o.history.is_empty(), "{} seed {seed}: empty history", s.name);
            checked += 1;
        }
    }
    let correct = scenarios::all().filter(|s| s.expect == Expect::Clean).count();
    let scenarios = only.map_or(correct, |names| names.len());
    assert!(checked >= scenarios * CLEAN_SEEDS.count(), "only {checked} clean runs checked");
}

#[test]
fn same_seed_same_digest_in_process_and_across_processes() {
    let mut servers = Servers::new();
    let bin = env!("CARGO_BIN_EXE_rp-sim");
    // Under RP_GATE_SCENARIOS only those: the mutation run's test command
    // includes this test, so a library change that draws from unseeded
    // randomness (an owner, a jitter) is a killed mutant.
    let only = gate_scenarios();
    for s in scenarios::all().filter(|s| in_gate(&only, s)) {
        let seed = 11;
        let a = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        let b = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(a.digest, b.digest, "{}: two runs of seed {seed} differ in this process", s.name);
        assert_eq!(a.history, b.history, "{}", s.name);
        let out = std::process::Command::new(bin)
            .args(["replay", "--scenario", s.name, "--seed", &seed.to_string()])
            .output()
            .expect("rp-sim runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        assert_eq!(last, format!("digest: {}", a.digest), "{}: another process got another digest\n{stdout}", s.name);
        // Replay exits 1 exactly when the seed violates something.
        assert_eq!(out.status.code(), Some(if a.violations.is_empty() { 0 } else { 1 }), "{}", s.name);
        println!("{} seed {seed}: digest {} ({} events)", s.name, a.digest, a.history.len());
    }
}

#[test]
fn cli_exit_codes_and_json() {
    let bin = env!("CARGO_BIN_EXE_rp-sim");
    let run = |args: &[&str]| std::process::Command::new(bin).args(args).output().expect("rp-sim runs");
    // Usage errors: 2.
    assert_eq!(run(&["explore"]).status.code(), Some(2));
    assert_eq!(run(&["explore", "--scenario", "no-such"]).status.code(), Some(2));
    // A clean exploration: 0; a broken one: 1, with a JSON object on stdout.
    assert_eq!(run(&["explore", "--scenario", "rate-limit", "--seeds", "2"]).status.code(), Some(0));
    let out = run(&["explore", "--scenario", "rate-limit-fixed-window", "--seeds", "2", "--start-seed", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["scenario"], "rate-limit-fixed-window");
    assert_eq!(v["seeds"], 2);
    let first = &v["violations"][0];
    assert_eq!(first["invariant"], "rate-limit");
    assert_eq!(first["replay"], format!("rp-sim replay --scenario rate-limit-fixed-window --seed {}", first["seed"]));
    let h = &v["histograms"]["admissions-per-window"];
    for k in ["count", "min", "p50", "p90", "p99", "max", "unit"] {
        assert!(!h[k].is_null(), "histogram field {k} missing: {h}");
    }
    assert_eq!(v["digest"].as_str().map(str::len), Some(16));
}

#[test]
fn output_into_a_closed_pipe_is_dropped_not_a_panic() {
    // `rp-sim … | head`: the reader is gone before rp-sim writes. Rust
    // ignores SIGPIPE, so every write fails with EPIPE; std's println!
    // panics on that, and rp-sim must not.
    let bin = env!("CARGO_BIN_EXE_rp-sim");
    for args in [&["scenarios"][..], &["explore", "--scenario", "rate-limit-fixed-window", "--seeds", "2"][..]] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = std::process::Command::new(bin).args(args).stdout(writer).output().expect("rp-sim runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        let expected = if args[0] == "scenarios" { 0 } else { 1 };
        assert_eq!(out.status.code(), Some(expected), "{args:?}: the exit status still says what was found; {stderr}");
    }
}
