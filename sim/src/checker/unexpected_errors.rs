//! `unexpected-errors`: a correct primitive never gets an error reply,
//! and never returns an error, that nothing in the run explains.
//!
//! Faults in the simulation are network and process faults: partitions,
//! pauses, held replies, restarts, clock steps. They explain timeouts and
//! lost connections (`Error::outcome_is_unknown`), nothing else. None of
//! them makes Redis answer a well-formed script with an error, or makes
//! the library refuse its own stored values; what does is a bug: a script
//! that indexes a missing `KEYS`/`ARGV` entry, a guard that refuses the
//! library's own values as `CORRUPT`, a reply parsed into the wrong shape.
//! Scenarios record failed calls as "outcome unknown" (a timeout and a
//! script error look alike to a caller that only retries), so without this
//! checker such a bug reads as bad luck. The connection records every error
//! reply but `NOSCRIPT` (see [`crate::SimConnection`]), the actors every other library
//! error ([`crate::world::Actor::errored`]); this checker convicts the first
//! one and counts the rest.

use super::{Violation, UNEXPECTED_ERRORS};
use crate::history::{Event, Op};

/// One violation for the first unexplained error in `events`, if any.
pub(crate) fn check(events: &[Event]) -> Option<Violation> {
    let mut errors = events.iter().filter_map(|e| match &e.op {
        Op::ErrorReply { message } => Some((e, "got an error reply", message)),
        Op::LibraryError { message } => Some((e, "got a library error no fault explains", message)),
        _ => None,
    });
    let (first, what, message) = errors.next()?;
    let more = errors.count();
    let tail = if more == 0 { String::new() } else { format!(" ({more} more)") };
    Some(Violation::new(
        UNEXPECTED_ERRORS,
        Some(first.time),
        format!("{} {what} at t={}ms: {message}{tail}", first.process, first.time),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[test]
    fn an_error_reply_is_a_violation_and_its_absence_is_not() {
        let h = History::new();
        h.observe_at(5, "c1", Op::Note { text: "fine".into() });
        assert!(check(&h.events()).is_none());
        h.observe_at(7, "c1", Op::ErrorReply { message: "ERR user_script:1: bad argument".into() });
        h.observe_at(9, "c2", Op::LibraryError { message: "corrupt state in `x`".into() });
        let v = check(&h.events()).expect("an error reply convicts");
        assert_eq!(v.invariant, UNEXPECTED_ERRORS);
        assert_eq!(v.at, Some(7));
        assert!(
            v.detail.contains("c1") && v.detail.contains("bad argument") && v.detail.contains("1 more"),
            "{}",
            v.detail
        );
    }
}
