//! `rate-limit-exact`: every decision of a limiter is the one its algorithm
//! must give, recomputed from the history — both ways.
//!
//! The `rate-limit` checker only bounds admissions per window, so a limiter
//! that wrongly *denies*, miscounts, or answers a wrong `retry_after` or
//! `remaining` passes it. This checker replays the algorithm the README
//! documents over the decisions of the history and convicts any decision
//! the history cannot justify:
//!
//! - **sliding log** (window `(t − W, t]`): an admission at `t` reports
//!   `count` = the admissions executed before it whose time lies in the
//!   window, plus one, and `count ≤ max`; a denial needs `count ≥ max`
//!   admissions in the window, and its `retry_after` is exactly
//!   `a + W − t` for `a` the `(count − max)`-th oldest of them (0-based:
//!   the instant the window drops below `max` if nothing else is admitted);
//!   `remaining = max − count`.
//! - **sliding counter** (buckets `[iW, (i+1)W)` of unix time): with `c`
//!   admissions in the current bucket, `p` in the previous one and
//!   `e` ms elapsed in the current one, the estimate is
//!   `ceil(p × (W − e) / W) + c`; it admits iff `c < max` and
//!   `p × (W − e) ≤ (max − c − 1) × W`, reporting `count = estimate + 1`;
//!   a denial reports `count = estimate` and the exact wait until the
//!   condition holds (`scripts/sliding_counter.lua`).
//!
//! - **server time**: a decision that read the server's clock reports the
//!   exact instant the server executed it: the bridge's execution log
//!   ([`crate::Execution`]) holds the clock every script of the
//!   caller ran under, and one of those run between its invoke and reply
//!   must match. A `now` derived wrongly from `TIME` (a wrong unit, a
//!   dropped microsecond part, an off-by-one millisecond) is caught.
//!
//! - **pinned instants**: a `check_at` decision reports the instant it was
//!   given.
//! - **one request at a time**: a key whose requests never overlapped, all
//!   answered, within less than a window (so its idle expiry cannot have
//!   run in between), is replayed decision by decision in the order they
//!   were sent, through the algorithm's own state: the instants may then go
//!   backwards (`check_at` with application clocks that disagree), and the
//!   replay says what each limiter must answer there too. A key whose
//!   instants go backwards and cannot be replayed is not judged.
//!
//! What the history can and cannot tell:
//!
//! - Server time is monotone in execution order (one server, its clock
//!   pinned to simulated time, commands executed one at a time; a pinned
//!   key is used by one caller whose instants never go backwards), so a
//!   decision at `t' < t` executed before one at `t`. Within one
//!   millisecond, admissions report strictly increasing counts in execution
//!   order (each sees the ones before), so counts order them; and nothing
//!   is admitted after a denial within its millisecond (nothing left the
//!   window), so every same-millisecond admission precedes a denial.
//! - A request whose outcome is unknown (`info`, `fail`, or never completed)
//!   may have been admitted at any instant of its possible execution
//!   interval: its pinned instant for a `check_at`, else from its invoke
//!   until [`Config::drain_ms`] after the later of its invoke and the last
//!   fault's heal (a held or paused request runs by the heal, or is lost).
//!   Such requests
//!   widen what a count may be; the exact `retry_after` is only required
//!   when the count shows none of them is in the window. No decision is
//!   convicted on an unknown outcome.
//!
//! Each key is judged on its own. One violation per key (the first
//! unjustified decision, in server time), so a broken limiter gives one
//! readable line per key rather than hundreds.

mod judge;
mod replay;

use std::collections::BTreeMap;

use judge::first_unjustified;
use replay::{replay, Replayed};

use super::super::op::{Admission, DecisionAccessors, RateLimitOp};
use crate::bridge::Execution;
use crate::checker::Violation;
use crate::families::rate_limit::invariants::RATE_LIMIT_EXACT;
use crate::history::{Event, EventKind, Millis};

/// Which algorithm the decisions must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// `SlidingWindowLog`.
    Log,
    /// `SlidingWindowCounter`; its buckets are aligned to unix time, so the
    /// checker needs the unix ms of simulated time 0.
    Counter {
        /// Unix ms at simulated time 0.
        epoch_ms: u64,
    },
}

/// Checker configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// When the last fault healed (0: no faults).
    pub last_heal_ms: Millis,
    /// How long after its invoke, or after the last heal if later, a
    /// request may still execute (link latency and timeouts; a held or
    /// paused request runs by the heal).
    pub drain_ms: Millis,
    /// Unix ms of simulated time 0 (server clocks in the execution log are
    /// unix ms; decisions are in simulated ms).
    pub epoch_ms: u64,
}

/// What the checker found, with how much it could judge.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExactWindows {
    /// Unjustified decisions (at most one per key).
    pub violations: Vec<Violation>,
    /// Decisions judged.
    pub decisions: u64,
    /// Denials whose `retry_after` was checked exactly.
    pub exact_retry: u64,
}

#[derive(Debug, Clone)]
pub(super) struct Decided {
    pub(super) t: Millis,
    pub(super) admitted: bool,
    pub(super) count: u64,
    pub(super) remaining: Option<u64>,
    pub(super) retry: Option<u64>,
    pub(super) invoke: Millis,
    pub(super) done: Millis,
    pub(super) pinned: bool,
    /// The instant a `check_at` pinned, if any.
    pub(super) pinned_at: Option<Millis>,
    pub(super) process: String,
    /// The limit of the limiter that decided: a key may be shared by
    /// limiters of different limits (a limit lowered for a key in use).
    pub(super) limit: u64,
}

#[derive(Debug, Default)]
pub(super) struct Key {
    pub(super) window: u64,
    pub(super) decided: Vec<Decided>,
    /// Possible execution interval `[lo, hi]` of each unknown outcome.
    pub(super) unknown: Vec<(Millis, Millis)>,
}

/// Checks every limiter key in `events`; `executions` is the limiter
/// node's execution log (see the module docs).
pub(crate) fn check(events: &[Event], executions: &[Execution], config: Config) -> ExactWindows {
    let mut report = ExactWindows::default();
    for (name, mut k) in read_keys(events, config) {
        if let Some((at, why, missed)) = wrong_clock(&k, executions, config) {
            report.decisions += k.decided.len() as u64;
            let v = Violation::new(RATE_LIMIT_EXACT, Some(at), format!("{name}: {why}"));
            report.violations.push(match missed {
                Some(ms) => v.missed_by_ms(ms),
                None => v,
            });
            continue;
        }
        match replay(&k, config) {
            Replayed::Exactly(r) => {
                report.decisions += k.decided.len() as u64;
                if let Err((at, why)) = r {
                    report.violations.push(Violation::new(RATE_LIMIT_EXACT, Some(at), format!("{name}: {why}")));
                }
                continue;
            }
            Replayed::Unjudged => continue,
            Replayed::NotSequential => {}
        }
        if let Some((at, why)) = first_unjustified(&mut k, config, &mut report) {
            report.violations.push(Violation::new(RATE_LIMIT_EXACT, Some(at), format!("{name}: {why}")));
        }
    }
    report
}

/// Reads the history into its limiter keys: each key's decided requests
/// and the possible execution intervals of its unknown outcomes.
fn read_keys(events: &[Event], config: Config) -> BTreeMap<String, Key> {
    let mut invoked: BTreeMap<u64, (Millis, Option<Millis>, String)> = BTreeMap::new();
    let mut keys: BTreeMap<String, Key> = BTreeMap::new();
    let unknown_interval = |invoke: Millis, pinned: Option<Millis>| match pinned {
        Some(p) => (p, p),
        None => (invoke, invoke.max(config.last_heal_ms) + config.drain_ms),
    };
    for e in events {
        let Some(RateLimitOp::RateLimit {
            key,
            limit,
            window_ms,
            admission,
            server_ms,
            count,
            remaining,
            pinned_ms,
            ..
        }) = e.op.family()
        else {
            continue;
        };
        let k = keys.entry(key.clone()).or_insert_with(|| Key { window: *window_ms, ..Key::default() });
        if e.kind == EventKind::Invoke {
            invoked.insert(e.op_id.0, (e.time, *pinned_ms, key.clone()));
            continue;
        }
        let (invoke, pinned, _) = invoked.remove(&e.op_id.0).unwrap_or((e.time, *pinned_ms, String::new()));
        match (e.kind, admission, server_ms, count) {
            (EventKind::Ok, Some(a), Some(t), Some(c)) => k.decided.push(Decided {
                t: *t,
                admitted: *a == Admission::Admitted,
                count: *c,
                remaining: *remaining,
                retry: match a {
                    Admission::Denied { retry_after_ms } => *retry_after_ms,
                    Admission::Admitted => None,
                },
                invoke,
                done: e.time,
                pinned: pinned.is_some(),
                pinned_at: pinned,
                process: e.process.clone(),
                limit: *limit,
            }),
            // A denial without its details records nothing and cannot be
            // judged; an admission without them may count anywhere.
            (EventKind::Ok, Some(Admission::Denied { .. }), _, _) => {}
            _ => k.unknown.push(unknown_interval(invoke, pinned)),
        }
    }
    // Requests invoked and never completed: outcome unknown.
    for (_, (invoke, pinned, key)) in invoked {
        if let Some(k) = keys.get_mut(&key) {
            k.unknown.push(unknown_interval(invoke, pinned));
        }
    }
    keys
}

/// The first decision of `k` that misreports its instant: a pinned instant
/// other than the one given, or a server clock none of its caller's
/// scripts ran under between its invoke and reply; with, for the second, by
/// how much the nearest script's clock missed it (a live run's execution
/// log reads the server's clock where the reply passes its proxy).
fn wrong_clock(k: &Key, executions: &[Execution], config: Config) -> Option<(Millis, String, Option<Millis>)> {
    // A decision that read the server's clock (no pinned instant) must
    // report the clock one of its caller's scripts ran under between
    // its invoke and reply. A script that derives `now` wrongly from
    // `TIME` is otherwise invisible: every instant would be
    // consistently off, and the windows with them.
    // Each execution justifies one decision: per caller and reported
    // instant, there must be as many scripts run at that instant as
    // decisions claiming it.
    let mut claims: BTreeMap<(&str, Millis), u64> = BTreeMap::new();
    for d in k.decided.iter().filter(|d| !d.pinned) {
        *claims.entry((d.process.as_str(), d.t)).or_default() += 1;
    }
    let over = claims.iter().find_map(|(&(process, t), &n)| {
        let scripts = || executions.iter().filter(|x| *x.client == *process && x.command.starts_with("EVAL"));
        let clock = |x: &Execution| x.server_unix_ms.saturating_sub(config.epoch_ms);
        let ran = scripts().filter(|x| clock(x) == t).count() as u64;
        let nearest = scripts().map(|x| clock(x).abs_diff(t)).filter(|&d| d > 0).min();
        (ran < n).then(|| {
            (t, format!("{n} decisions of {process} report the server's clock at {t}ms, but only {ran} of its scripts executed then"), nearest)
        })
    });
    // A `check_at` decides at the instant it was given, nothing else.
    let pinned_wrong = k.decided.iter().find_map(|d| {
        let p = d.pinned_at?;
        (d.t != p).then(|| (d.t, format!("{}: check_at was given {p}ms but decided at {}ms", describe(d), d.t), None))
    });
    pinned_wrong.or(over).or_else(|| k.decided.iter().filter(|d| !d.pinned).find_map(|d| {
        let mut ran = executions
            .iter()
            .filter(|x| *x.client == *d.process && x.command.starts_with("EVAL") && (d.invoke..=d.done).contains(&x.sim_ms))
            .map(|x| x.server_unix_ms.saturating_sub(config.epoch_ms));
        if ran.clone().any(|t| t == d.t) {
            return None;
        }
        let nearest = ran.clone().map(|t| t.abs_diff(d.t)).min();
        let clocks: Vec<String> = ran.by_ref().take(4).map(|t| format!("{t}ms")).collect();
        Some((d.t, format!(
            "{}: it reports the server's clock at {}ms, but the scripts {} ran between its invoke and reply executed at [{}]",
            describe(d),
            d.t,
            d.process,
            clocks.join(", ")
        ), nearest))
    }))
}

pub(super) fn describe(d: &Decided) -> String {
    if d.admitted {
        format!("admission at {}ms (invoked {}ms) with count {}", d.t, d.invoke, d.count)
    } else {
        format!(
            "denial at {}ms (invoked {}ms) with count {} retry-after {}ms",
            d.t,
            d.invoke,
            d.count,
            d.retry.map_or("?".into(), |r| r.to_string())
        )
    }
}

/// The `Decision`'s accessors agree with its variant: `is_allowed()` and
/// `is_denied()` say which it is, `remaining()` is the admission's remaining
/// (0 after a denial), `retry_after()` the denial's wait (`None` after an
/// admission), `count()` the count.
pub(crate) fn check_accessors(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Some(RateLimitOp::RateLimit {
            admission: Some(admission),
            count: Some(count),
            remaining,
            accessors: Some(a),
            ..
        }) = e.op.family()
        else {
            continue;
        };
        let expected = match admission {
            Admission::Admitted => DecisionAccessors {
                is_allowed: true,
                is_denied: false,
                remaining: remaining.unwrap_or_default(),
                retry_after_ms: None,
                count: *count,
            },
            Admission::Denied { retry_after_ms } => DecisionAccessors {
                is_allowed: false,
                is_denied: true,
                remaining: 0,
                retry_after_ms: *retry_after_ms,
                count: *count,
            },
        };
        if *a != expected && out.len() < 5 {
            out.push(Violation::new(
                RATE_LIMIT_EXACT,
                Some(e.time),
                format!("{}: a decision {admission:?} (count {count}) reports through its accessors {a:?}", e.process),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    const LOG: Config = Config { algorithm: Algorithm::Log, last_heal_ms: 0, drain_ms: 0, epoch_ms: 0 };

    /// The execution log a faithful server gives `h`: every script ran
    /// at the instant its decision reports.
    fn ran(h: &History) -> Vec<Execution> {
        h.events()
            .iter()
            .filter_map(|e| match e.op.family() {
                Some(RateLimitOp::RateLimit { server_ms: Some(t), pinned_ms: None, .. }) if e.kind == EventKind::Ok => {
                    Some(Execution {
                        client: e.process.as_str().into(),
                        command: "EVALSHA".into(),
                        key: None,
                        args: Vec::new(),
                        server_unix_ms: *t,
                        sim_ms: e.time,
                        taken_ms: e.time,
                        held_ms: 0,
                        reply: crate::Reply::Other,
                    })
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_decision_must_report_the_clock_its_script_ran_under() {
        let h = History::new();
        admit(&h, 10, 1);
        let mut log = ran(&h);
        assert_eq!(check(&h.events(), &log, LOG).violations, vec![]);
        // The script ran at 10 ms; a `now` one millisecond early is wrong.
        log[0].server_unix_ms = 11;
        let v = check(&h.events(), &log, LOG).violations;
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("report the server's clock at 10ms, but only 0"), "{}", v[0].detail);
    }

    fn op(admission: Option<Admission>, t: Option<u64>, count: Option<u64>, pinned: Option<u64>) -> RateLimitOp {
        RateLimitOp::RateLimit {
            key: "k".into(),
            limit: 3,
            window_ms: 100,
            admission,
            server_ms: t,
            count,
            remaining: count.map(|c| 3u64.saturating_sub(c)),
            pinned_ms: pinned,
            accessors: None,
        }
    }

    fn admit(h: &History, t: u64, count: u64) {
        let id = h.invoke_at(t, "c", op(None, None, None, None));
        h.ok(id, "c", op(Some(Admission::Admitted), Some(t), Some(count), None));
    }

    fn deny(h: &History, t: u64, count: u64, retry: u64) {
        let id = h.invoke_at(t, "c", op(None, None, None, None));
        let a = Admission::Denied { retry_after_ms: Some(retry) };
        let mut o = op(Some(a), Some(t), Some(count), None);
        if let RateLimitOp::RateLimit { remaining, .. } = &mut o {
            *remaining = None;
        }
        h.ok(id, "c", o);
    }

    fn unknown(h: &History, t: u64) {
        let id = h.invoke_at(t, "c", op(None, None, None, None));
        h.info(id, "c", op(None, None, None, None));
    }

    /// A denial at `t` by a limiter whose limit is `limit` on the same key.
    fn deny_with_limit(h: &History, t: u64, limit: u64, count: u64, retry: u64) {
        let id = h.invoke_at(t, "c", op(None, None, None, None));
        let a = Admission::Denied { retry_after_ms: Some(retry) };
        let mut o = op(Some(a), Some(t), Some(count), None);
        if let RateLimitOp::RateLimit { remaining, limit: l, .. } = &mut o {
            *remaining = None;
            *l = limit;
        }
        h.ok(id, "c", o);
    }

    #[test]
    fn a_lowered_limit_waits_for_the_entry_that_brings_the_window_under_it() {
        // Limit 3 fills the key at 10, 20, 30; a limit-1 limiter at 40 sees
        // 3 entries: under its limit once all three have left, at 30 + 100.
        let run = |retry: u64| {
            let h = History::new();
            admit(&h, 10, 1);
            admit(&h, 20, 2);
            admit(&h, 30, 3);
            deny_with_limit(&h, 40, 1, 3, retry);
            check(&h.events(), &ran(&h), LOG).violations
        };
        // Sequential: the replay judges it, with each decision's own limit.
        assert_eq!(run(90), vec![]);
        let v = run(70); // from the oldest entry
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("retry-after 90ms"), "{v:?}");
    }

    #[test]
    fn a_correct_log_history_passes() {
        // 3 per 100ms: admissions at 10, 20, 20; denied at 50 (the one at
        // 10 leaves at 110: retry 60); denied at 109 (retry 1); admitted at
        // 110 (10 left), denied at 111 (the 20s leave at 120).
        let h = History::new();
        admit(&h, 10, 1);
        admit(&h, 20, 2);
        admit(&h, 20, 3);
        deny(&h, 50, 3, 60);
        deny(&h, 109, 3, 1);
        admit(&h, 110, 3);
        deny(&h, 111, 3, 9);
        let r = check(&h.events(), &ran(&h), LOG);
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.exact_retry, 3);
    }

    #[test]
    fn a_wrong_denial_fails() {
        // Denied at 110 although the admission at 10 has left (10 + 100).
        let h = History::new();
        admit(&h, 10, 1);
        admit(&h, 20, 2);
        admit(&h, 30, 3);
        deny(&h, 110, 3, 1);
        let r = check(&h.events(), &ran(&h), LOG);
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
        assert!(r.violations[0].detail.contains("denial at 110ms"), "{:?}", r.violations);
    }

    #[test]
    fn a_wrong_retry_after_fails_and_a_wrong_count_fails() {
        let h = History::new();
        admit(&h, 10, 1);
        admit(&h, 20, 2);
        admit(&h, 30, 3);
        deny(&h, 50, 3, 61); // off by one: must be 60
        let r = check(&h.events(), &ran(&h), LOG);
        // One request at a time: replayed exactly.
        assert!(r.violations[0].detail.contains("retry-after 60ms"), "{:?}", r.violations);

        let h = History::new();
        admit(&h, 10, 1);
        admit(&h, 20, 1); // must be 2
        assert_eq!(check(&h.events(), &ran(&h), LOG).violations.len(), 1);
    }

    #[test]
    fn unknown_outcomes_widen_but_do_not_convict() {
        // An unknown request at 15 may have been admitted: the count at 20
        // may be 2 or 3, and the denial's retry-after is not pinned down.
        let h = History::new();
        admit(&h, 10, 1);
        unknown(&h, 15);
        admit(&h, 20, 3);
        deny(&h, 30, 3, 70);
        let r = check(
            &h.events(),
            &ran(&h),
            Config { algorithm: Algorithm::Log, last_heal_ms: 0, drain_ms: 1000, epoch_ms: 0 },
        );
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.exact_retry, 0);
        // Without the unknown request the same counts are convicted.
        let h = History::new();
        admit(&h, 10, 1);
        admit(&h, 20, 3);
        assert_eq!(check(&h.events(), &ran(&h), LOG).violations.len(), 1);
    }

    #[test]
    fn counter_recomputation_both_ways() {
        // 3 per 100ms, epoch 0: buckets [0,100), [100,200).
        let cfg = Config { algorithm: Algorithm::Counter { epoch_ms: 0 }, last_heal_ms: 0, drain_ms: 0, epoch_ms: 0 };
        let h = History::new();
        admit(&h, 90, 1);
        admit(&h, 95, 2);
        admit(&h, 99, 3);
        // At 110 (e = 10): p = 3, weighted 270 > (3-0-1)*100: denied,
        // estimate ceil(2.7) = 3, retry: 100 - 200/3 (66) - 10 = 24.
        deny(&h, 110, 3, 24);
        // At 134 (e = 34): weighted 198 <= 200: admitted, count ceil(1.98)+0+1 = 3.
        admit(&h, 134, 3);
        assert_eq!(check(&h.events(), &ran(&h), cfg).violations, vec![]);

        let h = History::new();
        admit(&h, 90, 1);
        admit(&h, 95, 2);
        admit(&h, 99, 3);
        deny(&h, 134, 3, 1); // must have been admitted
        let r = check(&h.events(), &ran(&h), cfg);
        assert_eq!(r.violations.len(), 1);
        assert!(r.violations[0].detail.contains("must admit"), "{:?}", r.violations);
    }
}
