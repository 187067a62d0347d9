//! Where a Lua script's text comes from: the file compiled into the crate.
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

/// The text of script `name` (`lock_acquire`, …): `builtin`, unless the
/// `mutation-hooks` feature is on and the environment names a replacement.
#[cfg_attr(not(feature = "mutation-hooks"), allow(unused_variables))]
pub(crate) fn text(name: &str, builtin: &'static str) -> Cow<'static, str> {
    #[cfg(feature = "mutation-hooks")]
    if std::env::var("RP_MUTANT_SCRIPT").is_ok_and(|s| s == name) {
        if let Ok(path) = std::env::var("RP_MUTANT_FILE") {
            // A test hook: an unreadable file is a harness bug, and running
            // the unmutated script instead would report a false survivor.
            match std::fs::read_to_string(&path) {
                Ok(mutated) => return Cow::Owned(mutated),
                Err(e) => panic!("RP_MUTANT_FILE={path}: {e}"),
            }
        }
    }
    Cow::Borrowed(builtin)
}

/// A [`redis::Script`] for script `name` (see [`text`]).
pub(crate) fn script(name: &str, builtin: &'static str) -> redis::Script {
    redis::Script::new(&text(name, builtin))
}
