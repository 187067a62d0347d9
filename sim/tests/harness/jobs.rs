//! `explore --jobs N`: N simulations at once, each with servers of its own,
//! give what one job gives: the same violations, histograms, coverage,
//! operations and digest (all but the wall time), alone or inside a shard,
//! and with `--fail-fast` too, whichever job gets to a violation first.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rp-sim");

fn explore(scenario: &str, seeds: &str, start: &str, jobs: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = Command::new(BIN)
        .args(["explore", "--scenario", scenario, "--seeds", seeds, "--start-seed", start, "--json", "--jobs", jobs])
        .args(extra)
        .output()
        .expect("rp-sim runs");
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    v.as_object_mut().expect("an object").remove("wall_seconds");
    (out.status.code(), v)
}

#[test]
fn jobs_give_the_one_job_result() {
    let (code, one) = explore("lock-naive", "12", "40", "1", &[]);
    assert_eq!(code, Some(1), "lock-naive violates");
    assert!(one["violations"].as_array().is_some_and(|v| v.len() > 1), "{one}");
    assert!(one["histograms"].as_object().is_some_and(|h| !h.is_empty()));
    for jobs in ["2", "3"] {
        let (code, many) = explore("lock-naive", "12", "40", jobs, &[]);
        assert_eq!(code, Some(1));
        assert_eq!(many, one, "--jobs {jobs} differs from --jobs 1");
    }
    // Inside a shard: the jobs split the shard's seeds, not the range's.
    let (_, shard_one) = explore("lock-naive", "12", "40", "1", &["--shard", "1/2"]);
    let (_, shard_two) = explore("lock-naive", "12", "40", "2", &["--shard", "1/2"]);
    assert_eq!(shard_one["seeds"], 6);
    assert_eq!(shard_two, shard_one, "--shard 1/2 --jobs 2 differs from --jobs 1");
}

#[test]
fn fail_fast_gives_the_one_job_result_with_any_number_of_jobs() {
    // Seed 24 of election-no-epoch is clean and 25 violates (of its seeds
    // 0..50, 0, 3, 24, 32, 41 and 49 are clean): with three jobs, job 1 gets
    // 25 while job 0 runs 24, and job 2 may finish 26 first; what ran past
    // the first violating seed is dropped, as one job never runs it.
    let (code, one) = explore("election-no-epoch", "30", "24", "1", &["--fail-fast"]);
    assert_eq!(code, Some(1));
    let first = one["violations"][0]["seed"].as_u64().expect("a violation");
    assert_eq!(one["seeds"].as_u64(), Some(first - 24 + 1), "one job stops at its first violating seed: {one}");
    for jobs in ["2", "3"] {
        let (code, many) = explore("election-no-epoch", "30", "24", jobs, &["--fail-fast"]);
        assert_eq!(code, Some(1));
        assert_eq!(many, one, "--jobs {jobs} --fail-fast differs from --jobs 1");
    }
}

#[test]
fn zero_jobs_is_a_usage_error() {
    let out = Command::new(BIN).args(["explore", "--scenario", "lock", "--jobs", "0"]).output().expect("rp-sim runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 1"), "{stderr}");
}

#[test]
fn each_job_takes_a_cpu_of_its_own_even_when_its_caller_is_pinned() {
    // Alone in a process of its own: pools of tests running beside it in
    // this one would count towards the CPUs' loads.
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "jobs::pinned_caller_then_two_jobs", "--ignored", "--nocapture", "--test-threads", "1"])
        .output()
        .expect("the test binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child test did not run: {text}");
}

#[test]
#[ignore = "run alone in a process by each_job_takes_a_cpu_of_its_own_even_when_its_caller_is_pinned"]
fn pinned_caller_then_two_jobs() {
    use redis_primitives_sim::{explore_with, scenarios, ExploreOptions, Jobs, Servers};
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lock = scenarios::find("lock").expect("the lock scenario");
    let mut servers = Servers::new();
    // As in `rp-sim report`: the caller's pool has run a seed, so its
    // thread is pinned when the jobs are spawned (they inherit its mask).
    lock.run(&mut servers, 0).expect("seed 0 runs");
    let caller = servers.cpu().expect("the default placement pins");
    let ex = explore_with(lock, &mut servers, ExploreOptions::new(0, 4).jobs(Jobs::new(2).expect("2 jobs")))
        .expect("the exploration runs");
    println!("caller on CPU {caller}, jobs on {:?}, {cpus} CPU(s) allowed", ex.cpus);
    assert_eq!(ex.cpus.len(), 2, "{:?}", ex.cpus);
    assert_eq!(ex.cpus[0], caller, "job 0 runs on the caller's pool");
    if cpus > 1 {
        assert_ne!(ex.cpus[1], caller, "job 1 shares the caller's CPU");
    } else {
        assert_eq!(ex.cpus[1], caller, "one CPU: both jobs on it");
    }
}

/// The lock scenario, except that one seed panics (a harness bug planted
/// for the test) and every run is counted. A seed that starts before the
/// panic waits for it, so that every other job is inside a seed when it
/// happens, whatever the machine's load.
#[test]
fn a_panicking_seed_stops_every_job_and_surfaces() {
    use redis_primitives_sim::{explore_with, scenarios, ExploreOptions, Jobs, Servers, Trial};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const PANICS_AT: u64 = 1;
    let lock = scenarios::find("lock").expect("the lock scenario");
    let runs = AtomicU64::new(0);
    let panicked = AtomicBool::new(false);
    let trial = Trial::new("lock-panics-at-1", |servers: &mut Servers, seed| {
        runs.fetch_add(1, Ordering::SeqCst);
        if seed == PANICS_AT {
            // Set while the panic unwinds, after the panic hook has printed
            // (which can take long on a loaded machine), a few frames below
            // where the harness stops the other jobs.
            struct Unwound<'a>(&'a AtomicBool);
            impl Drop for Unwound<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let _unwound = Unwound(&panicked);
            panic!("planted panic at seed {seed}");
        }
        if !panicked.load(Ordering::SeqCst) {
            // Only a guard against a job that never panics.
            let waited = std::time::Instant::now();
            while !panicked.load(Ordering::SeqCst) && waited.elapsed() < std::time::Duration::from_secs(120) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // The harness stops the other jobs a few frames of unwinding
            // after `panicked`; this seed ends well after that.
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        lock.run(servers, seed)
    });
    let mut servers = Servers::new();
    let options = ExploreOptions::new(0, 200).jobs(Jobs::new(2).expect("2 jobs"));
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| explore_with(&trial, &mut servers, options)));
    assert!(outcome.is_err(), "the planted panic surfaces");
    // Job 1 panics at its first seed (1); job 0 finishes the seed it was
    // running (0, if it had started it) and starts no other: at most two
    // runs, not 200.
    let runs = runs.load(Ordering::SeqCst);
    assert!((1..=2).contains(&runs), "{runs} seeds ran; a job panicked at seed 1");
}
