//! `explore --shard I/N --out FILE` in N processes, then `rp-sim merge`:
//! the merged result is the unsharded run's, field for field (violations,
//! histograms, coverage, operations, digest), all but the wall time; and
//! files that are not the N shards of one exploration are refused.

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_rp-sim");

fn json_without_wall(out: &Output) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    v.as_object_mut().expect("an object").remove("wall_seconds");
    v
}

fn explore(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["explore", "--scenario", "lock-naive", "--seeds", "12", "--start-seed", "40", "--json"]).args(args);
    c
}

#[test]
fn merged_shards_are_the_unsharded_run() {
    let dir = std::env::temp_dir().join(format!("rp-shard-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |i: u32| -> PathBuf { dir.join(format!("shard-{i}.json")) };
    // Three processes at once, as three machines would run them.
    let children: Vec<_> = (0..3)
        .map(|i| {
            let out = file(i);
            explore(&["--shard", &format!("{i}/3"), "--out", out.to_str().unwrap()]).output()
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let c = c.expect("rp-sim runs");
        assert_eq!(c.status.code(), Some(1), "shard {i}: lock-naive violates on some of its seeds");
    }
    let whole = explore(&[]).output().expect("rp-sim runs");
    assert_eq!(whole.status.code(), Some(1));
    let files: Vec<String> = [2, 0, 1].iter().map(|&i| file(i).to_str().unwrap().to_string()).collect();
    let merged = Command::new(BIN).arg("merge").args(&files).arg("--json").output().expect("rp-sim runs");
    assert_eq!(merged.status.code(), Some(1), "{}", String::from_utf8_lossy(&merged.stderr));
    let (w, m) = (json_without_wall(&whole), json_without_wall(&merged));
    assert!(w["violations"].as_array().is_some_and(|v| !v.is_empty()));
    assert!(w["histograms"].as_object().is_some_and(|h| !h.is_empty()));
    assert_eq!(m, w, "merge(shards) differs from the unsharded run");

    // Refused (exit 2): a shard missing, a shard twice, a file of another range.
    let code = |args: &[&str]| Command::new(BIN).arg("merge").args(args).output().unwrap().status.code();
    assert_eq!(code(&[&files[0], &files[1]]), Some(2));
    assert_eq!(code(&[&files[0], &files[0], &files[1]]), Some(2));
    let other = dir.join("other.json");
    let o = Command::new(BIN)
        .args([
            "explore",
            "--scenario",
            "lock-naive",
            "--seeds",
            "6",
            "--shard",
            "0/3",
            "--out",
            other.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(code(&[other.to_str().unwrap(), &files[1], &files[2]]), Some(2));
    assert_eq!(code(&[dir.join("nope.json").to_str().unwrap()]), Some(2));
    let bad = Command::new(BIN).args(["explore", "--scenario", "lock", "--shard", "3/3"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "--shard 3/3 is a usage error");
    let _ = std::fs::remove_dir_all(&dir);
}
