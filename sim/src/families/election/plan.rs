//! An election plan: one run of the family spelled out (nodes, timings,
//! and the faults the workload aims at whoever leads), for replay and
//! shrinking.

use serde::{Deserialize, Serialize};

use crate::history::Millis;

/// How long the two requests of [`ElectionPlan::slow_renewals`] wait.
pub(super) const SLOW_RENEWALS_MS: [u64; 2] = [200, 240];
/// The latest injection time of those, early enough that both held requests
/// (sent within a renewal interval of each other) have run before the quiet
/// tail, if the node is not frozen meanwhile.
pub(super) const SLOWED_SPAN_MS: u64 = 200 + 240 + 300;

/// Election workload: nodes campaigning for one election and writing a
/// resource while they lead (`families/election/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ElectionPlan {
    /// Election nodes.
    pub nodes: u32,
    /// Leader lease (ms).
    pub lease_ms: u64,
    /// Renewal interval (ms).
    pub renew_ms: u64,
    /// Campaign interval (ms).
    pub campaign_ms: u64,
    /// Actors return at this simulated time.
    pub length_ms: Millis,
    /// Node i starts campaigning at `i * stagger_ms`.
    pub stagger_ms: u64,
    /// The node leading at `at` freezes for `ms` (a GC pause).
    pub stall: Option<LeaderStall>,
    /// The stall lands between that leader's leadership check and its next
    /// write (a targeted fault: the write leaves with an ended term's epoch).
    #[serde(default)]
    pub stall_mid_write: bool,
    /// The election's fence counter starts at this value (`None`: absent,
    /// so the first epoch is 1). Seeds use 2^53 − 2, so epochs cross 2^53.
    #[serde(default)]
    pub epoch_base: Option<u64>,
    /// The node leading at this time calls `stop()` (a clean hand-over).
    pub stop_at: Option<Millis>,
    /// Every node freezes for a lease right after its first campaign is
    /// sent (a targeted fault: the winner sees its reply after its own
    /// deadline).
    #[serde(default)]
    pub slow_first_campaign: bool,
    /// The node leading at this time has its next two requests held at the
    /// server, 200 and then 240 ms (each inside the 250 ms response timeout):
    /// the second renewal, sent late because the first took so long, is
    /// answered after the lease's deadline (a targeted fault: the deadline
    /// race in the renewal, and `OnRenewTick` leading on past it).
    #[serde(default)]
    pub slow_renewals: Option<Millis>,
}

/// The node leading at `at` freezes for `ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LeaderStall {
    /// When (simulated ms).
    pub at: Millis,
    /// For how long (ms).
    pub ms: u64,
}

impl core::fmt::Display for ElectionPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} node(s), lease {}ms, renew {}ms, campaign {}ms, until {}ms",
            self.nodes, self.lease_ms, self.renew_ms, self.campaign_ms, self.length_ms
        )?;
        if self.stagger_ms > 0 {
            write!(f, ", node i starts at i*{}ms", self.stagger_ms)?;
        }
        if let Some(s) = self.stall {
            write!(f, "; the leader at {}ms stalls {}ms (workload fault)", s.at, s.ms)?;
        }
        if let Some(at) = self.stop_at {
            write!(f, "; the leader at {at}ms calls stop() (workload)")?;
        }
        Ok(())
    }
}
