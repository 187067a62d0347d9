//! The determinism self-check: one seed, run twice, must give one history.
//!
//! Replay is the harness's promise: a violation's seed reruns exactly the
//! history that showed it. Code under test can break that without failing
//! anything, by reading real time, drawing unseeded randomness, spawning
//! outside its actor, racing an unbiased `select!` or iterating a
//! `HashMap` into what it records (the rules are in the harness guide,
//! "Rules for code under test"). The run still completes; only a second
//! run of the same seed tells. So this module compares two runs' histories
//! and, when they differ, names the first event where they part, which is
//! usually the operation that broke a rule.
//!
//! `rp-sim explore --twice` runs it on every seed; a world of your own
//! calls [`compare_histories`] on two runs of one seed.

use std::fmt;

use crate::history::{digest_events, Digest, Event};

/// Two runs of one seed that gave different histories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The seed both runs used.
    pub seed: u64,
    /// The first run's digest.
    pub first_digest: Digest,
    /// The second run's digest.
    pub second_digest: Digest,
    /// Index of the first event that differs (or that only one run has).
    pub index: usize,
    /// The first run's event there, as the timeline prints it (`None`: the
    /// first run had ended).
    pub first: Option<String>,
    /// The second run's event there.
    pub second: Option<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |e: &Option<String>| e.clone().unwrap_or_else(|| "(no event: the run had ended)".to_string());
        write!(
            f,
            "seed {} gave two histories (digests {} and {}); they part at event {}:\n  first run:  {}\n  second run: {}\n\
             The code under test reads something the simulation does not control: real time \
             (std::time), unseeded randomness, a task spawned outside its actor, an unbiased \
             select!, or HashMap order (see \"Rules for code under test\" in docs/guide/harness.md)",
            self.seed,
            self.first_digest,
            self.second_digest,
            self.index,
            side(&self.first),
            side(&self.second)
        )
    }
}

impl std::error::Error for Divergence {}

/// `Ok` when the two runs of `seed` recorded the same history (compared as
/// the digest compares them, event by event); else where they part.
pub fn compare_histories(seed: u64, first: &[Event], second: &[Event]) -> Result<(), Divergence> {
    let (first_digest, second_digest) = (digest_events(first), digest_events(second));
    if first_digest == second_digest && first.len() == second.len() {
        return Ok(());
    }
    let same = |a: &Event, b: &Event| digest_events(std::slice::from_ref(a)) == digest_events(std::slice::from_ref(b));
    let index = first.iter().zip(second).position(|(a, b)| !same(a, b)).unwrap_or(first.len().min(second.len()));
    Err(Divergence {
        seed,
        first_digest,
        second_digest,
        index,
        first: first.get(index).map(ToString::to_string),
        second: second.get(index).map(ToString::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, Op};

    fn history(ops: &[&str]) -> Vec<Event> {
        let h = History::new();
        for (i, name) in ops.iter().enumerate() {
            h.invoke_at(i as u64 * 10, "client-0", Op::Note { text: (*name).to_string() });
        }
        h.events()
    }

    #[test]
    fn the_same_history_passes() {
        let a = history(&["a", "b", "c"]);
        assert_eq!(compare_histories(7, &a, &a.clone()), Ok(()));
    }

    #[test]
    fn the_first_differing_event_is_named() {
        let d = compare_histories(7, &history(&["a", "b", "c"]), &history(&["a", "x", "c"])).unwrap_err();
        assert_eq!((d.seed, d.index), (7, 1));
        assert!(d.first.as_deref().is_some_and(|e| e.contains('b')), "{d}");
        assert!(d.second.as_deref().is_some_and(|e| e.contains('x')), "{d}");
        assert_ne!(d.first_digest, d.second_digest);
        assert!(d.to_string().contains("Rules for code under test"), "{d}");
    }

    #[test]
    fn a_run_that_ends_early_parts_where_it_ended() {
        let d = compare_histories(3, &history(&["a", "b"]), &history(&["a", "b", "c"])).unwrap_err();
        assert_eq!(d.index, 2);
        assert_eq!(d.first, None);
        assert!(d.second.is_some());
    }
}
