//! What the workload did to its leaders (a stall, a `stop()`, held or
//! refused renewals), noted as it happened so that the measures and the
//! checks after the run know when and whom each fault hit.

/// What the workload did (for measurements after the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Marker {
    Stall {
        node: String,
        at: u64,
        duration: u64,
    },
    Stop {
        node: String,
        at: u64,
        /// How long the server held the reply to the hand-back (the lease's
        /// delete ran at once); 0 when it was not held.
        held_ms: u64,
    },
    /// [`ElectionPlan::slow_renewals`](super::ElectionPlan::slow_renewals) was injected at `at`; the held
    /// requests ran by `until` (from the bridge's execution log; the end of
    /// the run if one never went out).
    Slowed {
        at: u64,
        until: u64,
    },
    /// The renewal `node` sent next after `at` was held at the server past
    /// the response timeout (`renewal_timed_out_at`); by `until` the node
    /// must have stopped leading the term it led at `at`.
    TimedOut {
        node: String,
        at: u64,
        until: u64,
    },
    /// At `at` the lease key of `node` (leading then) was overwritten with
    /// another owner (`lease_key_taken_at`); by `until`
    /// its next renewal has been refused and its term must be over. The
    /// key is someone else's until `expires`: nobody leads before that.
    TakenAway {
        node: String,
        at: u64,
        until: u64,
        expires: u64,
    },
}

impl Marker {
    /// The span in which this workload fault disturbs the run (`None` for a
    /// clean `stop()`).
    pub(super) fn disturbs(&self) -> Option<(u64, u64)> {
        match self {
            Marker::Stall { at, duration, .. } => Some((*at, at + duration)),
            Marker::Slowed { at, until } | Marker::TimedOut { at, until, .. } => Some((*at, *until)),
            Marker::TakenAway { at, expires, .. } => Some((*at, *expires)),
            Marker::Stop { .. } => None,
        }
    }

    /// For a `stop()`: the node, and the instant its hand-over may start.
    /// A held reply may be that of a renewal in flight when stop() came,
    /// and the run loop sees stop() only after it: `held_ms` after `at`.
    pub(super) fn stop(&self) -> Option<(&str, u64)> {
        match self {
            Marker::Stop { node, at, held_ms } => Some((node.as_str(), at + held_ms)),
            Marker::Stall { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => None,
        }
    }
}
