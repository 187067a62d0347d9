//! `error-replies`: a correct primitive never gets an error reply that
//! nothing in the run provoked.
//!
//! Faults in the simulation are network and process faults: partitions,
//! pauses, held replies, restarts, clock steps. None of them makes Redis
//! answer a well-formed script with an error; what does is a bug: a script
//! that indexes a missing `KEYS`/`ARGV` entry, a guard that refuses the
//! library's own stored values as `CORRUPT`, a command on a key of the wrong
//! type. Scenarios record failed calls as "outcome unknown" (a timeout and a
//! script error look alike to a caller that only retries), so without this
//! checker such a bug reads as bad luck. The connection records every error
//! reply but `NOSCRIPT` (see [`crate::net`]); this checker convicts the
//! first one and counts the rest.

use super::{Violation, ERROR_REPLIES};
use crate::history::{Event, Op};

/// One violation for the first error reply in `events`, if any.
pub fn check(events: &[Event]) -> Option<Violation> {
    let mut replies = events.iter().filter_map(|e| match &e.op {
        Op::ErrorReply { message } => Some((e, message)),
        _ => None,
    });
    let (first, message) = replies.next()?;
    let more = replies.count();
    let tail = if more == 0 { String::new() } else { format!(" ({more} more)") };
    Some(Violation::new(
        ERROR_REPLIES,
        Some(first.time),
        format!("{} got an error reply at t={}ms: {message}{tail}", first.process, first.time),
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
        h.observe_at(9, "c2", Op::ErrorReply { message: "CORRUPT x".into() });
        let v = check(&h.events()).expect("an error reply convicts");
        assert_eq!(v.invariant, ERROR_REPLIES);
        assert_eq!(v.at, Some(7));
        assert!(v.detail.contains("c1") && v.detail.contains("bad argument") && v.detail.contains("1 more"), "{}", v.detail);
    }
}
