//! [`Why`]: one thing an election's views got wrong, and, for a rule about
//! instants, by how much its instant missed the bound: what a live run
//! weighs against its jitter (`Violation::missed_by`).

use core::time::Duration;

use crate::checker::Violation;

/// One finding of `views`.
#[derive(Debug)]
pub(super) struct Why {
    text: String,
    missed_by_us: Option<u64>,
}

impl From<String> for Why {
    fn from(text: String) -> Why {
        Why { text, missed_by_us: None }
    }
}

impl Why {
    /// A finding about an instant that missed its bound by `by_us` µs.
    pub(super) fn timed(text: String, by_us: u64) -> Why {
        Why { text, missed_by_us: Some(by_us) }
    }

    /// Several findings of one event as one: a matter of precision only
    /// if each of them is. `None` for none.
    pub(super) fn joined(whys: Vec<Why>) -> Option<Why> {
        if whys.is_empty() {
            return None;
        }
        let missed_by_us =
            whys.iter().map(|w| w.missed_by_us).collect::<Option<Vec<_>>>().and_then(|m| m.into_iter().max());
        let text = whys.into_iter().map(|w| w.text).collect::<Vec<_>>().join("; ");
        Some(Why { text, missed_by_us })
    }

    /// Its text.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// `violation`, with this finding's miss.
    pub(super) fn weigh(&self, violation: Violation) -> Violation {
        match self.missed_by_us {
            Some(us) => violation.missed_by(Duration::from_micros(us)),
            None => violation,
        }
    }
}
