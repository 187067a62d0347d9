//! `rp-sim check` against the committed baseline of the server in use
//! (`reports/baseline.json` on Redis, `reports/baseline-valkey.json` on Valkey): the
//! election's seed set matches it as the library stands, and a broken
//! primitive — the release script replaced by one that never deletes, loaded
//! into the production `Election` through the mutation hook, so a stopping
//! leader's hand-back does nothing and the next leader waits out the lease —
//! fails it with one readable line per difference (the hand-over times
//! move by an order of magnitude) and the command that accepts the change.
//!
//! (A renewal that never renews was the mutant here once; since the
//! election's runs also take a leader's key away, its failovers stay within
//! the histograms' tolerance and it is caught by violations alone.)

use std::path::PathBuf;
use std::process::Command;

use redis_primitives_testkit::{redis_server_binary, ServerKind};

/// The committed baseline of the server this run uses: its figures are
/// that server's (`reports/baseline.json` Redis 7's, `baseline-valkey.json`
/// Valkey 9's), so a machine with only Valkey checks against Valkey's.
fn baseline() -> PathBuf {
    let binary = redis_server_binary().unwrap_or_else(|e| panic!("{e}"));
    let file = match ServerKind::of(&binary).unwrap_or_else(|e| panic!("{e}")) {
        ServerKind::Redis => "baseline.json",
        ServerKind::Valkey => "baseline-valkey.json",
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reports").join(file)
}

fn check(mutant: Option<&str>) -> (Option<i32>, String) {
    let baseline = baseline();
    let mut c = Command::new(env!("CARGO_BIN_EXE_rp-sim"));
    c.args(["check", "--scenario", "election", "--baseline", baseline.to_str().unwrap()]);
    let scratch = std::env::temp_dir().join(format!("rp-check-mutant-{}.lua", std::process::id()));
    if let Some(text) = mutant {
        std::fs::write(&scratch, text).unwrap();
        c.env("RP_MUTANT_SCRIPT", "lock_release").env("RP_MUTANT_FILE", &scratch);
    }
    let out = c.output().expect("rp-sim runs");
    let _ = std::fs::remove_file(&scratch);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_baseline_holds_and_a_broken_hand_back_fails_it_readably() {
    let (code, text) = check(None);
    assert_eq!(code, Some(0), "the committed baseline no longer matches:\n{text}");
    // Valkey releases with its native DELIFEQ, not the release script, so
    // the mutated script never runs there: the broken hand-back is Redis's
    // half of this test (CI runs it on Redis 7).
    if ServerKind::of(&redis_server_binary().unwrap_or_else(|e| panic!("{e}"))).ok() == Some(ServerKind::Valkey) {
        return;
    }
    let (code, text) = check(Some("return 0\n"));
    assert_eq!(code, Some(1), "a leader whose hand-back deletes nothing passed the check:\n{text}");
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
