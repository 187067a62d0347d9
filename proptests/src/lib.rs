//! Shared helpers of the property tests (`tests/search/properties.rs`,
//! `tests/search/violations.rs`).
//!
//! The strategies, the search and the regression-file persistence live in
//! the simulation crate (`redis_primitives_sim::search`), so that `rp-sim
//! report` can run the same searches for its mutation table. This crate
//! holds what only the tests need: the case count and base seed (both
//! overridable from the environment), one server pool per test thread, the
//! paths of the committed `*.proptest-regressions` files, and a check that a
//! printed `rp-sim replay` command really reproduces what it claims to.
//!
//! Environment:
//!
//! - `RP_PROPTEST_CASES` (or proptest's own `PROPTEST_CASES`): cases per
//!   property, for a longer exploration than CI's;
//! - `RP_PROPTEST_SEED`: the base seed of proptest's RNG (default 0), to
//!   explore other cases than CI's;
//! - `RP_SEARCH_ONLY`: comma-separated names (targets or properties) to
//!   check, for a focused run; the others are skipped and listed.

use std::cell::RefCell;
use std::path::PathBuf;

use redis_primitives_sim::Servers;

/// Cases per property in CI, unless the environment says otherwise.
pub const DEFAULT_CASES: u32 = 128;

/// Cases per property: `RP_PROPTEST_CASES`, else `PROPTEST_CASES`, else `default`.
pub fn cases(default: u32) -> u32 {
    ["RP_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|var| std::env::var(var).ok().and_then(|v| v.trim().parse().ok()))
        .unwrap_or(default)
}

/// The base seed of proptest's RNG: `RP_PROPTEST_SEED`, else 0.
pub fn base_seed() -> u64 {
    std::env::var("RP_PROPTEST_SEED").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// `proptests/regressions/<name>.proptest-regressions` (absolute, so it
/// does not depend on the directory the test binary runs in).
pub fn regression_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("regressions").join(format!("{name}.proptest-regressions"))
}

thread_local! {
    // One pool per test thread: starting redis-server processes is the slow
    // part, resetting them between cases is cheap. The testkit ties each
    // server's life to the thread that started it, so a pool must not cross
    // threads anyway.
    static SERVERS: RefCell<Servers> = RefCell::new(Servers::new());
}

/// Runs `f` with this thread's server pool.
pub fn with_servers<T>(f: impl FnOnce(&mut Servers) -> T) -> T {
    SERVERS.with(|s| f(&mut s.borrow_mut()))
}

/// Whether `name` is selected by `RP_SEARCH_ONLY` (everything is when it is
/// unset or empty).
pub fn selected(name: &str) -> bool {
    match std::env::var("RP_SEARCH_ONLY") {
        Ok(only) if !only.trim().is_empty() => only.split(',').any(|n| n.trim() == name),
        _ => true,
    }
}

/// Runs `check` on every item, on as many threads as the machine has cores
/// (each with its own server pool: [`with_servers`]), and returns the names
/// of the items whose check panicked (their panic messages are printed as
/// they happen). The registry decides what the items are; no test is
/// written per item.
pub fn failures_in_parallel<T: Sync>(
    items: &[T],
    name: impl Fn(&T) -> String + Sync,
    check: impl Fn(&T) + Sync,
) -> Vec<String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(item)));
                    if run.is_err() {
                        failed.lock().unwrap_or_else(|e| e.into_inner()).push(name(item));
                    }
                }
                // Stop this thread's servers now: a scope ends when its
                // threads' closures return, before their thread-locals are
                // dropped, and a test process that exits then leaves the
                // pool's clock files behind in the temporary directory.
                SERVERS.with(|s| drop(std::mem::take(&mut *s.borrow_mut())));
            });
        }
    });
    let mut failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    failed.sort();
    failed
}

/// Splits a command line the way a POSIX shell would for the commands this
/// crate prints: words separated by spaces, single quotes taken literally.
pub fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Runs a printed `rp-sim ...` command through the real command-line parser
/// and entry point (in this process, with its own servers); returns the
/// exit status (1 = a violation was found).
pub fn run_command(command: &str) -> Result<i32, String> {
    use clap::Parser as _;
    let words = shell_words(command);
    let cli = redis_primitives_sim::cli::Cli::try_parse_from(&words).map_err(|e| format!("{command}: {e}"))?;
    Ok(redis_primitives_sim::cli::run(cli))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's clock control files (`rp-clock-<pid>-<n>`): one per
    /// running server.
    fn clock_files() -> usize {
        let prefix = format!("rp-clock-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).count())
            .unwrap_or(0)
    }

    #[test]
    fn the_parallel_checks_stop_their_servers_before_returning() {
        // The only test of this binary that starts servers: nothing else
        // adds or removes clock files meanwhile.
        let failed = failures_in_parallel(
            &[1usize, 2, 3],
            |n| n.to_string(),
            |&n| {
                with_servers(|s| s.ensure(n)).expect("redis-server starts");
                assert!(clock_files() >= n);
            },
        );
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(clock_files(), 0, "a worker's pool outlived failures_in_parallel");
    }

    #[test]
    fn shell_words_keeps_single_quoted_json_whole() {
        assert_eq!(
            shell_words(r#"rp-sim replay --scenario x --plan '{"a": [1, 2]}'"#),
            vec!["rp-sim", "replay", "--scenario", "x", "--plan", r#"{"a": [1, 2]}"#]
        );
    }
}
