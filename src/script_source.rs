//! Where a Lua script's text comes from (the file compiled into the crate),
//! and how it runs: `EVALSHA`, falling back to `EVAL` on `NOSCRIPT`
//! ([`Script`], ADR 0010).
//!
//! The scripts are the heart of every primitive, and a one-character slip in
//! one (`<` for `<=`, a dropped owner check) passes a quiet day's tests. The
//! simulation harness measures itself by running against **mutated** script
//! texts (`rp-sim mutants`) and counting which mutants its checkers kill.
//! That needs one seam, here, and only behind the `mutation-hooks` cargo
//! feature, which the harness enables and a library user never should: with
//! it, `RP_MUTANT_SCRIPT=<name>` and `RP_MUTANT_FILE=<path>` replace the text
//! of the one script `<name>` (the file name without `.lua`) for the whole
//! process. Without the feature this is the identity on the compiled-in
//! text: no environment is read, nothing can be replaced.

use std::borrow::Cow;

/// The text of `builtin`: its compiled-in text, unless the
/// `mutation-hooks` feature is on and the environment names a replacement
/// for its name (`lock_acquire`, …).
pub(crate) fn text(builtin: Builtin) -> Cow<'static, str> {
    #[cfg(feature = "mutation-hooks")]
    if std::env::var("RP_MUTANT_SCRIPT").is_ok_and(|s| s == builtin.name) {
        if let Ok(path) = std::env::var("RP_MUTANT_FILE") {
            // A test hook: an unreadable file is a harness bug, and running
            // the unmutated script instead would report a false survivor.
            match std::fs::read_to_string(&path) {
                Ok(mutated) => return Cow::Owned(mutated),
                Err(e) => panic!("RP_MUTANT_FILE={path}: {e}"),
            }
        }
    }
    Cow::Borrowed(builtin.text)
}

/// A script compiled into the library: its name (what `RP_MUTANT_SCRIPT`
/// names) and its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Builtin {
    pub(crate) name: &'static str,
    pub(crate) text: &'static str,
}

pub(crate) const LOCK_ACQUIRE: Builtin =
    Builtin { name: "lock_acquire", text: include_str!("scripts/lock_acquire.lua") };
pub(crate) const LOCK_ACQUIRE_FLOORED: Builtin =
    Builtin { name: "lock_acquire_floored", text: include_str!("scripts/lock_acquire_floored.lua") };
pub(crate) const LOCK_RELEASE: Builtin =
    Builtin { name: "lock_release", text: include_str!("scripts/lock_release.lua") };
pub(crate) const LOCK_EXTEND: Builtin = Builtin { name: "lock_extend", text: include_str!("scripts/lock_extend.lua") };
pub(crate) const FENCED_WRITE: Builtin =
    Builtin { name: "fenced_write", text: include_str!("scripts/fenced_write.lua") };
pub(crate) const SLIDING_LOG: Builtin = Builtin { name: "sliding_log", text: include_str!("scripts/sliding_log.lua") };
pub(crate) const SLIDING_COUNTER: Builtin =
    Builtin { name: "sliding_counter", text: include_str!("scripts/sliding_counter.lua") };

/// Every script the library runs: what the harness mutates
/// (`crate::mutation_scripts`). A primitive adds its scripts here.
pub(crate) const ALL: &[Builtin] = &[
    LOCK_ACQUIRE,
    LOCK_ACQUIRE_FLOORED,
    LOCK_RELEASE,
    LOCK_EXTEND,
    FENCED_WRITE,
    SLIDING_LOG,
    SLIDING_COUNTER,
    crate::job_queue::ENQUEUE,
    crate::job_queue::CLAIM,
    crate::job_queue::COMPLETE,
    crate::job_queue::EXTEND,
    crate::job_queue::REAP,
];

/// `builtin`, ready to run (its text through [`text`]).
pub(crate) fn script(builtin: Builtin) -> Script {
    let text = text(builtin);
    Script { hash: redis::Script::new(&text).get_hash().to_string(), text }
}

/// A Lua script: its text and its SHA1, run by [`Call::invoke_async`].
///
/// Why not `redis::Script`: its `invoke_async` answers `NOSCRIPT` with one
/// `SCRIPT LOAD` and one more `EVALSHA`, and returns the second `NOSCRIPT`
/// as an error. A `SCRIPT FLUSH`, a restart or a failover that lands
/// between that load and that retry (the simulation's rate-limit sweep
/// found it: a burst of calls in flight on one connection while another
/// client flushed) turns a recoverable cache miss into an error for a call
/// that never ran. [`Call::invoke_async`] falls back to `EVAL` with the
/// text instead, which needs no cache and caches the script again.
#[derive(Debug)]
pub(crate) struct Script {
    text: Cow<'static, str>,
    hash: String,
}

impl Script {
    /// A call of this script on `keys`; [`Call::arg`] adds its arguments.
    ///
    /// The keys come all at once because `EVALSHA` wants their count before
    /// them: knowing it up front lets the call write the command into one
    /// buffer as it goes (two allocations, not two per argument; the speed
    /// issue's client cost per operation).
    pub(crate) fn call<const N: usize>(&self, keys: [&str; N]) -> Call<'_> {
        let size = self.hash.len() + 16 + keys.iter().map(|k| k.len()).sum::<usize>() + ARGS_DATA;
        let mut cmd = redis::Cmd::with_capacity(3 + N + ARGS, size);
        cmd.arg("EVALSHA").arg(&self.hash).arg(N);
        for key in keys {
            cmd.arg(key);
        }
        Call { script: self, cmd }
    }
}

/// Room reserved for a call's arguments: every script of the library takes
/// at most this many, and a lease owner (32 bytes) with a few numbers fits
/// in the bytes. More only costs a reallocation.
const ARGS: usize = 5;
const ARGS_DATA: usize = 96;

/// One call of a [`Script`]: the `EVALSHA` command, written as it is built.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    script: &'a Script,
    cmd: redis::Cmd,
}

impl Call<'_> {
    /// Adds an argument.
    pub(crate) fn arg<T: redis::ToRedisArgs>(mut self, arg: T) -> Self {
        self.cmd.arg(arg);
        self
    }

    /// `EVALSHA`; on `NOSCRIPT`, `EVAL` with the script's text (one more
    /// round trip, and it cannot miss the cache). Neither can run twice: a
    /// `NOSCRIPT` reply means the script did not run.
    pub(crate) async fn invoke_async<T: redis::FromRedisValue>(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
    ) -> redis::RedisResult<T> {
        match self.cmd.query_async(conn).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                // The same numkeys, keys and arguments after the text.
                let mut eval = redis::cmd("EVAL");
                eval.arg(self.script.text.as_ref());
                for arg in self.cmd.args_iter().skip(2) {
                    if let redis::Arg::Simple(bytes) = arg {
                        eval.arg(bytes);
                    }
                }
                eval.query_async(conn).await
            }
            other => other,
        }
    }
}
