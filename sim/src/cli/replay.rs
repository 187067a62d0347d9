//! `replay`: re-run one seed or one plan of a scenario, deterministically,
//! with its trace, timeline and histograms on request.

use super::*;

/// Reads `--plan`: inline JSON, or a file holding it.
fn read_plan(arg: &str) -> Result<crate::plan::Plan, String> {
    let json = if arg.trim_start().starts_with('{') {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read plan file {arg}: {e}"))?
    };
    crate::plan::Plan::from_json(&json)
}

pub(super) fn replay_cmd(args: ReplayArgs, placement: Placement) -> i32 {
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
