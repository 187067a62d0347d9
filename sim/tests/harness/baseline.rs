//! `rp-sim check` against the committed `reports/baseline.json`: the
//! election's seed set matches it as the library stands, and a broken
//! primitive — the renewal script replaced by one that never renews, loaded
//! into the production `Election` through the mutation hook — fails it with
//! one readable line per difference and the command that accepts the change.

use std::path::PathBuf;
use std::process::Command;

fn check(mutant: Option<&str>) -> (Option<i32>, String) {
    let baseline = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reports/baseline.json");
    let mut c = Command::new(env!("CARGO_BIN_EXE_rp-sim"));
    c.args(["check", "--scenario", "election", "--baseline", baseline.to_str().unwrap()]);
    let scratch = std::env::temp_dir().join(format!("rp-check-mutant-{}.lua", std::process::id()));
    if let Some(text) = mutant {
        std::fs::write(&scratch, text).unwrap();
        c.env("RP_MUTANT_SCRIPT", "lock_extend").env("RP_MUTANT_FILE", &scratch);
    }
    let out = c.output().expect("rp-sim runs");
    let _ = std::fs::remove_file(&scratch);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_baseline_holds_and_a_broken_renewal_fails_it_readably() {
    let (code, text) = check(None);
    assert_eq!(code, Some(0), "the committed baseline no longer matches:\n{text}");
    let (code, text) = check(Some("return 0\n"));
    assert_eq!(code, Some(1), "a leader that can never renew passed the check:\n{text}");
    assert!(
        text.lines().any(
            |l| l.trim_start().starts_with("election hand-over") || l.trim_start().starts_with("election failover")
        ),
        "no histogram line in:\n{text}"
    );
    assert!(
        text.lines().any(|l| l.contains(" → ") && (l.contains(" ms (") || l.contains(" samples ("))),
        "no from → to figure in:\n{text}"
    );
    assert!(text.contains("rp-sim check --update"), "no update command in:\n{text}");
}
