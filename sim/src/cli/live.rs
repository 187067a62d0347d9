//! `live`: a scenario's plans run in real time (`crate::live`), judged and
//! printed as `explore` judges and prints the simulated ones; with
//! `--agreement`, the table of both tiers side by side (`crate::agreement`).

use super::*;

pub(super) fn live_cmd(args: LiveArgs) -> i32 {
    let mut chosen = Vec::new();
    for name in &args.scenario {
        match lookup(name) {
            Ok(s) => chosen.push(s),
            Err(code) => return code,
        }
    }
    if let Some(out) = &args.agreement {
        if chosen.is_empty() {
            chosen = scenarios::all().collect();
        }
        return agreement_cmd(&chosen, args.runs, out);
    }
    let [scenario] = chosen[..] else {
        eprintln!("rp-sim live: name one scenario with --scenario (several only with --agreement)");
        return 2;
    };
    let mut servers = Servers::live();
    let options = ExploreOptions::new(args.start_seed, args.runs)
        .jobs(Jobs::ONE)
        .progress(crate::progress::Progress::for_stderr())
        .fail_fast(args.fail_fast);
    let mut ex = match explore_with(scenario, &mut servers, options) {
        Ok(ex) => ex,
        Err(e) => {
            eprintln!("rp-sim: set-up error: {e}");
            return 2;
        }
    };
    drop(servers);
    for s in &mut ex.violating {
        s.replay = format!(
            "rp-sim live --scenario {} --runs 1 --start-seed {} (not exact: a live run does not replay); \
             the same plan simulated: {}",
            scenario.name, s.seed, s.replay
        );
    }
    let status = print_exploration(&ex, scenario, args.json);
    if !args.json {
        print_within_jitter(&ex);
    }
    status
}

/// `--agreement FILE`: both tiers, the table written to `out` (its
/// hand-written section kept). 0 when written, 2 on a set-up or I/O error:
/// a disagreement is a finding of the report, not a failure of the command.
fn agreement_cmd(chosen: &[&'static Scenario], runs: u64, out: &std::path::Path) -> i32 {
    let earlier = match std::fs::read_to_string(out) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!("rp-sim live: cannot read {}: {e}", out.display());
            return 2;
        }
    };
    let rows = match crate::agreement::measure(chosen, runs, Jobs::available()) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("rp-sim: set-up error: {e}");
            return 2;
        }
    };
    let by_hand = earlier.as_deref().and_then(crate::agreement::written_by_hand);
    let report = crate::agreement::markdown(&rows, runs, by_hand);
    if let Err(e) = std::fs::write(out, report) {
        eprintln!("rp-sim live: cannot write {}: {e}", out.display());
        return 2;
    }
    println!("agreement table written to {} ({} scenarios, {runs} runs each)", out.display(), rows.len());
    0
}

/// What the runs' checks of instants found within their runs' jitter:
/// counted, never judged (`Outcome::weigh_jitter`).
fn print_within_jitter(ex: &crate::exploration::Exploration) {
    let Some(jitter) = ex.jitter else { return };
    println!();
    println!(
        "jitter: the runs' timers fired up to {:.1} ms late, clock resolution included; a check of an instant that \
         missed its bound by no more than its run's jitter is counted here, not as a violation",
        jitter.as_secs_f64() * 1000.0
    );
    if ex.within_jitter.is_empty() {
        println!("  (none did)");
    }
    for (invariant, w) in &ex.within_jitter {
        println!(
            "  {invariant}: {} within jitter in {} run(s), missed by at most {:.3} ms",
            w.violations,
            w.runs,
            w.max_missed_by_us as f64 / 1000.0
        );
    }
}
