//! What the election family records in the history: [`ElectionOp`], its
//! operation type (a node's role changes and what its accessors, callbacks
//! and `subscribe()` receiver said), and the values only it carries
//! ([`Role`], [`Published`]).
//!
//! The variants were the history's own until the election owned them; they
//! keep their names, fields, field order and serde attributes, so a
//! history's JSON (and its digest) reads as it did.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Millis, Operation};

/// One election operation or observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum ElectionOp {
    /// Observation: an election node's role changed.
    Role {
        /// Election name.
        election: String,
        /// New role.
        role: Role,
        /// Epoch it holds (leader) or last held; `None` without epochs.
        epoch: Option<u64>,
        /// For a leader: the instant (simulated ms) until which it trusts its
        /// lease (its local deadline); a new `Leader` event with the same
        /// epoch moves it (a confirmed renewal). `None` = until it says
        /// otherwise (renew-tick demotion, naive elections).
        deadline: Option<Millis>,
    },
    /// Observation: what an `Election`'s accessors said, recorded whenever
    /// one of them changed (polled every millisecond); judged by
    /// `election-views`.
    ElectionView {
        /// `Election::name()`.
        name: String,
        /// `Election::is_leader()`.
        is_leader: bool,
        /// `Election::epoch()`.
        epoch: Option<u64>,
        /// `Election::leader_lease()`: `(epoch, sent_at µs, local_deadline µs)`.
        lease: Option<(u64, u64, u64)>,
        /// `Election::leadership()`.
        published: Published,
        /// What that `Leadership` value's own accessors say:
        /// `(is_leader(), epoch(), last_demotion()'s epoch)`.
        #[serde(default)]
        accessors: (bool, Option<u64>, Option<u64>),
        /// Why the last term ended (`last_demotion()`'s reason, as the
        /// `demoted-*` situation suffix: `deadline-reached`, `lease-lost`…).
        #[serde(default)]
        demotion_reason: Option<String>,
    },
    /// Observation: an `Election::subscribe()` receiver disagreed with
    /// `Election::leadership()` (it holds another role, or was not notified
    /// of a change since the workload last read it); recorded only then,
    /// and judged by `election-views`.
    SubscriberView {
        /// What `leadership()` publishes.
        published: Published,
        /// What the receiver holds.
        received: Published,
        /// `has_changed()` before the receiver was read.
        notified: bool,
    },
    /// Observation: the writer asked `Election::epoch()` before a write
    /// and got `epoch` (judged by `election-views`: `Some` only before the
    /// lease's deadline).
    EpochCheck {
        /// The answer.
        epoch: Option<u64>,
    },
    /// Observation: an `on_elected` (`elected`) or `on_demoted` callback ran
    /// for `epoch`; judged by `election-views`.
    ElectionCallback {
        /// `on_elected` rather than `on_demoted`.
        elected: bool,
        /// The epoch it was called with.
        epoch: u64,
        /// `on_demoted` for `DemotionReason::DeadlineReached`.
        #[serde(default)]
        deadline_reached: bool,
    },
    /// Observation: what an `Election` reports of its configuration
    /// (recorded once, at build); judged by `election-views`.
    ElectionConfig {
        /// `Election::name()`.
        name: String,
        /// `Election::lease_ttl()`, ms.
        lease_ms: u64,
        /// `Election::renew_interval()`, ms.
        renew_ms: u64,
        /// `Election::campaign_interval()`, ms.
        campaign_ms: u64,
        /// `Election::demotion()`, as `Debug` prints it.
        demotion: String,
    },
}

/// An election node's belief about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Role {
    /// It believes it leads (and may act on it).
    Leader,
    /// It believes it does not lead.
    Follower,
    /// It left the election on purpose (`stop()`), releasing its lease.
    Resigned,
}

/// `Election::leadership()`, as an `ElectionView` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Published {
    /// `Leadership::Leader`.
    Leader {
        /// Its epoch.
        epoch: u64,
        /// `elected_at`, simulated ms.
        elected_at_ms: Millis,
    },
    /// `Leadership::Follower`, with the epoch of its last demotion.
    Follower {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
    /// `Leadership::Stopped`, with the epoch of its last demotion.
    Stopped {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
}

impl Operation for ElectionOp {
    fn verb(&self) -> &'static str {
        match self {
            ElectionOp::Role { .. } => "role",
            ElectionOp::ElectionView { .. } => "election-view",
            ElectionOp::SubscriberView { .. } => "subscriber-view",
            ElectionOp::EpochCheck { .. } => "epoch-check",
            ElectionOp::ElectionCallback { .. } => "election-callback",
            ElectionOp::ElectionConfig { .. } => "election-config",
        }
    }
}

/// A value, or `?` when unknown (as the history's other operations print it).
fn opt<T: fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "?".to_string(),
    }
}

impl fmt::Display for ElectionOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElectionOp::Role { election, role, epoch, deadline } => {
                write!(f, "{election}: {role:?} epoch={}", opt(epoch))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            ElectionOp::ElectionView { name, is_leader, epoch, lease, published, .. } => write!(
                f,
                "election-view {name} is_leader={is_leader} epoch={} lease={lease:?} published={published:?}",
                opt(epoch)
            ),
            ElectionOp::EpochCheck { epoch } => write!(f, "epoch() -> {}", opt(epoch)),
            ElectionOp::SubscriberView { published, received, notified } => {
                write!(f, "subscribe() holds {received:?} (notified: {notified}), leadership() is {published:?}")
            }
            ElectionOp::ElectionCallback { elected, epoch, .. } => {
                write!(f, "{} epoch={epoch}", if *elected { "on_elected" } else { "on_demoted" })
            }
            ElectionOp::ElectionConfig { name, lease_ms, renew_ms, campaign_ms, demotion } => write!(
                f,
                "election-config {name} lease={lease_ms}ms renew={renew_ms}ms campaign={campaign_ms}ms demotion={demotion}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, Op};

    #[test]
    fn an_election_op_reads_and_serialises_as_the_history_variant_did() {
        let role = ElectionOp::Role { election: "e".into(), role: Role::Leader, epoch: Some(3), deadline: Some(400) };
        assert_eq!(role.to_string(), "e: Leader epoch=3 trusted-until=400ms");
        assert_eq!(Op::from(role.clone()).verb(), "role");
        let h = History::new();
        h.observe_at(1, "n", role.clone());
        let event = &h.events()[0];
        assert_eq!(event.op.family::<ElectionOp>(), Some(&role));
        let json = serde_json::to_string(event).unwrap();
        assert!(json.contains(r#""op":{"Role":{"election":"e","role":"Leader","epoch":3,"deadline":400}}"#), "{json}");
        let config = ElectionOp::ElectionConfig {
            name: "e".into(),
            lease_ms: 400,
            renew_ms: 100,
            campaign_ms: 25,
            demotion: "AtDeadline".into(),
        };
        assert_eq!(config.to_string(), "election-config e lease=400ms renew=100ms campaign=25ms demotion=AtDeadline");
        assert_eq!(ElectionOp::EpochCheck { epoch: None }.to_string(), "epoch() -> ?");
    }
}
