//! The Rust half of the mutation measure: what `cargo mutants` found, read
//! back from its output and judged.
//!
//! `sim/cargo-mutants.sh` runs cargo-mutants over the library's Rust code
//! with the simulation's pinned clean seeds as the test command, one group
//! of files per primitive family (so each mutant is judged by its family's
//! scenarios). This module reads every group's `mutants.out/outcomes.json`
//! and writes the section of `reports/mutants.md` that says, per file, how
//! many viable mutants the pinned seeds killed, and why each survivor is
//! harmless ([`EQUIVALENT`]) or that it is a gap.
//!
//! A mutant that does not compile is *unviable* and not counted; a test
//! that timed out counts as killed (the run noticed, as cargo-mutants
//! reports it); a *build* that timed out was not judged and is listed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Survivors that change nothing the library promises, matched by file and
/// by cargo-mutants' description (its name without `line:column`), with
/// the reason.
pub(crate) const EQUIVALENT: &[(&str, &str, &str)] = &[
    (
        "src/lock.rs",
        "replace match guard t.get() > 0 with true in token_from_reply",
        "the acquire script never returns a token below 1 (it refuses such a counter itself): the guard only defends against a reply this library's script cannot give",
    ),
    (
        "src/lock.rs",
        "replace > with >= in token_from_reply",
        "the acquire script never returns a token below 1 (it refuses such a counter itself): the guard only defends against a reply this library's script cannot give",
    ),
    (
        "src/rate_limit/mod.rs",
        "replace match guard retry > 0 with true in decide",
        "both limiter scripts deny only with a positive wait: the guard only defends against a reply they cannot give",
    ),
    (
        "src/rate_limit/mod.rs",
        "replace > with >= in decide",
        "both limiter scripts deny only with a positive wait: the guard only defends against a reply they cannot give",
    ),
    (
        "src/script_source.rs",
        "replace == with != in text",
        "the test hook that swaps a script's text acts only when RP_MUTANT_SCRIPT is set, and the gate never sets it: unset, both comparisons are false",
    ),
    (
        "src/script_source.rs",
        "replace + with * in Script::call",
        "a capacity hint for the command's buffer: a wrong size costs a reallocation, the bytes sent are the same",
    ),
    (
        "src/script_source.rs",
        "replace + with - in Script::call",
        "a capacity hint for the command's buffer: a wrong size costs a reallocation, the bytes sent are the same",
    ),
    (
        "src/owner.rs",
        "replace <= with > in OwnerSource::next_owner",
        "the buffer on the stack or on the heap: the library asks 16 (a lock) or 20 (Redlock) bytes, and both paths draw the same bytes for those; the at-least-16 rule for smaller requests is pinned by src/owner.rs's unit tests",
    ),
    (
        "src/election/run.rs",
        "replace match guard fenced && Instant::now() >= deadline with false in Election<C>::renew",
        "the renewal already races its deadline in a biased select, which wins whenever both are ready: a confirmation can pass the deadline only inside the sub-millisecond rounding of tokio's timer, which the simulation's 1 ms ticks (and the self-fencing check's resolution) never reach; kept as defence in depth",
    ),
    (
        "src/redlock/mod.rs",
        "@160:20 delete ! in Redlock<C>::connect",
        "swaps `native_commands` on and off: on the gate's Redis 7.0.15, which has neither DELIFEQ nor DELEX, both choices send the scripts. On Valkey 9 the Redlock read-back's `Redlock::compare_commands` check (families/redlock/readback.rs) kills it (the simulation's Valkey leg in .ci/run), as does tests/library/redlock.rs::redlock_uses_each_masters_native_commands",
    ),
    (
        "src/job_queue/mod.rs",
        "replace > with >= in JobQueue<C>::claim",
        "the claim script accepts only an attempt of 0 or a canonical positive decimal and returns it after HINCRBY, so never below 1: the guard only defends against a reply this library's script cannot give",
    ),
    (
        "src/job_queue/mod.rs",
        "replace match guard named.starts_with(\"jobq:{\") with true in script_error",
        "every CORRUPT reply of the queue's scripts names a `jobq:{…}` key first, so the guard is always true: it defends against a reply they cannot give",
    ),
    (
        "src/job_queue/mod.rs",
        "delete match arm Value::Int(n) in lease_until_from",
        "the claim and extend scripts both return the lease's end as decimal text (`string.format('%.0f', …)`), never as an integer reply",
    ),
    (
        "src/redlock/identity.rs",
        "replace match guard each.iter().all(|c| c == first) with true in Identity::of",
        "the nodes of one reply can disagree only behind a cluster connection (several INFO texts); every master the simulation bridges is one server with one text",
    ),
    (
        "src/redlock/identity.rs",
        "replace match guard each.iter().all(|c| c == first) with false in Identity::of",
        "turns a single server's native commands into the scripts: on the gate's Redis 7.0.15, which has none, that is what it names anyway. On Valkey 9 the Redlock read-back's `Redlock::compare_commands` check (families/redlock/readback.rs) kills it (the simulation's Valkey leg in .ci/run)",
    ),
    (
        "src/redlock/identity.rs",
        "replace == with != in Identity::of",
        "turns a single server's native commands into the scripts: on the gate's Redis 7.0.15, which has none, that is what it names anyway. On Valkey 9 the Redlock read-back's `Redlock::compare_commands` check (families/redlock/readback.rs) kills it (the simulation's Valkey leg in .ci/run)",
    ),
    (
        "src/redlock/identity.rs",
        "delete match arm Value::SimpleString(text) | Value::VerbatimString{text, ..} in collect_infos",
        "INFO's reply is a bulk string under RESP2, which the simulation's connections speak; a verbatim string is RESP3's form of it",
    ),
    (
        "src/redlock/identity.rs",
        "delete match arm Value::Array(items) | Value::Set(items) in collect_infos",
        "only a connection that fans INFO out to several nodes (a cluster connection) answers with a collection; the simulation bridges single servers. tests/library/redlock.rs::a_cluster_shaped_info_reply_is_read_and_a_shared_server_is_refused covers the cluster shape",
    ),
    (
        "src/redlock/identity.rs",
        "delete match arm Value::Map(pairs) in collect_infos",
        "only a connection that fans INFO out to several nodes (a cluster connection) answers with a map; the simulation bridges single servers. tests/library/redlock.rs::a_cluster_shaped_info_reply_is_read_and_a_shared_server_is_refused covers the cluster shape",
    ),
    (
        "src/redlock/mod.rs",
        "replace Redlock<C>::owners -> &OwnerSource with Box::leak(Box::new(Default::default()))",
        "only NaiveRedlock (broken on purpose) draws its owners through this accessor; the production Redlock draws from its own field, whose seeded source the Redlock read-back (families/redlock/readback.rs) reads through a lease's owner",
    ),
    (
        "src/redlock/mod.rs",
        "replace Redlock<C>::is_empty -> bool with false",
        "connect refuses an empty list of masters, so no Redlock is ever empty",
    ),
];

/// One mutant as cargo-mutants reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// The mutated file (`src/lock.rs`).
    pub file: String,
    /// cargo-mutants' name: `file:line:col: description`.
    pub name: String,
    /// `CaughtMutant`, `MissedMutant`, `Timeout`, `Unviable`, ...
    pub summary: String,
}

impl Outcome {
    /// The description without the location (what [`EQUIVALENT`] matches).
    pub(crate) fn description(&self) -> &str {
        self.name.splitn(4, ':').nth(3).map_or(self.name.as_str(), str::trim)
    }

    /// `line:col` of the mutation.
    fn location(&self) -> Option<&str> {
        let after_file = self.name.strip_prefix(self.file.as_str())?.strip_prefix(':')?;
        after_file.split_once(": ").map(|(at, _)| at)
    }

    fn killed(&self) -> bool {
        matches!(self.summary.as_str(), "CaughtMutant" | "Timeout")
    }

    fn viable(&self) -> bool {
        self.killed() || self.summary == "MissedMutant"
    }

    /// The reason it is harmless, if listed.
    pub(crate) fn equivalence(&self) -> Option<&'static str> {
        let matches = |d: &str| {
            if let Some(tail) = d.strip_prefix('*') {
                // `*…`: every mutant whose description ends so (one
                // function's whole family of operator swaps).
                return self.description().ends_with(tail);
            }
            // `@line:col …`: one mutant where cargo-mutants gives two the
            // same description. When the code moves the entry stops
            // matching and the mutant shows as a survivor: never hidden.
            match d.strip_prefix('@').and_then(|d| d.split_once(' ')) {
                Some((at, d)) => self.location() == Some(at) && d == self.description(),
                None => d == self.description(),
            }
        };
        EQUIVALENT.iter().find(|(f, d, _)| *f == self.file && matches(d)).map(|(_, _, r)| *r)
    }
}

/// Every mutant outcome under `dir` (`dir/<group>/mutants.out/outcomes.json`,
/// groups in name order). A group named `<group>-recheck` (survivors re-run
/// after the harness changed: `sim/cargo-mutants.sh --recheck <group>`)
/// replaces the earlier outcome of each mutant it re-ran, except where its
/// build timed out ([`merge`]).
pub(crate) fn read(dir: &Path) -> std::io::Result<Vec<Outcome>> {
    let mut groups: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).map(|e| e.path()).collect();
    groups.sort();
    let mut out = Vec::new();
    for g in groups {
        let path = g.join("mutants.out").join("outcomes.json");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?;
        for o in json["outcomes"].as_array().into_iter().flatten() {
            let Some(m) = o["scenario"].get("Mutant") else { continue };
            let mut summary = o["summary"].as_str().unwrap_or("?").to_string();
            // A timeout while *building* says nothing about the tests (a
            // loaded machine): not judged, unlike a test that hung.
            let last_phase = o["phase_results"].as_array().and_then(|p| p.last()).and_then(|p| p["phase"].as_str());
            if summary == "Timeout" && last_phase == Some("Build") {
                summary = "BuildTimeout".to_string();
            }
            let outcome = Outcome {
                file: m["file"].as_str().unwrap_or("?").to_string(),
                name: m["name"].as_str().unwrap_or("?").to_string(),
                summary,
            };
            merge(&mut out, outcome);
        }
    }
    Ok(out)
}

/// Adds `later` (from a group read later: a recheck) to `out`, replacing
/// the earlier outcome of the same mutant, unless its build timed out: a
/// build that did not finish (a loaded machine) says nothing about the
/// tests, so the earlier run's judgment stands.
fn merge(out: &mut Vec<Outcome>, later: Outcome) {
    match out.iter_mut().find(|o| o.name == later.name) {
        Some(_) if later.summary == "BuildTimeout" => {}
        Some(earlier) => *earlier = later,
        None => out.push(later),
    }
}

/// The Markdown section for `outcomes`: per file, then the survivors.
pub(crate) fn markdown(outcomes: &[Outcome]) -> String {
    let mut per_file: BTreeMap<&str, (usize, usize, usize, usize)> = BTreeMap::new();
    for o in outcomes {
        let e = per_file.entry(o.file.as_str()).or_default();
        if o.viable() {
            e.0 += 1;
        }
        if o.killed() {
            e.1 += 1;
        }
        if o.viable() && !o.killed() && o.equivalence().is_some() {
            e.2 += 1;
        }
        if !o.viable() {
            e.3 += 1;
        }
    }
    let (viable, killed, equivalent): (usize, usize, usize) =
        per_file.values().fold((0, 0, 0), |(v, k, q), f| (v + f.0, k + f.1, q + f.2));
    let pct = |k: usize, n: usize| if n == 0 { 100.0 } else { 100.0 * k as f64 / n as f64 };
    let mut md = String::new();
    let _ = writeln!(md, "## Rust mutants (`cargo mutants`, the pinned seeds as the test command)\n");
    let _ = writeln!(
        md,
        "{} mutants; {viable} viable (they compile), {killed} killed: **{:.1} %** of the viable ones, **{:.1} %** of the {} that are not equivalent.\n",
        outcomes.len(),
        pct(killed, viable),
        pct(killed, viable - equivalent),
        viable - equivalent,
    );
    let _ = writeln!(md, "| file | viable | killed | equivalent | survived | kill rate | unviable |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for (file, (v, k, q, u)) in &per_file {
        let _ = writeln!(md, "| `{file}` | {v} | {k} | {q} | {} | {:.1} % | {u} |", v - k - q, pct(*k, *v));
    }
    let unjudged: Vec<&Outcome> = outcomes.iter().filter(|o| o.summary == "BuildTimeout").collect();
    if !unjudged.is_empty() {
        let _ = writeln!(md, "\nNot judged (the build timed out; rerun them):\n");
        for o in unjudged {
            let _ = writeln!(md, "- `{}`", o.name);
        }
    }
    let survivors: Vec<&Outcome> = outcomes.iter().filter(|o| o.viable() && !o.killed()).collect();
    if !survivors.is_empty() {
        let _ = writeln!(md, "\nSurvivors:\n");
        for o in survivors {
            match o.equivalence() {
                Some(reason) => {
                    let _ = writeln!(md, "- `{}` — equivalent: {reason}", o.name);
                }
                None => {
                    let _ = writeln!(md, "- `{}` — **survived**", o.name);
                }
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(name: &str, summary: &str) -> Outcome {
        Outcome {
            file: name.split(':').next().unwrap_or_default().to_string(),
            name: name.into(),
            summary: summary.into(),
        }
    }

    #[test]
    fn rates_count_viable_mutants_and_name_every_survivor() {
        let all = [
            o("src/lock.rs:10:5: replace a with b", "CaughtMutant"),
            o("src/lock.rs:11:5: replace c with d", "Timeout"),
            o("src/lock.rs:12:5: replace e with f", "Unviable"),
            o("src/lock.rs:332:28: replace > with >= in token_from_reply", "MissedMutant"),
            o("src/lock.rs:13:5: replace g with h", "MissedMutant"),
        ];
        assert_eq!(all[3].description(), "replace > with >= in token_from_reply");
        assert!(all[3].equivalence().is_some() && all[4].equivalence().is_none());
        // Located entries match their line:col only.
        let at = |name| o(name, "MissedMutant").equivalence().is_some();
        assert!(at("src/redlock/mod.rs:160:20: delete ! in Redlock<C>::connect"));
        assert!(!at("src/redlock/mod.rs:169:80: delete ! in Redlock<C>::connect"));
        let md = markdown(&all);
        assert!(md.contains("| `src/lock.rs` | 4 | 2 | 1 | 1 | 50.0 % | 1 |"), "{md}");
        assert!(md.contains("`src/lock.rs:13:5: replace g with h` — **survived**"), "{md}");
        assert!(md.contains("66.7 %"), "{md}");
    }

    #[test]
    fn a_recheck_replaces_an_outcome_unless_its_build_timed_out() {
        let m = "src/lock.rs:10:5: replace a with b";
        let merged = |outcomes: &[&str]| {
            let mut out = Vec::new();
            for s in outcomes {
                merge(&mut out, o(m, s));
            }
            assert_eq!(out.len(), 1);
            out[0].summary.clone()
        };
        assert_eq!(merged(&["MissedMutant", "CaughtMutant"]), "CaughtMutant");
        assert_eq!(merged(&["CaughtMutant", "MissedMutant"]), "MissedMutant");
        assert_eq!(merged(&["MissedMutant", "BuildTimeout"]), "MissedMutant");
        assert_eq!(merged(&["BuildTimeout", "CaughtMutant"]), "CaughtMutant");
        assert_eq!(merged(&["BuildTimeout"]), "BuildTimeout");
        // A test that hung is a judgment (a timeout kills), not a build
        // that did not finish.
        assert_eq!(merged(&["MissedMutant", "Timeout"]), "Timeout");
    }
}
