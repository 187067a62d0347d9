//! `mutants`: mutate the library's Lua scripts (or, with the `mutants`
//! feature, its Rust) and count what the checkers kill.

use super::*;

pub(super) fn mutants_cmd(args: MutantsArgs) -> i32 {
    use crate::mutants::{generate, judge, markdown, scratch_file, MutantResult, Verdict};
    let all = crate::mutants::scripts();
    let scripts: Vec<_> = all.iter().filter(|s| args.script.as_deref().is_none_or(|n| n == s.name)).collect();
    if scripts.is_empty() {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        eprintln!("rp-sim: no script named {:?}; scripts: {}", args.script.unwrap_or_default(), names.join(", "));
        return 2;
    }
    if args.list {
        for s in &scripts {
            for m in generate(s) {
                println!("{m}");
            }
        }
        return 0;
    }
    if !redis_primitives::mutation_hooks_enabled() {
        eprintln!(
            "rp-sim mutants: this rp-sim was built without the library's mutation hooks, so no mutant \
             could take effect and every one would survive. Build it with the `mutants` feature: \
             cargo run --release -p redis-primitives-sim --features mutants -- mutants"
        );
        return 2;
    }
    let rp_sim = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rp-sim: cannot find its own executable to run mutants in: {e}");
            return 2;
        }
    };
    let scratch = scratch_file();
    let mut results = Vec::new();
    let total: usize = scripts.iter().map(|s| generate(s).len()).sum();
    for s in &scripts {
        for mutant in generate(s) {
            let verdict = match judge(&rp_sim, &scratch, &mutant, &s.scenarios, args.seeds) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("rp-sim: cannot run a mutant: {e}");
                    let _ = std::fs::remove_file(&scratch);
                    return 2;
                }
            };
            let label = match &verdict {
                Verdict::Killed { scenario, seed, invariant } => {
                    format!("killed ({scenario} seed {seed}: {invariant})")
                }
                Verdict::Equivalent { .. } => "equivalent".to_string(),
                Verdict::Survived => "SURVIVED".to_string(),
                Verdict::Error { message } => format!("error: {message}"),
            };
            eprintln!("[{}/{total}] {mutant}: {label}", results.len() + 1);
            results.push(MutantResult { mutant, verdict });
        }
    }
    let _ = std::fs::remove_file(&scratch);
    let mut md = markdown(&results, args.seeds);
    if let Some(dir) = &args.cargo_mutants {
        match crate::rust_mutants::read(dir) {
            Ok(outcomes) => {
                md.push('\n');
                md.push_str(&crate::rust_mutants::markdown(&outcomes));
            }
            Err(e) => {
                eprintln!("rp-sim: cannot read cargo-mutants results in {}: {e}", dir.display());
                return 2;
            }
        }
    }
    print!("{md}");
    if let Some(out) = &args.out {
        if let Err(e) = std::fs::write(out, &md) {
            eprintln!("rp-sim: cannot write {}: {e}", out.display());
            return 2;
        }
    }
    let survived = results.iter().any(|r| matches!(r.verdict, Verdict::Survived));
    let errors = results.iter().any(|r| matches!(r.verdict, Verdict::Error { .. }));
    if errors {
        2
    } else if survived {
        1
    } else {
        0
    }
}
