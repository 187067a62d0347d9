//! What a person looks at: `replay --timeline` writes a self-contained page
//! of the run (the same bytes for the same seed, every operation drawn, the
//! violation marked with its invariant) and `explore --plot` writes a chart
//! of each histogram with the family's bounds. Whether a browser draws them
//! is `sim/check-in-chromium.sh`'s job (`.ci/run` runs it).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rp-sim");

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rp-pictures-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_timeline_shows_every_operation_and_the_violation() {
    let dir = scratch("timeline");
    let page = |file: &str| {
        let path = dir.join(file);
        let out = Command::new(BIN)
            .args(["replay", "--scenario", "lock-naive", "--seed", "1", "--timeline"])
            .arg(&path)
            .output()
            .expect("rp-sim runs");
        assert_eq!(out.status.code(), Some(1), "lock-naive seed 1 violates: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("timeline: {}", path.display())));
        std::fs::read_to_string(&path).expect("the timeline was written")
    };
    let html = page("a.html");
    assert_eq!(page("b.html"), html, "the same seed draws the same page");

    // One bar per operation, as many as the page's own on-load check expects.
    let declared: usize = html
        .split("data-ops=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("the svg declares its operation count");
    assert!(declared > 50, "lock-naive seed 1 runs many operations, {declared} drawn");
    assert_eq!(html.matches("<rect class=\"op ").count(), declared);
    for lane in ["client-0", "client-1", "client-2", "redis-0"] {
        assert!(html.contains(&format!("class=\"label\">{lane}</text>")), "lane {lane}");
    }
    assert!(html.contains("<g class=\"hold\">"), "leases are drawn");
    assert!(html.contains("class=\"fault\""), "the seed's partition is shaded");
    let violation = html.split("<g class=\"violation\">").nth(1).expect("the violation is marked");
    assert!(violation.contains("mutual-exclusion"), "labelled with its invariant");
    assert!(html.contains("rp-sim replay --scenario lock-naive --seed 1"), "says how to reproduce it");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plot_draws_each_variant_against_its_bound() {
    let dir = scratch("plot");
    let out = Command::new(BIN)
        .args(["explore", "--scenario", "rate-limit-fixed-window", "--seeds", "4", "--plot"])
        .arg(&dir)
        .output()
        .expect("rp-sim runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the fixed window exceeds its limit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(dir.join("rate-limit-window-fill.svg")).expect("the window-fill chart");
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("the limit (100 %)"), "the limit line is drawn");
    assert!(svg.contains("rate-limit-fixed-window ("), "the variant is in the legend");
    assert!(dir.join("rate-limit-admissions-per-window.svg").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
