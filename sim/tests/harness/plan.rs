//! Explicit plans (`sim/src/plan.rs`) against real redis-server processes.
//!
//! - For every scenario, the seed-only run and the run of the plan the seed
//!   draws, sent through its JSON, are the same run: same digest, same
//!   violations. So a plan is a faithful, editable spelling-out of a seed
//!   (a seed is drawn through the same strategy the property tests shrink).
//! - The plan survives JSON, and `rp-sim replay --plan` (inline JSON or a
//!   file) reproduces it in another process, digest for digest.
//! - Invalid plans are refused before anything runs (exit status 2).

use redis_primitives_sim::scenarios;
use redis_primitives_sim::{Plan, Servers};

#[test]
fn every_seed_run_is_the_run_of_its_plan() {
    let mut servers = Servers::new();
    for s in scenarios::all() {
        for seed in [1u64, 4] {
            let by_seed = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name));
            let p = Plan::from_seed(s.name, seed).unwrap_or_else(|e| panic!("{} has no seed plan: {e}", s.name));
            p.validate().unwrap_or_else(|e| panic!("{}: seed plan invalid: {e}\n{p}", s.name));
            let json = p.to_json();
            let back = Plan::from_json(&json).unwrap();
            assert_eq!(back, p, "{}: JSON round trip", s.name);
            let by_plan = back.run(&mut servers).unwrap_or_else(|e| panic!("{} plan: {e}", s.name));
            assert_eq!(by_seed.digest, by_plan.digest, "{} seed {seed}: plan run differs\n{p}", s.name);
            assert_eq!(by_seed.violations, by_plan.violations, "{}", s.name);
            println!("{} seed {seed}: digest {} (size {})", s.name, by_plan.digest, p.size());
        }
    }
}

#[test]
fn replay_plan_reproduces_in_another_process() {
    let bin = env!("CARGO_BIN_EXE_rp-sim");
    let mut servers = Servers::new();
    let s = redis_primitives_sim::scenarios::find("lock-naive").unwrap();
    let mut p = Plan::from_seed(s.name, 2).unwrap();
    // Edit the plan as a user edits its JSON: no nemesis faults, two
    // clients (and the stall, if any, on one of them). It is still a run.
    p.schedule.faults.clear();
    let mut edited: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    let workload = &mut edited["workload"];
    workload["clients"] = 2.into();
    if let Some(client) = workload["stall"]["client"].as_u64() {
        workload["stall"]["client"] = (client % 2).into();
    }
    let p = Plan::from_json(&edited.to_string()).unwrap();
    p.validate().unwrap();
    let here = p.run(&mut servers).unwrap();
    let run = |args: &[&str]| std::process::Command::new(bin).args(args).output().expect("rp-sim runs");
    let json = p.to_json();
    let inline = run(&["replay", "--scenario", "lock-naive", "--plan", &json]);
    let stdout = String::from_utf8_lossy(&inline.stdout);
    assert_eq!(stdout.lines().last().unwrap_or_default(), format!("digest: {}", here.digest), "{stdout}");
    assert_eq!(inline.status.code(), Some(if here.violations.is_empty() { 0 } else { 1 }));
    assert!(stdout.contains("plan for lock-naive"), "{stdout}");
    let file = std::env::temp_dir().join(format!("rp-plan-test-{}.json", std::process::id()));
    std::fs::write(&file, &json).unwrap();
    let from_file = run(&["replay", "--scenario", "lock-naive", "--plan", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&from_file.stdout);
    assert_eq!(stdout.lines().last().unwrap_or_default(), format!("digest: {}", here.digest), "{stdout}");
    // Refused before running: wrong scenario, bad JSON, a fault on a client
    // that does not exist, neither --seed nor --plan.
    assert_eq!(run(&["replay", "--scenario", "lock", "--plan", &json]).status.code(), Some(2));
    assert_eq!(run(&["replay", "--scenario", "lock-naive", "--plan", "{nope"]).status.code(), Some(2));
    let bad =
        json.replace("\"faults\":[]", r#""faults":[{"at":1,"duration":1,"kind":"ClientPause","target":{"Client":9}}]"#);
    assert_ne!(bad, json);
    assert_eq!(run(&["replay", "--scenario", "lock-naive", "--plan", &bad]).status.code(), Some(2));
    assert_eq!(run(&["replay", "--scenario", "lock-naive"]).status.code(), Some(2));
}

#[test]
fn unknown_scenarios_have_no_plan() {
    assert!(Plan::from_seed("nope", 1).is_err());
}
