//! `no-stale-overwrite`, the read rules: every read of a fenced store,
//! made while writes are in flight or once all is quiet, returns a state
//! the key had at some instant between the read's invoke and its
//! completion, its value and its token from the same write.
//!
//! A fenced store's state only moves forward: a write lands only with a
//! token at least the stored one. So, per successful `Read` of a key that
//! fenced writes went to, with `W` the writes that could have put the pair
//! it returned (same token and value, invoked before the read completed):
//!
//! - **one write**: `W` is not empty. A value with another write's token
//!   (a read assembled from two requests, a write landing between them)
//!   matches no write;
//! - **not older than what it follows**: no write with a higher token was
//!   definitely accepted (completed `Accepted`) before the read was
//!   invoked;
//! - **not an older value of the same token**: no write of the same token
//!   and another value was definitely accepted before the read was invoked
//!   after every write of `W` had definitely landed (the holder's repeated
//!   writes go forward too);
//! - **absent** only while no write had definitely been accepted before
//!   the read was invoked.
//!
//! A write of unknown outcome may land at any time after its invoke, so it
//! can explain a read and never convicts one. The final read is judged by
//! the same rules; an unfenced store (values without tokens) is judged by
//! `stale_overwrite`'s final-value rule alone.

use super::{completed, Violation, NO_STALE_OVERWRITE};
use crate::history::{EventKind, Millis, Op};

/// A fenced write that may have been applied: (key, token, value,
/// invoked, definitely-accepted completion or `None` when unknown).
/// Made by `stale_overwrite`, which judges the writes themselves; defined
/// here so that the dependency runs one way (`stale_overwrite` → here).
pub(super) type Candidate<'a> = (&'a str, u64, &'a str, Millis, Option<Millis>);

/// A completed read of a fenced key: the key, its span and what it found.
struct Read<'a> {
    key: &'a str,
    process: &'a str,
    invoked: Millis,
    done: Millis,
    value: Option<&'a str>,
    token: Option<u64>,
}

/// Judges every successful read of a key that fenced writes (`candidates`)
/// went to.
pub(super) fn check(events: &[crate::history::Event], candidates: &[Candidate<'_>], out: &mut Vec<Violation>) {
    for c in completed(events) {
        let Op::Read { key, value, token } = &c.done.op else { continue };
        if c.done.kind != EventKind::Ok || !candidates.iter().any(|w| w.0 == key) {
            continue;
        }
        let r = Read {
            key,
            process: &c.done.process,
            invoked: c.invoke_time,
            done: c.done.time,
            value: value.as_deref(),
            token: *token,
        };
        if let Some(detail) = judge(&r, candidates) {
            out.push(Violation::new(NO_STALE_OVERWRITE, Some(r.done), detail));
        }
    }
}

/// What is wrong with read `r`, if anything.
fn judge(r: &Read<'_>, candidates: &[Candidate<'_>]) -> Option<String> {
    let writes = || candidates.iter().filter(|w| w.0 == r.key);
    // Writes definitely applied before the read began.
    let before = || writes().filter_map(|&(_, t, v, inv, acc)| acc.filter(|&d| d < r.invoked).map(|d| (t, v, inv, d)));
    let span = format!("{} read {} over [{}ms, {}ms]", r.process, r.key, r.invoked, r.done);
    let (Some(value), Some(token)) = (r.value, r.token) else {
        return before().next().map(|(t, v, _, d)| {
            format!("{span} and found nothing, but {v:?} with token {t} had been accepted at {d}ms")
        });
    };
    let same: Vec<_> = writes().filter(|w| w.1 == token && w.2 == value && w.3 < r.done).collect();
    if same.is_empty() {
        return Some(format!(
            "{span} and found value {value:?} with token {token}, which no write invoked by then carried together (a torn read: one write's value with another's token)"
        ));
    }
    if let Some((t, v, _, d)) = before().filter(|w| w.0 > token).max_by_key(|w| w.0) {
        return Some(format!(
            "{span} and found token {token}, but {v:?} with the higher token {t} had been accepted at {d}ms, before the read began"
        ));
    }
    // Every write that could have put the pair had landed before `newer`
    // was even sent, and `newer` landed before the read began.
    let landed_by = same.iter().map(|w| w.4).try_fold(0, |m: Millis, d| d.map(|d| m.max(d)));
    let newer = landed_by.and_then(|l| before().find(|&(t, v, inv, _)| t == token && v != value && inv > l));
    newer.map(|(_, v, inv, d)| {
        format!(
            "{span} and found {value:?} (token {token}), but the same token's later write {v:?} (invoked {inv}ms, after that one had landed) had been accepted at {d}ms, before the read began"
        )
    })
}

/// Whether a successful read of a fenced key was in flight while a write
/// to the key was (the write invoked before the read completed, and
/// completed, if ever, after the read was invoked).
pub(crate) fn overlapped_a_write(events: &[crate::history::Event]) -> bool {
    let ops = completed(events);
    let writes: Vec<_> = ops
        .iter()
        .filter_map(|c| match &c.done.op {
            Op::Write { key, fenced: true, .. } => Some((key, c.invoke_time, c.done.time)),
            _ => None,
        })
        .collect();
    ops.iter().any(|c| match &c.done.op {
        Op::Read { key, .. } if c.done.kind == EventKind::Ok => {
            writes.iter().any(|&(k, inv, done)| k == key && inv < c.done.time && done > c.invoke_time)
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::super::stale_overwrite;
    use crate::history::{EventKind, History, Op, OpId, WriteResult};

    /// A history built in time order from `steps`: `(t, step)` pairs,
    /// sorted here (a history's events are appended in time order).
    struct Script(Vec<(u64, Step)>);

    enum Step {
        Write(&'static str, &'static str, u64, u32),
        Wrote(u32, EventKind),
        Read(u32),
        Found(u32, Option<(&'static str, u64)>),
    }

    impl Script {
        fn history(mut self) -> History {
            self.0.sort_by_key(|(t, _)| *t);
            let h = History::new();
            let mut ids: std::collections::BTreeMap<u32, (OpId, &str, &str, u64)> = Default::default();
            for (t, step) in self.0 {
                let w = |value: &str, token, result| Op::Write {
                    key: "k".into(),
                    value: value.into(),
                    token: Some(token),
                    fenced: true,
                    result,
                };
                let r = |value: Option<String>, token| Op::Read { key: "k".into(), value, token };
                match step {
                    Step::Write(p, value, token, n) => {
                        ids.insert(n, (h.invoke_at(t, p, w(value, token, None)), p, value, token));
                    }
                    Step::Wrote(n, kind) => {
                        let (id, p, value, token) = ids[&n];
                        let result = (kind == EventKind::Ok).then_some(WriteResult::Accepted);
                        h.complete_at(t, id, p, kind, w(value, token, result));
                    }
                    Step::Read(n) => {
                        ids.insert(n, (h.invoke_at(t, "r", r(None, None)), "r", "", 0));
                    }
                    Step::Found(n, found) => {
                        let (value, token) = found.map_or((None, None), |(v, t)| (Some(v.to_string()), Some(t)));
                        h.complete_at(t, ids[&n].0, "r", EventKind::Ok, r(value, token));
                    }
                }
            }
            h
        }
    }

    /// a-1 (token 1) over 0-2 ms, b-2 (token 2) over 10-12 ms, b-3 (token 2
    /// again) over 20-22 ms, as writes 1, 2 and 3.
    fn three_writes() -> Vec<(u64, Step)> {
        vec![
            (0, Step::Write("a", "a-1", 1, 1)),
            (2, Step::Wrote(1, EventKind::Ok)),
            (10, Step::Write("b", "b-2", 2, 2)),
            (12, Step::Wrote(2, EventKind::Ok)),
            (20, Step::Write("b", "b-3", 2, 3)),
            (22, Step::Wrote(3, EventKind::Ok)),
        ]
    }

    /// `steps` plus read `n` over `[t0, t1]` finding `found`.
    fn read(
        mut steps: Vec<(u64, Step)>,
        n: u32,
        t0: u64,
        t1: u64,
        found: Option<(&'static str, u64)>,
    ) -> Vec<(u64, Step)> {
        steps.push((t0, Step::Read(n)));
        steps.push((t1, Step::Found(n, found)));
        steps
    }

    /// The read-rule violations of `steps` (the other rules left out).
    fn reads(steps: Vec<(u64, Step)>) -> Vec<String> {
        stale_overwrite::check(&Script(steps).history().events())
            .into_iter()
            .map(|v| v.detail)
            .filter(|d| d.contains(" read k over "))
            .collect()
    }

    #[test]
    fn reads_of_states_that_existed_in_their_span_pass() {
        let mut s = three_writes();
        s = read(s, 10, 1, 3, None); // before a-1 surely landed
        s = read(s, 11, 1, 3, Some(("a-1", 1)));
        s = read(s, 12, 5, 11, Some(("a-1", 1))); // b-2 may not have landed
        s = read(s, 13, 5, 11, Some(("b-2", 2)));
        s = read(s, 14, 13, 21, Some(("b-2", 2)));
        s = read(s, 15, 30, 31, Some(("b-3", 2)));
        assert_eq!(reads(s), Vec::<String>::new());
    }

    #[test]
    fn a_torn_read_fails() {
        let v = reads(read(three_writes(), 10, 9, 13, Some(("b-2", 1))));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("no write invoked by then carried together"), "{v:?}");
    }

    #[test]
    fn stale_and_absent_reads_fail() {
        let stale = reads(read(three_writes(), 10, 13, 14, Some(("a-1", 1))));
        assert!(stale.len() == 1 && stale[0].contains("higher token 2"), "{stale:?}");
        let absent = reads(read(three_writes(), 10, 3, 4, None));
        assert!(absent.len() == 1 && absent[0].contains("found nothing"), "{absent:?}");
        let older = reads(read(three_writes(), 10, 23, 24, Some(("b-2", 2))));
        assert!(older.len() == 1 && older[0].contains("later write \"b-3\""), "{older:?}");
    }

    #[test]
    fn a_write_of_unknown_outcome_explains_a_read_and_convicts_none() {
        let mut s = vec![
            (0, Step::Write("a", "a-1", 1, 1)),
            (2, Step::Wrote(1, EventKind::Ok)),
            (10, Step::Write("b", "b-2", 2, 2)),
            (500, Step::Wrote(2, EventKind::Info)),
        ];
        s = read(s, 10, 600, 601, Some(("b-2", 2)));
        s = read(s, 11, 700, 701, Some(("a-1", 1)));
        assert_eq!(reads(s), Vec::<String>::new());
    }

    #[test]
    fn overlap_is_seen_only_with_a_write_in_flight() {
        let quiet = Script(read(three_writes(), 10, 30, 31, Some(("b-3", 2)))).history();
        assert!(!super::overlapped_a_write(&quiet.events()));
        let busy = Script(read(three_writes(), 10, 11, 13, Some(("b-2", 2)))).history();
        assert!(super::overlapped_a_write(&busy.events()));
    }
}
