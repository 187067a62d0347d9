//! Judging one decision against every admission that may have been
//! executed before it, the general case (concurrent requests, unknown
//! outcomes, keys that may have expired early), by the sliding log's and
//! the sliding counter's rules.

use super::{describe, Algorithm, Config, Decided, ExactWindows, Key};
use crate::history::Millis;

/// The general judgement (concurrent requests, unknown outcomes): the key's
/// decisions in execution order, each judged against the admissions that
/// may precede it, counted from the start or from any decision before
/// which the key may have expired. The first decision no such count
/// justifies, if any.
pub(super) fn first_unjustified(k: &mut Key, config: Config, report: &mut ExactWindows) -> Option<(Millis, String)> {
    k.decided.sort_by_key(|d| (d.t, !d.admitted, d.count));
    report.decisions += k.decided.len() as u64;
    let (resets, lenient) = possible_expiries(k, config.algorithm);
    for j in 0..k.decided.len() {
        if lenient.contains(&k.decided[j].t) {
            continue;
        }
        let mut first_error = None;
        let mut exact = false;
        for from in core::iter::once(0).chain(resets.iter().copied().filter(|&i| i <= j)) {
            let judged = match config.algorithm {
                Algorithm::Log => judge_log(k, j, from),
                Algorithm::Counter { epoch_ms } => judge_counter(k, j, from, epoch_ms),
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
            return Some((d.t, format!("{}: {why}", describe(d))));
        }
    }
    None
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
pub(super) fn counter_decision(max: u64, w: u64, c: u64, p: u64, e: u64) -> (bool, u64, Option<u64>) {
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
