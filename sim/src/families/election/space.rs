//! The election plan space: what the seeds and the property search may
//! draw (nodes, timings, the faults the workload aims at the leader), and
//! the nemesis faults the seeds add, as the family's one generator.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use super::plan::{ElectionPlan, LeaderStall, SLOWED_SPAN_MS};
use super::{CAMPAIGN_MS, LEASE_MS, LIVENESS_SLACK_MS, RENEW_MS};
use crate::fault_space::FaultSpace;
use crate::nemesis::{Fault, FaultClass};

/// The seeds' run length (ms); its last [`QUIET_TAIL_MS`] are a quiet
/// tail (no fault, no stall, no `stop()` starts there) in which
/// `liveness` is judged.
pub(super) const SEED_LENGTH_MS: u64 = 3500;
/// See [`SEED_LENGTH_MS`].
pub(super) const QUIET_TAIL_MS: u64 = 700;

/// What election plans may be drawn from (ranges inclusive; each shrinks
/// towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ElectionSpace {
    /// Nodes.
    pub nodes: (u32, u32),
    /// Lease (ms).
    pub lease_ms: (u64, u64),
    /// Renew every lease / this (the builder refuses more than half of the
    /// lease less its drift allowance).
    pub renew_div: (u64, u64),
    /// Campaign interval (ms).
    pub campaign_ms: (u64, u64),
    /// How long nodes run (ms).
    pub length_ms: (u64, u64),
    /// What the workload does to the leader.
    pub leader: LeaderFaults,
    /// Faults every plan gets (the cut and failover of `election-failover`).
    pub placed: Vec<Fault>,
}

/// The faults an election workload injects into its leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaderFaults {
    /// Maybe a stall (at 200–2000 ms for 100–2000 ms) and maybe a `stop()`
    /// (at 300–3000 ms): each shrinks to none.
    Maybe,
    /// Exactly this stall, nothing else (`election-failover`: a change of
    /// leader inside the replication cut, so that an epoch is issued that
    /// the replica never sees).
    Stall(LeaderStall),
    /// The seeds' shape: a stall at 300–1200 ms for 500–1500 ms, a
    /// `stop()` after it when there is room before the quiet tail, and the
    /// edges (a stall between a write and its reply on half the plans,
    /// epochs from just below 2^53, a slow first campaign, slow renewals
    /// on a quarter each; the slow renewals placed clear of the stall and
    /// the `stop()`, which the plan drops when there is no room for both),
    /// and on `election` half the `stop()`s have the reply to their
    /// hand-back held 30–150 ms at the server.
    Seeded {
        /// The last this-many ms of the run see no fault start.
        quiet_tail_ms: u64,
    },
}

impl ElectionSpace {
    /// The property search's space: 1–4 nodes, lease 200–800 ms, renew a
    /// third to a fifth of it, 1.5–3.5 s, a maybe-stall and maybe-`stop()`.
    pub(crate) fn search() -> ElectionSpace {
        ElectionSpace {
            nodes: (1, 4),
            lease_ms: (200, 800),
            renew_div: (3, 5),
            campaign_ms: (10, 50),
            length_ms: (1500, 3500),
            leader: LeaderFaults::Maybe,
            placed: Vec::new(),
        }
    }

    /// What every election variant's seeds draw: three nodes with the
    /// reference's settings (lease 400, renew 100, campaign 25 ms) over
    /// 3.5 s, and the seeded leader faults.
    pub(crate) fn seeds() -> ElectionSpace {
        ElectionSpace {
            nodes: (3, 3),
            lease_ms: (LEASE_MS, LEASE_MS),
            renew_div: (LEASE_MS / RENEW_MS, LEASE_MS / RENEW_MS),
            campaign_ms: (CAMPAIGN_MS, CAMPAIGN_MS),
            length_ms: (SEED_LENGTH_MS, SEED_LENGTH_MS),
            leader: LeaderFaults::Seeded { quiet_tail_ms: QUIET_TAIL_MS },
            placed: Vec::new(),
        }
    }

    /// The strategy (the family's one generator).
    pub(crate) fn plans(&self) -> BoxedStrategy<(ElectionPlan, Vec<Fault>)> {
        let base = |nodes, lease_ms: u64, renew_div: u64, campaign_ms, length_ms| ElectionPlan {
            nodes,
            lease_ms,
            renew_ms: lease_ms / renew_div.max(1),
            campaign_ms,
            length_ms,
            stagger_ms: 0,
            stall: None,
            stall_mid_write: false,
            epoch_base: None,
            stop_at: None,
            slow_first_campaign: false,
            slow_renewals: None,
        };
        let (nodes, lease, div, campaign, length) = (
            self.nodes.0..=self.nodes.1,
            self.lease_ms.0..=self.lease_ms.1,
            self.renew_div.0..=self.renew_div.1,
            self.campaign_ms.0..=self.campaign_ms.1,
            self.length_ms.0..=self.length_ms.1,
        );
        let placed = self.placed.clone();
        match self.leader {
            LeaderFaults::Maybe | LeaderFaults::Stall(_) => {
                let (stall, stop) = match self.leader {
                    LeaderFaults::Maybe => (
                        proptest::option::of((200..=2000u64, 100..=2000u64))
                            .prop_map(|s| s.map(|(at, ms)| LeaderStall { at, ms }))
                            .boxed(),
                        proptest::option::of(300..=3000u64).boxed(),
                    ),
                    LeaderFaults::Stall(stall) => (Just(Some(stall)).boxed(), Just(None).boxed()),
                    _ => (Just(None).boxed(), Just(None).boxed()),
                };
                (nodes, stall, stop, lease, div, campaign, length)
                    .prop_map(move |(nodes, stall, stop_at, lease_ms, div, campaign_ms, length_ms)| {
                        (
                            ElectionPlan { stall, stop_at, ..base(nodes, lease_ms, div, campaign_ms, length_ms) },
                            placed.clone(),
                        )
                    })
                    .boxed()
            }
            LeaderFaults::Seeded { quiet_tail_ms } => {
                let shape = (
                    300..=1200u64,
                    500..=1500u64,
                    0..=1000u64,
                    any::<bool>(),
                    proptest::bool::weighted(0.25),
                    proptest::bool::weighted(0.25),
                    proptest::option::weighted(0.25, 0..=1000u64),
                );
                ((nodes, lease, div, campaign, length), shape)
                    .prop_map(move |((nodes, lease_ms, div, campaign_ms, length_ms), shape)| {
                        let (stall_at, stall_for, stop_frac, stall_mid_write, high_epochs, slow_campaign, slow) = shape;
                        let last_start = length_ms.saturating_sub(quiet_tail_ms);
                        // A long stall late in the run leaves no room for a
                        // hand-over after it: then the run has none.
                        let (stop_lo, stop_hi) = (stall_at + stall_for + 100, last_start.saturating_sub(100));
                        let stop_at = (stop_lo <= stop_hi).then(|| stop_lo + (stop_hi - stop_lo) * stop_frac / 1000);
                        let slowed_hi = last_start.saturating_sub(SLOWED_SPAN_MS).max(300);
                        // Slow renewals go where neither the stall nor the
                        // stop() touches them when there is such room: the
                        // hand-back after them is judged only in a quiet
                        // span. A plan with them and no room for both keeps
                        // the slow renewals and loses its stop().
                        let stall_span = (stall_at, stall_at + stall_for);
                        let slowed = slow.map(|frac| {
                            let with_stop = [Some(stall_span), stop_at.map(|s| (s, s + STOP_SPAN_MS))];
                            match quiet_start(300, slowed_hi, &with_stop, frac, SLOWED_NEED_MS) {
                                Some(at) => (at, stop_at),
                                None => match quiet_start(300, slowed_hi, &[Some(stall_span)], frac, SLOWED_NEED_MS) {
                                    Some(at) => (at, None),
                                    None => (300 + (slowed_hi - 300) * frac / 1000, stop_at),
                                },
                            }
                        });
                        let stop_at = slowed.map_or(stop_at, |(_, stop_at)| stop_at);
                        let plan = ElectionPlan {
                            stall: Some(LeaderStall { at: stall_at, ms: stall_for }),
                            stop_at,
                            stall_mid_write,
                            // Epochs just below 2^53, where a token passed
                            // through a Lua number (a double) would repeat.
                            epoch_base: high_epochs.then_some((1u64 << 53) - 2),
                            slow_first_campaign: slow_campaign,
                            slow_renewals: slowed.map(|(at, _)| at),
                            ..base(nodes, lease_ms, div, campaign_ms, length_ms)
                        };
                        (plan, placed.clone())
                    })
                    .boxed()
            }
        }
    }
}

/// How long a `stop()` disturbs the run for the slow renewals' placement:
/// a held reply to its hand-back (150 ms at most), and a hand-over.
pub(super) const STOP_SPAN_MS: u64 = 150 + CAMPAIGN_MS + LIVENESS_SLACK_MS;

/// What the slow renewals' placement keeps clear: the held requests and
/// the hand-over after them.
const SLOWED_NEED_MS: u64 = SLOWED_SPAN_MS + CAMPAIGN_MS + LIVENESS_SLACK_MS;

/// A start in `lo..=hi` for a span of `need` ms (the held requests and the
/// hand-over after them) that overlaps none of `busy`, picked at `frac` per
/// mille of the free room; `None` when there is no room.
pub(super) fn quiet_start(lo: u64, hi: u64, busy: &[Option<(u64, u64)>], frac: u64, need: u64) -> Option<u64> {
    // A start at `a` is disturbed by a busy span (s, e) if
    // a <= e and a + need >= s, i.e. a in [s - need, e].
    // An empty range (a short run, a long span) has no room at all.
    let mut free = if lo <= hi { vec![(lo, hi)] } else { Vec::new() };
    for &(s, e) in busy.iter().flatten() {
        let (cut_lo, cut_hi) = (s.saturating_sub(need), e);
        free = free
            .into_iter()
            .flat_map(|(a, b)| {
                let left = (a < cut_lo).then(|| (a, b.min(cut_lo - 1)));
                let right = (b > cut_hi).then(|| (a.max(cut_hi + 1), b));
                [left, right].into_iter().flatten()
            })
            .filter(|(a, b)| a <= b)
            .collect();
    }
    let room: u64 = free.iter().map(|(a, b)| b - a + 1).sum();
    if room == 0 {
        return None;
    }
    let mut pick = (room - 1) * frac.min(1000) / 1000;
    for (a, b) in free {
        if pick <= b - a {
            return Some(a + pick);
        }
        pick -= b - a + 1;
    }
    None
}

/// The nemesis faults every election variant's seeds draw: up to two
/// client-side faults or server pauses of 50–800 ms, from 10 % of the run
/// to its quiet tail, a swarm subset per seed.
pub(crate) fn seed_faults() -> FaultSpace {
    let classes = [
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    FaultSpace { count: (0, 2), duration_ms: (50, 800), ..FaultSpace::new(&classes, 2) }
        .within(SEED_LENGTH_MS / 10, SEED_LENGTH_MS - QUIET_TAIL_MS)
        .swarm()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEED: u64 = SLOWED_NEED_MS;

    #[test]
    fn quiet_start_avoids_every_busy_span() {
        let busy = [Some((1000, 1500)), Some((2500, 2500 + STOP_SPAN_MS)), None];
        for frac in [0, 1, 250, 500, 999, 1000] {
            let at = quiet_start(300, 3000, &busy, frac, NEED).expect("there is room");
            assert!((300..=3000).contains(&at), "{at} out of range");
            for (s, e) in busy.iter().flatten() {
                assert!(at > *e || at + NEED < *s, "start {at} (frac {frac}) touches ({s}, {e})");
            }
        }
        // The first and the last free instants are reachable.
        assert_eq!(quiet_start(300, 3000, &busy, 0, NEED), Some(1501));
        assert_eq!(quiet_start(300, 3000, &busy, 1000, NEED), Some(3000));
    }

    #[test]
    fn quiet_start_is_none_without_room() {
        assert_eq!(quiet_start(300, 1000, &[Some((200, 1200))], 500, NEED), None);
        assert_eq!(quiet_start(300, 1000, &[Some((300 + NEED, 1200))], 0, NEED), None);
        assert_eq!(quiet_start(300, 1000, &[Some((300 + NEED + 1, 1200))], 0, NEED), Some(300));
        // A run too short for the span: `hi` below `lo`.
        assert_eq!(quiet_start(300, 120, &[], 500, NEED), None);
        assert_eq!(quiet_start(300, 299, &[None], 0, NEED), None);
    }
}
