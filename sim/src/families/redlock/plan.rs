//! A Redlock run spelled out (clients' starts, TTL, per-master timeouts)
//! and the space plans are drawn from: the shapes that aim the seeds at
//! each gate, the search's free shape, and the faults the seeds draw.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use super::{
    RedlockVariant, CLIENTS, CORRECT_LENGTH_MS, CORRECT_MASTER_TIMEOUTS_MS, LENGTH_MS, MASTERS, MASTER_TIMEOUT_MS,
    TTL_MS,
};
use crate::fault_space::FaultSpace;
use crate::history::Millis;
use crate::nemesis::{Fault, FaultClass, FaultKind, Target};

/// Redlock workload: clients contending for one Redlock over five masters
/// (`families/redlock/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RedlockPlan {
    /// When each client starts contending; one entry per client.
    pub starts: Vec<RedlockStart>,
    /// Lease TTL (ms).
    pub ttl_ms: u64,
    /// Per-master timeout of one acquire round (ms).
    pub master_timeout_ms: u64,
    /// Clients start no new attempt after this (ms).
    pub length_ms: Millis,
    /// Per-client override of `master_timeout_ms` (index = client); a
    /// client beyond the list uses `master_timeout_ms`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub master_timeouts_ms: Vec<u64>,
}

/// When a Redlock client starts contending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RedlockStart {
    /// At this simulated time.
    At(Millis),
    /// Once client-0 has been granted the lock (or at `latest`), plus `delay`.
    AfterFirstGrant {
        /// Delay after the grant (ms).
        delay: Millis,
        /// Start at this time at the latest (ms).
        latest: Millis,
    },
}

impl core::fmt::Display for RedlockPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} client(s) over {MASTERS} masters, ttl {}ms, master timeout {}ms, attempts until {}ms; starts:",
            self.starts.len(),
            self.ttl_ms,
            self.master_timeout_ms,
            self.length_ms
        )?;
        if !self.master_timeouts_ms.is_empty() {
            write!(f, " (per client: {:?}ms)", self.master_timeouts_ms)?;
        }
        for (i, s) in self.starts.iter().enumerate() {
            match s {
                RedlockStart::At(at) => write!(f, " client#{i} at {at}ms")?,
                RedlockStart::AfterFirstGrant { delay, latest } => {
                    write!(f, " client#{i} {delay}ms after client#0's first grant (by {latest}ms)")?
                }
            }
        }
        Ok(())
    }
}

/// What Redlock plans may be drawn from (ranges inclusive; each shrinks
/// towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedlockSpace {
    /// Clients.
    pub clients: (u32, u32),
    /// Lease TTL (ms).
    pub ttl_ms: (u64, u64),
    /// Per-master timeout (ms; at most the TTL).
    pub master_timeout_ms: (u64, u64),
    /// Per-client overrides of the per-master timeout.
    pub master_timeouts_ms: Vec<u64>,
    /// How long clients keep trying (ms).
    pub length_ms: (u64, u64),
    /// When clients start, and what the workload's shape places.
    pub shape: RedlockShape,
}

/// The shape of a Redlock plan: when its clients start and the faults the
/// shape places itself (on top of the nemesis's drawn faults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedlockShape {
    /// Every client starts at a drawn time in `start_ms`; nothing placed.
    Free {
        /// Start times (ms).
        start_ms: (u64, u64),
    },
    /// `redlock-no-validity`'s seeds: client-0 first, its links slow
    /// (100–130 ms each way) for 1.5 s, so that its rounds take most of
    /// the TTL; the others 0–40 ms after its first grant.
    SlowFirst,
    /// `redlock`'s seeds, aimed at each gate in turn. Phase 1 (0–1.48 s):
    /// either all of client-0's links are slow, or exactly one master
    /// answers it in 280–300 ms (with its near-TTL per-master timeout a
    /// round leaves a validity of a few ms, or none, and must be refused).
    /// Phase 2 (1.48–1.89 s): two masters become unreachable (a minority:
    /// whoever asks must still be granted), then three (a majority: every
    /// acquire and extend must be refused). Then the nemesis's faults and a
    /// quiet tail for the liveness check.
    Gates,
    /// `redlock-clock-jump`'s seeds: client-0 cannot reach masters 3 and 4
    /// while it acquires; once it holds 0–2, masters 0 and 1 jump forward
    /// past the TTL, and the others start.
    ClockJump,
}

impl RedlockSpace {
    /// The property search's space over 5 masters: 1–3 clients starting
    /// in the first 1.2 s, TTL 250–600 ms, master timeout 50–250 ms.
    pub(crate) fn search() -> RedlockSpace {
        RedlockSpace {
            clients: (1, 3),
            ttl_ms: (250, 600),
            master_timeout_ms: (50, 250),
            master_timeouts_ms: Vec::new(),
            length_ms: (1500, 3000),
            shape: RedlockShape::Free { start_ms: (0, 1200) },
        }
    }

    /// What `variant`'s seeds draw.
    pub(crate) fn seeds(variant: RedlockVariant) -> RedlockSpace {
        let fixed = |v| (v, v);
        let (length_ms, master_timeouts_ms, shape) = match variant {
            RedlockVariant::Correct => (CORRECT_LENGTH_MS, CORRECT_MASTER_TIMEOUTS_MS.to_vec(), RedlockShape::Gates),
            RedlockVariant::NoValidity => (LENGTH_MS, Vec::new(), RedlockShape::SlowFirst),
            RedlockVariant::ClockJump => (LENGTH_MS, Vec::new(), RedlockShape::ClockJump),
        };
        RedlockSpace {
            clients: (CLIENTS as u32, CLIENTS as u32),
            ttl_ms: fixed(TTL_MS),
            master_timeout_ms: fixed(MASTER_TIMEOUT_MS),
            master_timeouts_ms,
            length_ms: fixed(length_ms),
            shape,
        }
    }

    /// The strategy (the family's one generator).
    pub(crate) fn plans(&self) -> BoxedStrategy<(RedlockPlan, Vec<Fault>)> {
        let n = self.clients.0.max(1) as usize..=self.clients.1.max(1) as usize;
        let others = self.clients.1.max(1) as usize - 1;
        let starts_and_placed: BoxedStrategy<(Vec<RedlockStart>, Vec<Fault>)> = match self.shape {
            RedlockShape::Free { start_ms } => {
                vec((start_ms.0..=start_ms.1).prop_map(RedlockStart::At), n).prop_map(|s| (s, Vec::new())).boxed()
            }
            RedlockShape::SlowFirst => (100..=130u64, vec(0..=40u64, others))
                .prop_map(|(ms, delays)| {
                    let slow =
                        Fault { at: 0, duration: 1500, kind: FaultKind::Latency { ms }, target: Target::Client(0) };
                    (after_first(&delays), vec![slow])
                })
                .boxed(),
            RedlockShape::Gates => {
                let masters: Vec<u32> = (0..MASTERS as u32).collect();
                let phase1 = (any::<bool>(), 100..=130u64, 0..MASTERS as u32, 140..=150u64);
                let cut = |n| (proptest::sample::subsequence(masters.clone(), n), 150..=170u64, 5..=20u64);
                (phase1, 0..=50u64, cut(2), cut(3), vec(0..=40u64, others))
                    .prop_map(move |((all_slow, slow_ms, node, one_ms), offset, minority, majority, delays)| {
                        // Phase 1 ends before phase 2's first cut: a link's
                        // state has one switch.
                        let (target, ms) = if all_slow {
                            (Target::Client(0), slow_ms)
                        } else {
                            (Target::Link { client: 0, node }, one_ms)
                        };
                        let mut faults = vec![Fault { at: 0, duration: 1480, kind: FaultKind::Latency { ms }, target }];
                        let mut at = 1480 + offset;
                        for (nodes, duration, gap) in [minority, majority] {
                            for client in 0..CLIENTS as u32 {
                                for &node in &nodes {
                                    let target = Target::Link { client, node };
                                    faults.push(Fault { at, duration, kind: FaultKind::Partition, target });
                                }
                            }
                            at += duration + gap;
                        }
                        (after_first(&delays), faults)
                    })
                    .boxed()
            }
            RedlockShape::ClockJump => (400..=700u64, 60..=120u64, 100..=500u64, vec(5..=40u64, others))
                .prop_map(|(cut, jump_at, beyond, delays)| {
                    let offset_ms = (TTL_MS + beyond) as i64;
                    let mut faults = Vec::new();
                    for node in [3u32, 4] {
                        let target = Target::Link { client: 0, node };
                        faults.push(Fault { at: 0, duration: cut, kind: FaultKind::Partition, target });
                    }
                    for node in [0u32, 1] {
                        let kind = FaultKind::ClockStep { offset_ms };
                        faults.push(Fault { at: jump_at, duration: 1000, kind, target: Target::Node(node) });
                    }
                    // Client-0 goes first; the others after the jump.
                    let mut starts = vec![RedlockStart::At(0)];
                    starts.extend(delays.iter().map(|d| RedlockStart::At(jump_at + d)));
                    (starts, faults)
                })
                .boxed(),
        };
        let timeouts = self.master_timeouts_ms.clone();
        (
            starts_and_placed,
            self.ttl_ms.0..=self.ttl_ms.1,
            self.master_timeout_ms.0..=self.master_timeout_ms.1,
            self.length_ms.0..=self.length_ms.1,
        )
            .prop_map(move |((starts, placed), ttl_ms, master_timeout_ms, length_ms)| {
                let plan = RedlockPlan {
                    starts,
                    ttl_ms,
                    master_timeout_ms: master_timeout_ms.min(ttl_ms),
                    length_ms,
                    master_timeouts_ms: timeouts.clone(),
                };
                (plan, placed)
            })
            .boxed()
    }
}

/// Client-0 at 0, the others `delays` after its first grant (at 1.2 s at
/// the latest).
fn after_first(delays: &[u64]) -> Vec<RedlockStart> {
    let mut starts = vec![RedlockStart::At(0)];
    starts.extend(delays.iter().map(|&delay| RedlockStart::AfterFirstGrant { delay, latest: 1200 }));
    starts
}

/// The nemesis faults `variant`'s seeds draw (swarm subsets, single links
/// allowed): for `redlock`, up to two faults of 50–400 ms in 1.9–2.35 s,
/// after its gates' phases; for `redlock-no-validity`, up to two of
/// 50–600 ms after client-0's slow phase; none for `redlock-clock-jump`.
pub(crate) fn seed_faults(variant: RedlockVariant) -> FaultSpace {
    let mut classes = vec![
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    match variant {
        RedlockVariant::Correct => {
            classes.insert(1, FaultClass::PartitionOneWay);
            FaultSpace { count: (0, 2), duration_ms: (50, 400), links: true, ..FaultSpace::new(&classes, 2) }
                .within(1900, 2350)
                .swarm()
        }
        RedlockVariant::NoValidity => {
            FaultSpace { count: (0, 2), duration_ms: (50, 600), links: true, ..FaultSpace::new(&classes, 2) }
                .within(1600, LENGTH_MS - 100)
                .swarm()
        }
        RedlockVariant::ClockJump => FaultSpace::none(),
    }
}
