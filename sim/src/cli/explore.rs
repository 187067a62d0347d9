//! `explore`, `check` and `merge`: run a scenario over seeds (or compare
//! its pinned seed sets with a baseline, or merge shards), and print what
//! was found.

use super::*;

pub(super) fn explore_cmd(args: ExploreArgs, placement: Placement) -> i32 {
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
        let family = scenario.runs.family();
        match crate::plot::write_one(dir, family, scenario.name, &ex.histograms, scenario.runs.bounds()) {
            Ok(files) => {
                for f in files {
                    eprintln!("plot: {}", f.display());
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

pub(super) fn check_cmd(args: CheckArgs, placement: Placement) -> i32 {
    use crate::baseline::Baseline;
    let mut chosen = Vec::new();
    for name in &args.scenario {
        match lookup(name) {
            Ok(s) => chosen.push(s),
            Err(code) => return code,
        }
    }
    if chosen.is_empty() {
        chosen = scenarios::all().collect();
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
    let experiments: Vec<&dyn crate::Experiment> = chosen.iter().map(|s| *s as &dyn crate::Experiment).collect();
    let now = match Baseline::measure(&mut servers, &experiments) {
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
    let drift = base.departures(&now, &experiments);
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

pub(super) fn merge_cmd(args: MergeArgs) -> i32 {
    let files: Result<Vec<_>, _> = args.files.iter().map(|p| crate::shard::ShardFile::read(p)).collect();
    let merged = files.and_then(|f| crate::shard::merge(&f));
    match merged {
        Ok(ex) => match lookup(&ex.scenario) {
            Ok(scenario) => print_exploration(&ex, scenario, args.json),
            Err(code) => code,
        },
        Err(e) => {
            eprintln!("rp-sim merge: {e}");
            2
        }
    }
}

/// Prints an exploration (text, or `--json`); its exit status.
pub(super) fn print_exploration(ex: &crate::exploration::Exploration, scenario: &'static Scenario, json: bool) -> i32 {
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
                // Live, how far an instant missed its bound is weighed
                // against the run's jitter: say it (the simulation's runs
                // have no jitter, and their output stays as it was).
                match (ex.jitter, v.missed_by) {
                    (Some(_), Some(by)) => println!(
                        "  [{}] {} (missed its bound by {:.1} ms)",
                        v.invariant,
                        v.detail,
                        by.as_secs_f64() * 1000.0
                    ),
                    _ => println!("  [{}] {}", v.invariant, v.detail),
                }
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
            let n = ex.count_of(&name);
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
