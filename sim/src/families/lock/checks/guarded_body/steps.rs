//! The `self-fencing` rules about the body's steps (the caller's writes
//! carrying the lease's token, invoked inside the call): none after the
//! lease may be someone else's, none after the body was cancelled, and
//! every one finished when the call reports `Completed`.

use super::views::{Call, Guarded, Views};
use crate::checker::{Violation, SELF_FENCING};
use crate::families::lock::op::GuardedResult;
use crate::history::{Millis, Op};

/// Judges every body step of `g`, whose lease was granted at `acquired`;
/// `held` is the deadline its held first extend ran past, and when it ran
/// ([`super::fencing::held_past_deadline`]).
pub(super) fn judge(
    v: &Views<'_>,
    g: &Guarded<'_, '_>,
    acquired: Millis,
    held: Option<(Millis, Millis)>,
    out: &mut Vec<Violation>,
) {
    let (call, done, token) = (g.call, g.done, g.token);
    let steps = v.calls.iter().filter(|w| {
        w.process == g.process
            && matches!(w.op, Op::Write { token: Some(t), .. } if *t == token)
            && w.invoked >= call.invoked
            && w.invoked <= done.time
    });
    for w in steps {
        after_a_held_deadline(g, w, held, out);
        after_another_grant(v, g, w, acquired, out);
        within_the_outcome(g, w, out);
    }
}

/// A step after the deadline its held first extend ran past: no extension
/// could have been confirmed by then.
fn after_a_held_deadline(g: &Guarded<'_, '_>, w: &Call<'_>, held: Option<(Millis, Millis)>, out: &mut Vec<Violation>) {
    let token = g.token;
    if let Some((d, until)) = held.filter(|&(d, _)| w.invoked > d) {
        out.push(Violation::new(
            SELF_FENCING,
            Some(w.invoked),
            format!(
                "{} (token {token}) ran a guarded body step at {}ms, after the lease's local deadline of {d}ms: its first request after the acquire (the first extend) was held at the server and ran at {until}ms, so no extension could have been confirmed by then",
                g.process, w.invoked
            ),
        ));
    }
}

/// A step after another process was granted the lock by an acquire invoked
/// after the caller's own completed: that grant proves the caller's key
/// was gone, so its local deadline had passed.
fn after_another_grant(v: &Views<'_>, g: &Guarded<'_, '_>, w: &Call<'_>, acquired: Millis, out: &mut Vec<Violation>) {
    let (token, name) = (g.token, g.name);
    if let Some((_, other, t, _, at)) =
        v.grants.iter().find(|(n, p, _, i, d)| *n == name && *p != g.process && *i > acquired && *d < w.invoked)
    {
        out.push(Violation::new(
            SELF_FENCING,
            Some(w.invoked),
            format!(
                "{} (token {token}) ran a guarded body step at {}ms, but {other} had been granted {name} (token {}) at {at}ms: the body outlived its lease",
                g.process,
                w.invoked,
                t.map_or_else(|| "none".into(), |t| t.to_string())
            ),
        ));
    }
}

/// `Cancelled { at }`: no step invoked after `at`; `Completed`: every step
/// completed.
fn within_the_outcome(g: &Guarded<'_, '_>, w: &Call<'_>, out: &mut Vec<Violation>) {
    let (token, done) = (g.token, g.done);
    match g.outcome {
        Some(GuardedResult::Cancelled { at, .. }) if w.invoked > *at => out.push(Violation::new(
            SELF_FENCING,
            Some(w.invoked),
            format!(
                "{} (token {token}): guarded body step at {}ms after the body was cancelled at {at}ms",
                g.process, w.invoked
            ),
        )),
        Some(GuardedResult::Completed) if w.done.is_none() => out.push(Violation::new(
            SELF_FENCING,
            Some(done.time),
            format!(
                "{} (token {token}): guarded call reported Completed at {}ms, but its body step invoked at {}ms never completed",
                g.process, done.time, w.invoked
            ),
        )),
        _ => {}
    }
}
