//! Same seed, same history, bit for bit: in one process (twice in a row, on
//! a reused server pool, as `explore` runs seeds) and across processes
//! (the `rp-sim` binary, as `replay` reproduces a seed someone else found).

use std::process::Command;

use redis_primitives_sim::scenarios;
use redis_primitives_sim::{compare_histories, Actor, ActorResult, Op, Servers, World, WorldConfig};

/// Seeds checked per scenario; different seeds must give different digests.
const SEEDS: [u64; 2] = [3, 11];

#[test]
fn every_scenario_gives_the_same_digest_twice_in_one_process() {
    let mut servers = Servers::new();
    let mut checked = 0;
    for scenario in scenarios::all() {
        let mut digests = Vec::new();
        for seed in SEEDS {
            let first =
                scenario.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", scenario.name));
            let second =
                scenario.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", scenario.name));
            println!(
                "{:<24} seed {seed:>3}: {} ({} events, {} ms simulated)",
                scenario.name,
                first.digest,
                first.history.len(),
                first.simulated_ms()
            );
            assert!(first.history.len() > 10, "{} seed {seed} recorded almost nothing", scenario.name);
            if let Err(d) = compare_histories(seed, &first.history, &second.history) {
                panic!("{}: {d}", scenario.name);
            }
            digests.push(first.digest);
        }
        assert_ne!(digests[0], digests[1], "{}: two seeds gave one history", scenario.name);
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} scenarios are implemented");
}

fn replay_digest(scenario: &str, seed: u64) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rp-sim"))
        .args(["replay", "--scenario", scenario, "--seed", &seed.to_string()])
        .output()
        .expect("run rp-sim");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("digest: "))
        .unwrap_or_else(|| {
            panic!(
                "rp-sim replay printed no digest (status {}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_string()
}

#[test]
fn the_same_seed_gives_the_same_digest_across_processes() {
    let scenario = "fencing";
    let seed = 7;
    let a = replay_digest(scenario, seed);
    let b = replay_digest(scenario, seed);
    assert_eq!(a, b, "two rp-sim processes disagree on {scenario} seed {seed}");
    // And both agree with this process.
    let mut servers = Servers::new();
    let here = redis_primitives_sim::scenarios::find(scenario).unwrap().run(&mut servers, seed).unwrap();
    assert_eq!(here.digest.to_string(), a, "this process disagrees with rp-sim");
    println!("{scenario} seed {seed}: digest {a} in three processes");
}

/// The CPUs a process may run on, as `/proc/PID/status` lists them.
fn cpus_allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .expect("Cpus_allowed_list")
}

#[test]
fn placement_changes_the_speed_not_the_history() {
    use redis_primitives_sim::Placement;
    // Separate threads: a pool pins the thread that prepares it, and gives
    // it back when dropped; this test's thread is left as it was.
    let run = |placement: Placement| {
        std::thread::spawn(move || {
            let mut servers = Servers::with_placement(placement);
            let digests: Vec<String> = scenarios::all()
                .map(|s| s.run(&mut servers, 5).unwrap_or_else(|e| panic!("{} seed 5: {e}", s.name)).digest.to_string())
                .collect();
            let pid = servers.node(0).and_then(|n| n.server().pid()).expect("a running server");
            (digests, servers.cpu(), cpus_allowed(pid))
        })
        .join()
        .expect("thread")
    };
    let (shared, cpu, allowed) = run(Placement::SharedCore);
    let cpu = cpu.expect("a shared-core pool pins its thread");
    assert_eq!(allowed, cpu.to_string(), "the pool's server runs on CPU {cpu} alone");
    let (anywhere, none, _) = run(Placement::Anywhere);
    assert_eq!(none, None, "an anywhere pool pins nothing");
    for ((s, a), scenario) in shared.iter().zip(&anywhere).zip(scenarios::all()) {
        assert_eq!(s, a, "{} seed 5: the placement changed the history", scenario.name);
    }
    println!("{} scenarios: the same digest on CPU {cpu} and anywhere", shared.len());
}

/// A world of one's own whose actor breaks a rule (it reads the real clock
/// into what it records): the run completes, and only a second run of the
/// same seed tells. The self-check names the event where the runs part.
#[test]
fn the_self_check_flags_code_that_reads_real_time() {
    async fn client(actor: Actor) -> ActorResult {
        let mut conn = actor.connection(0);
        let _: () = redis::cmd("SET").arg("k").arg("v").query_async(&mut conn).await?;
        // The broken rule: std::time instead of tokio::time.
        let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let id = actor.invoke(Op::Note { text: format!("wrote-at-{}", wall.as_nanos()) });
        actor.ok(id, Op::Note { text: "k".into() });
        Ok(())
    }
    let mut servers = Servers::new();
    let mut run = || {
        let mut world = World::new(&mut servers, WorldConfig::new(5)).expect("world");
        world.actor("client-0", client);
        world.run().expect("run").history.events()
    };
    let (first, second) = (run(), run());
    let d = compare_histories(5, &first, &second).expect_err("real time read into the history was not flagged");
    assert!(d.first.as_deref().is_some_and(|e| e.contains("wrote-at-")), "{d}");
    assert!(d.to_string().contains("std::time"), "{d}");
}

/// `explore --twice` runs each seed twice; the harness's own scenarios
/// keep the rules, so it passes and prints what `explore` prints.
#[test]
fn explore_twice_passes_a_deterministic_scenario() {
    let out = Command::new(env!("CARGO_BIN_EXE_rp-sim"))
        .args(["explore", "--scenario", "lock", "--seeds", "3", "--twice", "--jobs", "1"])
        .output()
        .expect("run rp-sim");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("lock: 3 seeds (0..3), 0 violating"), "{stdout}");
}
