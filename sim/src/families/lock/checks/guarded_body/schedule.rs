//! The keep-alive's schedule (`liveness`): each extension one interval
//! after the previous request that set the lease was sent. Judged on the
//! lock server's execution log rather than the history, since the
//! extensions of a guarded call are not recorded as operations.

use super::views::{Guarded, Views};
use super::TAKEN_AWAY_SLACK_MS;
use crate::bridge::Execution;
use crate::checker::{Violation, LIVENESS};
use crate::history::{Event, Millis, Op};

/// The schedule rule for guarded call `g`, whose body's end is known and
/// whose keep-alive interval is recorded.
pub(super) fn sent_on_time(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (Some(end), Some(every)) = (g.body_end, g.every) else { return };
    let lease = Lease {
        process: g.process,
        name: g.name,
        token: g.token,
        from: g.call.invoked,
        until: g.done.time,
        end,
        every,
    };
    if let Some(violation) = late_extension(&lease, v.executions, v.events, |from, to| v.calm(g.process, from, to)) {
        out.push(violation);
    }
}
/// One guarded call's lease, for [`late_extension`].
struct Lease<'a> {
    process: &'a str,
    name: &'a str,
    token: u64,
    /// The call's invoke and completion.
    from: Millis,
    until: Millis,
    /// When its body ended or was dropped: the keep-alive stops there.
    end: Millis,
    /// The keep-alive interval.
    every: Millis,
}

/// The schedule rule (see the module docs); `calm(from, to)` says no fault
/// reaching the caller, freeze or stall of its own overlapped the span.
fn late_extension(
    l: &Lease<'_>,
    executions: &[Execution],
    events: &[Event],
    calm: impl Fn(Millis, Millis) -> bool,
) -> Option<Violation> {
    let key = crate::checker::lock_key(l.name);
    let sent = |x: &Execution| x.sim_ms.saturating_sub(x.held_ms);
    let mine = |x: &&Execution| *x.client == *l.process;
    let mut requests: Vec<&Execution> = executions
        .iter()
        .filter(mine)
        .filter(|x| x.key.as_deref() == Some(key.as_str()) && sent(x) >= l.from && sent(x) <= l.end)
        .collect();
    requests.sort_by_key(|x| x.sim_ms);
    // Held requests the lease's own requests do not account for (one sent
    // before the call, another key's): a later request on the connection
    // may have queued behind them.
    let accounted = |ms: u64| requests.iter().any(|x| x.held_ms == ms);
    let mut holds: Vec<(Millis, Millis)> = events
        .iter()
        .filter(|e| e.process == l.process && e.time <= l.until)
        .filter_map(|e| match e.op {
            Op::Delayed { ms, mentioning: Some(_), .. } if e.time >= l.from && accounted(ms) => None,
            Op::Delayed { ms, .. } => Some((e.time, e.time + ms)),
            _ => None,
        })
        .collect();
    holds.extend(
        executions
            .iter()
            .filter(mine)
            .filter(|x| x.held_ms > 0 && !requests.iter().any(|r| std::ptr::eq(*r, *x)))
            .map(|x| (sent(x), x.sim_ms)),
    );
    let judged = |from: Millis, to: Millis| calm(from, to) && !holds.iter().any(|&(s, e)| s <= to && e >= from);
    let due = |x: &Execution| (sent(x) + l.every).max(x.sim_ms) + TAKEN_AWAY_SLACK_MS;
    for pair in requests.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if sent(b) > due(a) && judged(sent(a), b.sim_ms) {
            return Some(Violation::new(
                LIVENESS,
                Some(sent(b)),
                format!(
                    "{} (token {}): its keep-alive sent a request on {key} at {}ms; the previous one was sent at {}ms and answered by {}ms, so with an interval of {}ms the next was due by {}ms (an interval counts from the send)",
                    l.process, l.token, sent(b), sent(a), a.sim_ms, l.every, due(a)
                ),
            )
            .missed_by_ms(sent(b) - due(a)));
        }
    }
    let last = requests.last()?;
    (l.end > due(last) && judged(sent(last), l.end)).then(|| {
        Violation::new(
            LIVENESS,
            Some(l.end),
            format!(
                "{} (token {}): its body ran until {}ms, but the keep-alive sent nothing on {key} after the request sent at {}ms and answered by {}ms; with an interval of {}ms the next extension was due by {}ms",
                l.process, l.token, l.end, sent(last), last.sim_ms, l.every, due(last)
            ),
        )
        .missed_by_ms(l.end - due(last))
    })
}
