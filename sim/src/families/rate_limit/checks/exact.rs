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

use std::collections::BTreeMap;

use crate::bridge::Execution;
use crate::checker::{Violation, RATE_LIMIT_EXACT};
use crate::history::{Admission, DecisionAccessors, Event, EventKind, Millis, Op};

/// Which algorithm the decisions must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
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
pub struct Config {
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
pub struct Report {
    /// Unjustified decisions (at most one per key).
    pub violations: Vec<Violation>,
    /// Decisions judged.
    pub decisions: u64,
    /// Denials whose `retry_after` was checked exactly.
    pub exact_retry: u64,
}

#[derive(Debug, Clone)]
struct Decided {
    t: Millis,
    admitted: bool,
    count: u64,
    remaining: Option<u64>,
    retry: Option<u64>,
    invoke: Millis,
    done: Millis,
    pinned: bool,
    /// The instant a `check_at` pinned, if any.
    pinned_at: Option<Millis>,
    process: String,
    /// The limit of the limiter that decided: a key may be shared by
    /// limiters of different limits (a limit lowered for a key in use).
    limit: u64,
}

#[derive(Debug, Default)]
struct Key {
    window: u64,
    decided: Vec<Decided>,
    /// Possible execution interval `[lo, hi]` of each unknown outcome.
    unknown: Vec<(Millis, Millis)>,
}

/// Checks every limiter key in `events`; `executions` is the limiter
/// node's execution log (see the module docs).
pub fn check(events: &[Event], executions: &[Execution], config: Config) -> Report {
    let mut invoked: BTreeMap<u64, (Millis, Option<Millis>, String)> = BTreeMap::new();
    let mut keys: BTreeMap<String, Key> = BTreeMap::new();
    let unknown_interval = |invoke: Millis, pinned: Option<Millis>| match pinned {
        Some(p) => (p, p),
        None => (invoke, invoke.max(config.last_heal_ms) + config.drain_ms),
    };
    for e in events {
        let Op::RateLimit { key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms, .. } = &e.op
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
    let mut report = Report::default();
    for (name, mut k) in keys {
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
            let ran = executions
                .iter()
                .filter(|x| *x.client == *process && x.command.starts_with("EVAL") && x.server_unix_ms.saturating_sub(config.epoch_ms) == t)
                .count() as u64;
            (ran < n).then(|| {
                (t, format!("{n} decisions of {process} report the server's clock at {t}ms, but only {ran} of its scripts executed then"))
            })
        });
        // A `check_at` decides at the instant it was given, nothing else.
        let pinned_wrong = k.decided.iter().find_map(|d| {
            let p = d.pinned_at?;
            (d.t != p).then(|| (d.t, format!("{}: check_at was given {p}ms but decided at {}ms", describe(d), d.t)))
        });
        let clock = pinned_wrong.or(over).or_else(|| k.decided.iter().filter(|d| !d.pinned).find_map(|d| {
            let mut ran = executions
                .iter()
                .filter(|x| *x.client == *d.process && x.command.starts_with("EVAL") && (d.invoke..=d.done).contains(&x.sim_ms))
                .map(|x| x.server_unix_ms.saturating_sub(config.epoch_ms));
            if ran.clone().any(|t| t == d.t) {
                return None;
            }
            let clocks: Vec<String> = ran.by_ref().take(4).map(|t| format!("{t}ms")).collect();
            Some((d.t, format!(
                "{}: it reports the server's clock at {}ms, but the scripts {} ran between its invoke and reply executed at [{}]",
                describe(d),
                d.t,
                d.process,
                clocks.join(", ")
            )))
        }));
        if let Some((at, why)) = clock {
            report.decisions += k.decided.len() as u64;
            report.violations.push(Violation::new(RATE_LIMIT_EXACT, Some(at), format!("{name}: {why}")));
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
        k.decided.sort_by_key(|d| (d.t, !d.admitted, d.count));
        report.decisions += k.decided.len() as u64;
        let (resets, lenient) = possible_expiries(&k, config.algorithm);
        let mut found = None;
        for j in 0..k.decided.len() {
            if found.is_some() {
                break;
            }
            if lenient.contains(&k.decided[j].t) {
                continue;
            }
            let mut first_error = None;
            let mut exact = false;
            for from in core::iter::once(0).chain(resets.iter().copied().filter(|&i| i <= j)) {
                let judged = match config.algorithm {
                    Algorithm::Log => judge_log(&k, j, from),
                    Algorithm::Counter { epoch_ms } => judge_counter(&k, j, from, epoch_ms),
                };
                match judged {
                    Ok(e) => {
                        exact = e;
                        first_error = None;
                        break;
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            report.exact_retry += u64::from(exact);
            if let Some(why) = first_error {
                let d = &k.decided[j];
                found = Some((d.t, format!("{}: {why}", describe(d))));
                break;
            }
        }
        if let Some((at, why)) = found {
            report.violations.push(Violation::new(RATE_LIMIT_EXACT, Some(at), format!("{name}: {why}")));
        }
    }
    report
}

/// How many stale entries one sliding-log call trims (`TRIM_BATCH` in
/// `scripts/sliding_log.lua`): which entries survive matters once instants
/// go backwards.
const LOG_TRIM_BATCH: usize = 64;

/// What [`replay`] could do with a key.
enum Replayed {
    /// Replayed in send order: the first decision that differs, if any.
    Exactly(Result<(), (Millis, String)>),
    /// Its instants go backwards but it cannot be replayed: not judged.
    Unjudged,
    /// Concurrent requests (or unknown outcomes) with instants in order:
    /// for the general judgement.
    NotSequential,
}

/// Replays a key whose requests ran one at a time (module docs).
fn replay(k: &Key, config: Config) -> Replayed {
    let mut order: Vec<&Decided> = k.decided.iter().collect();
    order.sort_by_key(|d| (d.invoke, d.done));
    let backwards = order.windows(2).any(|p| p[1].t < p[0].t);
    let sequential = k.unknown.is_empty()
        && order.windows(2).all(|p| p[0].done <= p[1].invoke)
        && order.first().zip(order.last()).is_some_and(|(a, b)| b.done - a.invoke < k.window);
    if !sequential {
        return if backwards { Replayed::Unjudged } else { Replayed::NotSequential };
    }
    let w = k.window;
    let mut log: Vec<Millis> = Vec::new();
    let mut buckets: Option<(u64, u64, u64)> = None;
    for d in order {
        let max = d.limit;
        let (admit, count, retry) = match config.algorithm {
            Algorithm::Log => {
                // Every entry not yet out of the window counts, "future"
                // ones (recorded by a clock ahead of this one) included.
                // Entries out of the window are trimmed, oldest first and at
                // most TRIM_BATCH per call, and a trimmed entry is gone for
                // an instant behind this one too.
                let mut stale = log.iter().filter(|&&a| a + w <= d.t).count();
                let trimmed = stale.min(LOG_TRIM_BATCH);
                log.drain(..trimmed);
                stale -= trimmed;
                let count = (log.len() - stale) as u64;
                if count < max {
                    log.push(d.t);
                    log.sort_unstable();
                    (true, count + 1, None)
                } else {
                    let blocking = log[stale + (count - max) as usize];
                    (false, count, Some(blocking + w - d.t))
                }
            }
            Algorithm::Counter { epoch_ms } => {
                let now = epoch_ms + d.t;
                let mut idx = now / w;
                let (mut c, mut p) = (0, 0);
                if let Some((i, sc, sp)) = buckets {
                    (c, p) = (sc, sp);
                    if idx == i + 1 {
                        (p, c) = (c, 0);
                    } else if idx > i + 1 {
                        (p, c) = (0, 0);
                    } else if idx < i {
                        // An instant behind the newest bucket counts in it.
                        idx = i;
                    }
                }
                let elapsed = now.saturating_sub(idx * w);
                let decided = counter_decision(max, w, c, p, elapsed);
                if decided.0 {
                    buckets = Some((idx, c + 1, p));
                }
                decided
            }
        };
        let remaining_ok = !d.admitted || d.remaining.is_none_or(|r| r == max.saturating_sub(d.count));
        if admit != d.admitted || count != d.count || (!admit && d.retry.is_some() && d.retry != retry) || !remaining_ok
        {
            let expected = if admit {
                format!("admit with count {count} (remaining {})", max.saturating_sub(count))
            } else {
                format!("deny with count {count} and retry-after {}ms", retry.unwrap_or_default())
            };
            return Replayed::Exactly(Err((
                d.t,
                format!("{}: replayed one request at a time in send order, the limiter must {expected}", describe(d)),
            )));
        }
    }
    Replayed::Exactly(Ok(()))
}

/// The instant from which a limiter key set by an admission at `p` holds
/// nothing that still counts: the log's window end `p + W`; the end of the
/// counter bucket after `p`'s.
fn useful_until(algorithm: Algorithm, w: u64, p: Millis) -> Millis {
    match algorithm {
        Algorithm::Log => p + w,
        Algorithm::Counter { epoch_ms } => ((epoch_ms + p) / w + 2) * w - epoch_ms,
    }
}

/// Where a pinned key may have expired early. Both limiters expire an idle
/// key on the server's *real* clock (`PEXPIRE` after each admission), which
/// for a `check_at` runs ahead of the pinned instant by the request's
/// delay: an admission pinned at `p` keeps its key until at least
/// [`useful_until`]`(p)` of real time, but a later request pinned at `q`
/// executes at up to its completion − 1 ms, so when `q` is before that
/// instant and its execution may be after it, the key (and every admission
/// it held) may be gone. Returns the indices of those decisions (each may
/// have started from an empty key) and the instants at which that happened
/// to a request with same-instant siblings (their counts cannot be ordered;
/// they are not judged).
fn possible_expiries(k: &Key, algorithm: Algorithm) -> (Vec<usize>, std::collections::BTreeSet<Millis>) {
    let mut resets = Vec::new();
    let mut lenient = std::collections::BTreeSet::new();
    for (j, d) in k.decided.iter().enumerate() {
        if !d.pinned {
            continue;
        }
        let Some(last) = k.decided.iter().filter(|a| a.admitted && executed_before(a, d)).map(|a| a.t).max() else {
            continue;
        };
        let until = useful_until(algorithm, k.window, last);
        if d.t < until && d.done > until + 1 {
            resets.push(j);
            if k.decided.iter().filter(|o| o.t == d.t).count() > 1 {
                lenient.insert(d.t);
            }
        }
    }
    (resets, lenient)
}

fn describe(d: &Decided) -> String {
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

/// Whether admission `a` was executed before decision `d` (module docs).
fn executed_before(a: &Decided, d: &Decided) -> bool {
    a.t < d.t || (a.t == d.t && (!d.admitted || a.count < d.count))
}

/// The definite admissions executed before decision `j`, from index `from`
/// on (the key may have expired before `from`), as their times.
fn admitted_before(k: &Key, j: usize, from: usize) -> impl Iterator<Item = Millis> + '_ {
    let d = &k.decided[j];
    k.decided[from..].iter().filter(move |a| a.admitted && executed_before(a, d)).map(|a| a.t)
}

/// Judges decision `j` by the sliding log, counting admissions from index
/// `from` on. `Ok(true)` if its retry-after was checked exactly.
fn judge_log(k: &Key, j: usize, from: usize) -> Result<bool, String> {
    let d = &k.decided[j];
    let (max, w) = (d.limit, k.window);
    // In the window (t − W, t]: a + W > t.
    let mut in_window: Vec<Millis> = admitted_before(k, j, from).filter(|&a| a + w > d.t).collect();
    in_window.sort_unstable();
    let definite = in_window.len() as u64;
    let unknown = k.unknown.iter().filter(|&&(ulo, uhi)| ulo <= d.t && uhi + w > d.t).count() as u64;
    let held = |n: u64| {
        format!(
            "the log held {n} admission(s) in ({}ms, {}ms]{}",
            d.t as i64 - w as i64,
            d.t,
            if unknown > 0 { format!(" and up to {unknown} of unknown outcome") } else { String::new() }
        )
    };
    if d.admitted {
        if k.decided.iter().any(|o| o.admitted && o.t == d.t && o.count == d.count && !core::ptr::eq(o, d)) {
            return Err(format!("another admission in the same millisecond reported the same count {}", d.count));
        }
        if d.count > max {
            return Err(format!("admitted over the limit of {max}"));
        }
        if d.count < definite + 1 || d.count > definite + 1 + unknown {
            return Err(format!(
                "{} before it, so its count must be {}",
                held(definite),
                if unknown > 0 {
                    format!("{}..={}", definite + 1, definite + 1 + unknown)
                } else {
                    (definite + 1).to_string()
                }
            ));
        }
        if let Some(r) = d.remaining {
            if r != max.saturating_sub(d.count) {
                return Err(format!("remaining {r}, but max − count = {}", max.saturating_sub(d.count)));
            }
        }
        return Ok(false);
    }
    if d.count < definite || d.count > definite + unknown {
        return Err(held(definite));
    }
    if d.count < max {
        return Err(format!("denied with only {} in the window, under the limit of {max}", d.count));
    }
    let Some(r) = d.retry else { return Ok(false) };
    if d.count == definite {
        // The window's contents are known exactly.
        let oldest_blocking = in_window[(d.count - max) as usize];
        let expected = oldest_blocking + w - d.t;
        if r != expected {
            return Err(format!(
                "retry-after must be {expected}ms: the admission at {oldest_blocking}ms leaves the window at {}ms",
                oldest_blocking + w
            ));
        }
        return Ok(true);
    }
    if r == 0 || r > w {
        return Err(format!("retry-after outside 1..={w}ms"));
    }
    Ok(false)
}

/// The counter's decision for `c`, `p` at `e` ms into a bucket of `w`:
/// `(admitted, count, retry)`.
fn counter_decision(max: u64, w: u64, c: u64, p: u64, e: u64) -> (bool, u64, Option<u64>) {
    let weighted = p * (w - e);
    let estimate = weighted.div_ceil(w) + c;
    if c < max && weighted <= (max - c - 1) * w {
        return (true, estimate + 1, None);
    }
    let retry = if c < max { w - ((max - c - 1) * w) / p - e } else { (w - e) + w - ((max - 1) * w) / c };
    (false, estimate, Some(retry))
}

/// Judges decision `j` by the sliding counter, counting admissions from
/// index `from` on. `Ok(true)` if its retry-after was checked exactly.
fn judge_counter(k: &Key, j: usize, from: usize, epoch_ms: u64) -> Result<bool, String> {
    let d = &k.decided[j];
    let (max, w) = (d.limit, k.window);
    let bucket = |t: Millis| (epoch_ms + t) / w;
    let i = bucket(d.t);
    let e = epoch_ms + d.t - i * w;
    let (mut c_def, mut p_def) = (0u64, 0u64);
    for a in admitted_before(k, j, from) {
        let b = bucket(a);
        if b == i {
            c_def += 1;
        } else if b + 1 == i {
            p_def += 1;
        }
    }
    let (mut uc, mut up) = (0u64, 0u64);
    for &(lo, hi) in &k.unknown {
        if lo > d.t {
            continue;
        }
        let (blo, bhi) = (bucket(lo), bucket(hi.min(d.t)));
        if blo <= i && i <= bhi {
            uc += 1;
        }
        if i >= 1 && blo < i && i - 1 <= bhi {
            up += 1;
        }
    }
    if d.admitted {
        if let Some(r) = d.remaining {
            if r != max.saturating_sub(d.count) {
                return Err(format!("remaining {r}, but max − count = {}", max.saturating_sub(d.count)));
            }
        }
    }
    for c in c_def..=c_def + uc {
        for p in p_def..=p_def + up {
            let (admit, count, retry) = counter_decision(max, w, c, p, e);
            if admit == d.admitted && count == d.count && (d.admitted || d.retry.is_none() || retry == d.retry) {
                return Ok(!d.admitted && uc == 0 && up == 0 && d.retry.is_some());
            }
        }
    }
    let (admit, count, retry) = counter_decision(max, w, c_def, p_def, e);
    Err(format!(
        "bucket {i} (elapsed {e}ms) held c={c_def}, previous p={p_def}{}: the counter must {} with count {count}{}",
        if uc + up > 0 { format!(" (+ up to {uc}/{up} of unknown outcome)") } else { String::new() },
        if admit { "admit" } else { "deny" },
        retry.map_or(String::new(), |r| format!(" and retry-after {r}ms"))
    ))
}

/// The `Decision`'s accessors agree with its variant: `is_allowed()` and
/// `is_denied()` say which it is, `remaining()` is the admission's remaining
/// (0 after a denial), `retry_after()` the denial's wait (`None` after an
/// admission), `count()` the count.
pub fn check_accessors(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Op::RateLimit { admission: Some(admission), count: Some(count), remaining, accessors: Some(a), .. } = &e.op
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
            .filter_map(|e| match &e.op {
                Op::RateLimit { server_ms: Some(t), pinned_ms: None, .. } if e.kind == EventKind::Ok => {
                    Some(Execution {
                        client: e.process.as_str().into(),
                        command: "EVALSHA".into(),
                        key: None,
                        server_unix_ms: *t,
                        sim_ms: e.time,
                        taken_ms: e.time,
                        held_ms: 0,
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

    fn op(admission: Option<Admission>, t: Option<u64>, count: Option<u64>, pinned: Option<u64>) -> Op {
        Op::RateLimit {
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
        if let Op::RateLimit { remaining, .. } = &mut o {
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
        if let Op::RateLimit { remaining, limit: l, .. } = &mut o {
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
