//! Replaying a key whose requests ran one at a time through the
//! algorithm's own state, decision by decision in send order: the one
//! judgement that holds when instants go backwards.

use super::judge::counter_decision;
use super::{describe, Algorithm, Config, Decided, Key};
use crate::history::Millis;

/// How many stale entries one sliding-log call trims (`TRIM_BATCH` in
/// `scripts/sliding_log.lua`): which entries survive matters once instants
/// go backwards.
const LOG_TRIM_BATCH: usize = 64;

/// What [`replay`] could do with a key.
pub(super) enum Replayed {
    /// Replayed in send order: the first decision that differs, if any.
    Exactly(Result<(), (Millis, String)>),
    /// Its instants go backwards but it cannot be replayed: not judged.
    Unjudged,
    /// Concurrent requests (or unknown outcomes) with instants in order:
    /// for the general judgement.
    NotSequential,
}

/// Replays a key whose requests ran one at a time (module docs).
pub(super) fn replay(k: &Key, config: Config) -> Replayed {
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
