//! `rp-sim mutants`: the harness measured by mutating the library's scripts.
//!
//! A harness is judged by the bugs it finds that nobody planted for it. The
//! Lua scripts are where a one-character slip hides best (`<` for `<=`, a
//! `KEYS[2]` for `KEYS[1]`, an `and` for an `or`), and they are data: this
//! module derives **mutants** from each script's text with a handful of
//! classic operators, runs the correct scenarios that use the script against
//! each mutant (the library reads the mutated text through its
//! `mutation-hooks` seam, in a child `rp-sim explore` process, so every
//! mutant starts from a clean process), and counts a mutant **killed** when
//! any checker reports a violation on the pinned seeds.
//!
//! A survivor is either a gap in the harness (a workload that never reaches
//! the line, a checker that does not judge its effect) or an **equivalent**
//! mutant (no observable behaviour changes); the equivalent ones are listed
//! in [`EQUIVALENT`], each with its one-line reason, matched by script and
//! the mutated line's text.
//!
//! Mutants are generated, not listed: a change to a script yields its new
//! mutants without anyone keeping a table in step.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

/// A library script, with the correct scenarios that exercise it, in
/// registry order.
#[derive(Debug, Clone)]
pub(crate) struct ScriptUnderTest {
    /// Its name (what `RP_MUTANT_SCRIPT` names).
    pub name: &'static str,
    /// Its text as compiled into the library.
    pub text: &'static str,
    /// Correct scenarios whose histories depend on it (the registry rows
    /// that list it in `Scenario::scripts`).
    pub scenarios: Vec<&'static str>,
}

/// Every script of the library (`redis_primitives::mutation_scripts`), with
/// the scenarios the registry says depend on it.
pub(crate) fn scripts() -> Vec<ScriptUnderTest> {
    redis_primitives::mutation_scripts()
        .map(|(name, text)| ScriptUnderTest {
            name,
            text,
            scenarios: crate::scenarios::all().filter(|s| s.scripts.contains(&name)).map(|s| s.name).collect(),
        })
        .collect()
}

/// Mutants known to change nothing observable: `(script, mutated line
/// (trimmed), reason)`. A survivor listed here is reported as equivalent,
/// not as a gap.
pub(crate) const EQUIVALENT: &[(&str, &str, &str)] = &[
    // lock_acquire.lua
    ("lock_acquire", "if string.sub(token.err, 0, 4) == 'ERR ' then", "Lua's string.sub treats a start of 0 as 1: the same prefix"),
    ("lock_acquire", "if token >= 9007199254740993 then", "the literal 2^53 + 1 is a Lua number and rounds to 2^53: the same test"),
    (
        "lock_acquire",
        "if token >= 9007199254740991 then",
        "at 2^53 − 1 the Lua number is still exact, so reading the counter back returns the same token (as a string, which the client parses alike)",
    ),
    // lock_acquire_floored.lua: the counter script's lines up to the floor,
    // with the same equivalents.
    (
        "lock_acquire_floored",
        "if string.sub(token.err, 0, 4) == 'ERR ' then",
        "Lua's string.sub treats a start of 0 as 1: the same prefix",
    ),
    (
        "lock_acquire_floored",
        "if issued > 9007199254740992 then",
        "at exactly 2^53 the clock's Lua number is still exact, so returning it as a number gives the token the text would",
    ),
    (
        "lock_acquire_floored",
        "if issued >= 9007199254740993 then",
        "the literal 2^53 + 1 is a Lua number and rounds to 2^53: the same test",
    ),
    (
        "lock_acquire_floored",
        "if issued >= 9007199254740991 then",
        "at 2^53 − 1 the clock's number is exact and the text stored holds the same value (the client parses either shape)",
    ),
    (
        "lock_acquire_floored",
        "if token >= 9007199254740993 then",
        "the literal 2^53 + 1 is a Lua number and rounds to 2^53: the same test",
    ),
    (
        "lock_acquire_floored",
        "if token >= 9007199254740991 then",
        "at 2^53 − 1 the Lua number is still exact, so reading the counter back returns the same token (as a string, which the client parses alike)",
    ),
    // fenced_write.lua
    (
        "fenced_write",
        "if #highest > #t or (#highest == #t and highest >= t) then",
        "equal tokens never get here (the enclosing test is highest ~= t), so > and >= agree",
    ),
    ("fenced_write", "return {1, ARGV[1]}", "the client ignores the token echoed with an acceptance"),
    // job_queue/scripts.rs (the queue's five scripts on one page: one state machine).
    ("job_enqueue", "if string.sub(seq.err, 0, 4) == 'ERR ' then", "Lua's string.sub treats a start of 0 as 1: the same prefix"),
    ("job_claim", "if string.sub(bumped.err, 0, 4) == 'ERR ' then", "Lua's string.sub treats a start of 0 as 1: the same prefix"),
    (
        "job_claim",
        "if tonumber(head[2]) >= 9007199254740993 then",
        "the literal 2^53 + 1 is a Lua number and rounds to 2^53: the same test",
    ),
    (
        "job_claim",
        "if tonumber(head[2]) >= 9007199254740991 then",
        "below 2^53 a score holds one sequence number, and INCR never repeats one: the head's score is its own tie group, and the tie-break picks the head",
    ),
    (
        "job_claim",
        "if not least or #s < #least or (#s == #least and s <= least) then",
        "sequence numbers come from INCR and never repeat, so two tied ids never hold the same seq",
    ),
    (
        "job_claim",
        "local head = redis.call('ZRANGE', KEYS[1], 0, 1, 'WITHSCORES')",
        "only head[1] and head[2], the oldest and its score, are read: a second member changes nothing",
    ),
    (
        "job_extend",
        "-- removed: redis.call('HSET', KEYS[1], 'lease_until', lease_until)",
        "the hash's lease_until is informational: no script and no call reads it (the active set's score is the lease)",
    ),
    // Member names only need to be unique; the loop steps past a taken one
    // in whichever direction and stride.
    ("sliding_log", "local k = count - stale", "member names need only be unique: the loop steps past taken ones"),
    ("sliding_log", "k = k - 1", "member names need only be unique: the loop steps past taken ones"),
    ("sliding_log", "k = k + 2", "member names need only be unique: the loop steps past taken ones"),
    // sliding_counter.lua: idiv's corrections never fire for the operands
    // Limit allows (a, b < 2^52): floor(a / b) of such integers is exact in
    // a double, since b(q + 1) < 2^53 keeps the quotient's rounding below 1.
    ("sliding_counter", "q = q + 1", "unreachable: the floating quotient of operands below 2^52 never rounds past an integer"),
    ("sliding_counter", "q = q - 2", "unreachable: the floating quotient of operands below 2^52 never rounds past an integer"),
    ("sliding_counter", "q = q - 0", "unreachable: the floating quotient of operands below 2^52 never rounds past an integer"),
    ("sliding_counter", "elseif (q + 2) * b <= a then", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "elseif (q + 1) * b < a then", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "q = q - 1", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "q = q + 2", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "q = q + 0", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "-- removed: q = q - 1", "unreachable: the floating quotient of operands below 2^52 never rounds past an integer"),
    ("sliding_counter", "-- removed: q = q + 1", "unreachable: the floating quotient of operands below 2^52 never rounds down past an integer"),
    ("sliding_counter", "elseif idx >= stored + 1 then", "idx == stored + 1 is taken by the branch before"),
    ("sliding_counter", "elseif idx > stored + 0 then", "idx == stored + 1 is taken by the branch before, so idx > stored means idx >= stored + 2"),
    ("sliding_counter", "elseif idx <= stored then", "at idx == stored the branch sets idx = stored: no change"),
    ("sliding_counter", "if elapsed <= 0 then", "at elapsed == 0 the branch sets elapsed = 0: no change"),
    ("sliding_counter", "if elapsed < 1 then", "elapsed is an integer: < 1 adds only elapsed == 0, which the branch leaves at 0"),
    (
        "sliding_counter",
        "if cur <= limit and weighted <= (limit - cur - 1) * window then",
        "at cur == limit the second test needs weighted <= -window, never true (weighted >= 0)",
    ),
    (
        "sliding_counter",
        "redis.call('PEXPIRE', key, 3 * window - elapsed)",
        "a longer life keeps only a state that the bucket test already treats as stale (idx > stored + 1 resets it)",
    ),
    (
        "sliding_counter",
        "redis.call('PEXPIRE', key, 2 * window + elapsed)",
        "a longer life keeps only a state that the bucket test already treats as stale (idx > stored + 1 resets it)",
    ),
];

/// One mutant: a single edit to one line of one script.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Mutant {
    /// Script name.
    pub script: &'static str,
    /// 1-based line number.
    pub line: usize,
    /// The operator applied (`<= -> <`, `1 -> 2`, …).
    pub operator: String,
    /// The line before (trimmed).
    pub original: String,
    /// The line after (trimmed).
    pub mutated: String,
    /// The whole mutated script.
    #[serde(skip)]
    pub text: String,
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.lua:{} [{}] `{}`", self.script, self.line, self.operator, self.mutated)
    }
}

/// Token replacements: `(from, to)`, applied one occurrence at a time.
/// Longer operators come first so `<=` is not also read as `<`.
const SWAPS: &[(&str, &str)] = &[
    ("<=", "<"),
    (">=", ">"),
    ("==", "~="),
    ("~=", "=="),
    ("<", "<="),
    (">", ">="),
    (" + ", " - "),
    (" - ", " + "),
    (" and ", " or "),
    (" or ", " and "),
    ("not ", ""),
];

/// Every mutant of `script`: each swap at each place it applies, and each
/// integer literal one up and one down (which covers `KEYS[1]` → `KEYS[2]`
/// and off-by-one bounds). Comments and string literals are left alone.
pub(crate) fn generate(script: &ScriptUnderTest) -> Vec<Mutant> {
    let lines: Vec<&str> = script.text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code_end = code_end(line);
        let code = &line[..code_end];
        if code.trim().is_empty() {
            continue;
        }
        let mut edits: Vec<(usize, usize, String, String)> = Vec::new(); // (at, len, replacement, operator)
        for (from, to) in SWAPS {
            let mut start = 0;
            while let Some(pos) = code[start..].find(from) {
                let at = start + pos;
                start = at + from.len();
                if in_string(code, at) || overlaps_longer(code, at, from) {
                    continue;
                }
                edits.push((at, from.len(), to.to_string(), format!("{} -> {}", from.trim(), display(to))));
            }
        }
        for (at, len, n) in integers(code) {
            edits.push((at, len, (n + 1).to_string(), format!("{n} -> {}", n + 1)));
            if n > 0 {
                edits.push((at, len, (n - 1).to_string(), format!("{n} -> {}", n - 1)));
            }
        }
        if is_plain_statement(code) {
            // Statement deletion: the line's effect (a write, an expiry, an
            // update of a local) never happens.
            let indent = code.len() - code.trim_start().len();
            let statement = code.trim();
            edits.push((
                indent,
                code.trim_end().len() - indent,
                format!("-- removed: {statement}"),
                "delete statement".to_string(),
            ));
        }
        edits.sort_by_key(|(at, ..)| *at);
        for (at, len, replacement, operator) in edits {
            let mutated_line = format!("{}{}{}", &line[..at], replacement, &line[at + len..]);
            let mut text = String::with_capacity(script.text.len() + 4);
            for (j, l) in lines.iter().enumerate() {
                text.push_str(if j == i { &mutated_line } else { l });
                text.push('\n');
            }
            out.push(Mutant {
                script: script.name,
                line: i + 1,
                operator,
                original: line.trim().to_string(),
                mutated: mutated_line.trim().to_string(),
                text,
            });
        }
    }
    out
}

/// Whether a line of code is one whole statement that can be deleted and
/// still leave a valid script: a bare `redis.call(...)` or an assignment to
/// existing variables (not a declaration, a branch, a loop or a return).
fn is_plain_statement(code: &str) -> bool {
    let c = code.trim();
    if c.starts_with("redis.call(") || c.starts_with("redis.pcall(") {
        return c.ends_with(')');
    }
    let Some((lhs, rhs)) = c.split_once(" = ") else { return false };
    !rhs.is_empty()
        && !lhs.is_empty()
        && lhs.split(',').all(|v| {
            let v = v.trim();
            !v.is_empty()
                && v.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                && !v.starts_with(|ch: char| ch.is_ascii_digit())
        })
        && !["local", "if", "elseif", "while", "for", "return", "function"]
            .iter()
            .any(|k| lhs.split_whitespace().next() == Some(*k))
}

fn display(to: &str) -> &str {
    if to.is_empty() {
        "(removed)"
    } else {
        to.trim()
    }
}

/// Where the code of a line ends (before a `--` comment outside a string).
fn code_end(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'-' && bytes[i + 1] == b'-' && !in_string(line, i) {
            return i;
        }
        i += 1;
    }
    line.len()
}

/// Whether byte `at` of `code` is inside a '…' or "…" literal.
fn in_string(code: &str, at: usize) -> bool {
    let mut quote = None;
    for (i, c) in code.char_indices() {
        if i >= at {
            break;
        }
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    quote.is_some()
}

/// Whether the one-character operator at `at` is part of a longer one
/// (`<` of `<=`, `=` runs), which has swaps of its own.
fn overlaps_longer(code: &str, at: usize, from: &str) -> bool {
    if from.len() != 1 {
        return false;
    }
    let next = code.as_bytes().get(at + 1).copied();
    let prev = at.checked_sub(1).map(|p| code.as_bytes()[p]);
    next == Some(b'=') || prev == Some(b'<') || prev == Some(b'>') || prev == Some(b'-')
}

/// Integer literals in `code` outside strings: `(at, len, value)`. A digit
/// run glued to a name (`x1`) or to a `.` is not a literal.
fn integers(code: &str) -> Vec<(usize, usize, u64)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let glued_before = start > 0
                && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b'.');
            let glued_after =
                i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' || bytes[i] == b'.');
            if !glued_before && !glued_after && !in_string(code, start) {
                if let Ok(n) = code[start..i].parse() {
                    out.push((start, i - start, n));
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// What happened to one mutant.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub(crate) enum Verdict {
    /// A checker caught it.
    Killed {
        /// The scenario that caught it.
        scenario: String,
        /// The first seed that violated.
        seed: u64,
        /// The invariant.
        invariant: String,
    },
    /// Listed in [`EQUIVALENT`].
    Equivalent {
        /// Why it changes nothing observable.
        reason: String,
    },
    /// No checker caught it on the pinned seeds: a gap in the harness.
    Survived,
    /// The child run failed to set up (exit 2): the mutant was not judged.
    Error {
        /// What the child printed.
        message: String,
    },
}

/// One row of the mutation report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MutantResult {
    /// The mutant.
    pub mutant: Mutant,
    /// Its fate.
    pub verdict: Verdict,
}

/// Runs one mutant: each of the script's scenarios over `seeds` seeds from
/// 0, stopping at the first violation, in a child `rp-sim` process
/// (`rp_sim`) with the mutated text at `scratch`.
pub(crate) fn judge(
    rp_sim: &Path,
    scratch: &Path,
    mutant: &Mutant,
    scenarios: &[&str],
    seeds: u64,
) -> std::io::Result<Verdict> {
    if let Some((_, _, reason)) = EQUIVALENT.iter().find(|(s, line, _)| *s == mutant.script && *line == mutant.mutated)
    {
        return Ok(Verdict::Equivalent { reason: reason.to_string() });
    }
    std::fs::write(scratch, &mutant.text)?;
    for scenario in scenarios {
        let out = Command::new(rp_sim)
            .args(["explore", "--scenario", scenario, "--seeds", &seeds.to_string(), "--fail-fast", "--json"])
            .env("RP_MUTANT_SCRIPT", mutant.script)
            .env("RP_MUTANT_FILE", scratch)
            .output()?;
        match out.status.code() {
            Some(0) => continue,
            Some(1) => {
                let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                let first = &json["violations"][0];
                return Ok(Verdict::Killed {
                    scenario: scenario.to_string(),
                    seed: first["seed"].as_u64().unwrap_or(0),
                    invariant: first["invariant"].as_str().unwrap_or("?").to_string(),
                });
            }
            _ => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                // A mutant that makes the process panic is caught too: the
                // panic is the harness noticing (an unparseable reply).
                if stderr.contains("without completing") {
                    // The run never finished (a script that loops, or
                    // callers that wait forever): a liveness failure the
                    // world's step limit turned into a set-up error.
                    return Ok(Verdict::Killed {
                        scenario: scenario.to_string(),
                        seed: 0,
                        invariant: "hang (the run never completed)".to_string(),
                    });
                }
                if stderr.contains("panicked") {
                    return Ok(Verdict::Killed {
                        scenario: scenario.to_string(),
                        seed: 0,
                        invariant: "panic".to_string(),
                    });
                }
                return Ok(Verdict::Error { message: stderr.lines().last().unwrap_or("").to_string() });
            }
        }
    }
    Ok(Verdict::Survived)
}

/// The scratch file a run's mutated scripts are written to.
pub(crate) fn scratch_file() -> PathBuf {
    std::env::temp_dir().join(format!("rp-sim-mutant-{}.lua", std::process::id()))
}

/// The Markdown report of a mutation run.
pub(crate) fn markdown(results: &[MutantResult], seeds: u64) -> String {
    use std::fmt::Write as _;
    let count = |f: fn(&Verdict) -> bool| results.iter().filter(|r| f(&r.verdict)).count();
    let killed = count(|v| matches!(v, Verdict::Killed { .. }));
    let equivalent = count(|v| matches!(v, Verdict::Equivalent { .. }));
    let survived = count(|v| matches!(v, Verdict::Survived));
    let errors = count(|v| matches!(v, Verdict::Error { .. }));
    let judged = results.len() - equivalent - errors;
    let mut md = String::new();
    let _ = writeln!(md, "# Mutation: the harness measured by the bugs it kills\n");
    let _ = writeln!(
        md,
        "Generated by `rp-sim mutants`. A harness is judged by the bugs it finds that nobody planted for it, so the correct primitives are mutated (one small edit each: a flipped comparison, an off-by-one, a deleted statement, a wrong key) and the pinned seeds of their correct scenarios are run against each mutant; a checker reporting a violation kills it. A survivor is a gap in the harness unless it is listed as equivalent with its reason. Regenerate (the Rust part takes 1–2 h on 2 cores):\n"
    );
    let _ = writeln!(md, "```sh");
    let _ = writeln!(md, "cargo install cargo-mutants --locked   # once");
    let _ = writeln!(md, "sim/cargo-mutants.sh                   # Rust mutants, per family, into target/mutants");
    let _ = writeln!(md, "cargo run --release -p redis-primitives-sim --features mutants -- mutants --seeds {seeds} --cargo-mutants target/mutants --out reports/mutants.md");
    let _ = writeln!(md, "```\n");
    let _ = writeln!(md, "`sim/tests/slow/mutants.rs` (run by `.ci/run`) fails when a script mutant survives.\n");
    let _ = writeln!(md, "## Script mutants (`rp-sim mutants --seeds {seeds}`)\n");
    let _ = writeln!(
        md,
        "{} mutants of the library's {} Lua scripts; {killed} killed, {survived} survived, {equivalent} equivalent, {errors} not judged (set-up error). Kill rate over non-equivalent mutants: **{:.1} %**.\n",
        results.len(),
        scripts().len(),
        if judged == 0 { 100.0 } else { 100.0 * killed as f64 / judged as f64 }
    );
    let _ = writeln!(md, "| script | line | operator | mutated line | verdict |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for r in results {
        let verdict = match &r.verdict {
            Verdict::Killed { scenario, seed, invariant } => {
                format!("killed by `{scenario}` seed {seed} ({invariant})")
            }
            Verdict::Equivalent { reason } => format!("equivalent: {reason}"),
            Verdict::Survived => "**survived**".to_string(),
            Verdict::Error { message } => format!("error: {message}"),
        };
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | `{}` | {} |",
            r.mutant.script,
            r.mutant.line,
            r.mutant.operator,
            r.mutant.mutated.replace('|', "\\|"),
            verdict
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOY_TEXT: &str = "-- a comment with < and 1\nif x <= 1 and y == 'a<b' then\n  return KEYS[2]\nend\n";

    fn toy(text: &'static str) -> ScriptUnderTest {
        ScriptUnderTest { name: "toy", text, scenarios: Vec::new() }
    }

    #[test]
    fn mutants_skip_comments_and_strings_and_change_one_thing_each() {
        let ms = generate(&toy(TOY_TEXT));
        let lines: Vec<String> = ms.iter().map(|m| m.mutated.clone()).collect();
        assert!(lines.contains(&"if x < 1 and y == 'a<b' then".to_string()), "{lines:?}");
        assert!(lines.contains(&"if x <= 1 or y == 'a<b' then".to_string()), "{lines:?}");
        assert!(lines.contains(&"if x <= 1 and y ~= 'a<b' then".to_string()), "{lines:?}");
        assert!(lines.contains(&"if x <= 2 and y == 'a<b' then".to_string()), "{lines:?}");
        assert!(lines.contains(&"return KEYS[1]".to_string()), "{lines:?}");
        assert!(lines.contains(&"return KEYS[3]".to_string()), "{lines:?}");
        assert!(ms.iter().all(|m| m.operator != "delete statement"), "nothing here is a plain statement");
        // Nothing from the comment line or inside the string literal.
        assert!(ms.iter().all(|m| m.line != 1), "{lines:?}");
        assert!(lines.iter().all(|l| !l.contains("'a<=b'")), "{lines:?}");
        // `<=` is not also mutated as `<` followed by `=`.
        assert!(lines.iter().all(|l| !l.contains("<==")), "{lines:?}");
        for m in &ms {
            assert_ne!(m.text, TOY_TEXT);
            assert_eq!(m.text.lines().count(), TOY_TEXT.lines().count());
        }
    }

    #[test]
    fn statement_deletion_takes_whole_statements_only() {
        assert!(is_plain_statement("  redis.call('PEXPIRE', key, window)"));
        assert!(is_plain_statement("    prev, cur = cur, 0"));
        assert!(is_plain_statement("  k = k + 1"));
        assert!(!is_plain_statement("local k = 1"));
        assert!(!is_plain_statement("if x == 1 then"));
        assert!(!is_plain_statement("return redis.call('DEL', KEYS[1])"));
        assert!(!is_plain_statement("while redis.call('ZADD', key) == 0 do"));
        let deleted: Vec<_> = generate(&toy("local x = 1\n  x = x + 1\nreturn x\n"))
            .into_iter()
            .filter(|m| m.operator == "delete statement")
            .collect();
        assert_eq!(deleted.len(), 1);
        assert_eq!(deleted[0].text, "local x = 1\n  -- removed: x = x + 1\nreturn x\n");
    }

    #[test]
    fn every_library_script_has_mutants_and_a_scenario() {
        for s in scripts() {
            assert!(!generate(&s).is_empty(), "{} has no mutants", s.name);
            assert!(!s.scenarios.is_empty(), "{} is exercised by no scenario", s.name);
        }
        // Every script a row names exists.
        let names: Vec<&str> = scripts().iter().map(|s| s.name).collect();
        for row in crate::scenarios::all() {
            for name in row.scripts {
                assert!(names.contains(name), "{}: no library script {name}", row.name);
            }
        }
    }
}
