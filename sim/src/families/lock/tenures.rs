//! The lock family's tenures: each lease from its acquire to its release
//! or loss, trusted until the holder's local deadline (the timeline's
//! bands; `checks::mutual_exclusion::holds` computes them).

use super::checks::mutual_exclusion;
use crate::history::Event;
use crate::timeline::Tenure;

/// Every lease held in `events`.
pub(super) fn of(events: &[Event]) -> Vec<Tenure> {
    mutual_exclusion::holds(events)
        .into_iter()
        .map(|h| {
            let token = h.token.map_or("no token".to_string(), |t| format!("token {t}"));
            let title = format!("{} held {} ({token}) from {} ms to {} ms", h.process, h.name, h.from, h.to);
            Tenure { process: h.process, from: h.from, trusted: h.trusted_until.clamp(h.from, h.to), to: h.to, title }
        })
        .collect()
}
