//! The lock family's plan and plan space: what one run's actors do
//! ([`LockPlan`], with its [`Stall`]) and the ranges plans are drawn from
//! ([`LockSpace`]), by the seeds and by the property search alike. Kept
//! apart from the workload's fixed settings ([`LockWorkload`]) because a
//! plan is data (saved, replayed, shrunk) and the settings are not.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use super::LockWorkload;
use crate::fault_space::WorkloadFault;
use crate::history::Millis;
use crate::nemesis::Fault;

/// Lock-family workload: clients contending for one lock, writing a
/// resource while they hold it (`families/lock/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LockPlan {
    /// Contending clients.
    pub clients: u32,
    /// Lease TTL (ms).
    pub ttl_ms: u64,
    /// Hold time range (ms), drawn per hold by the client's RNG.
    pub hold_ms: (u64, u64),
    /// Time between attempts (ms), drawn per attempt.
    pub think_ms: (u64, u64),
    /// Clients start no new attempt after this (ms).
    pub length_ms: Millis,
    /// One client stalls inside one of its critical sections.
    pub stall: Option<Stall>,
}

/// A client that stalls (a GC pause) inside its `hold`-th critical section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stall {
    /// Which client (index).
    pub client: u32,
    /// In which of its holds (1 = the first).
    pub hold: u32,
    /// For how long (ms).
    pub ms: u64,
}

/// What lock-family plans may be drawn from (ranges inclusive; each
/// shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockSpace {
    /// Contending clients.
    pub clients: (u32, u32),
    /// Lease TTL (ms).
    pub ttl_ms: (u64, u64),
    /// Longest hold (ms).
    pub hold_max_ms: (u64, u64),
    /// The shortest hold is this much below the longest (ms).
    pub hold_span_ms: (u64, u64),
    /// Longest think time (ms); the shortest is 5 ms.
    pub think_max_ms: (u64, u64),
    /// How long clients keep trying (ms).
    pub length_ms: (u64, u64),
    /// Whether and how long a client stalls inside one of its first three
    /// critical sections.
    pub stall: WorkloadFault,
    /// Faults every plan gets (the restart of `counter-loss`).
    pub placed: Vec<Fault>,
}

impl LockSpace {
    /// The property search's lock space: 1–4 clients, TTL 150–600 ms,
    /// holds up to 100–700 ms, 1–3 s of attempts, an optional stall.
    pub(crate) fn search() -> LockSpace {
        LockSpace {
            clients: (1, 4),
            ttl_ms: (150, 600),
            hold_max_ms: (100, 700),
            hold_span_ms: (10, 100),
            think_max_ms: (5, 80),
            length_ms: (1000, 3000),
            stall: WorkloadFault::Maybe { ms: (100, 1500) },
            placed: Vec::new(),
        }
    }

    /// What a variant's seeds draw: its template plan exactly, a stall of
    /// its `seed_stall_ms` in a drawn client's drawn hold, its fixed faults.
    pub(crate) fn seeds(w: &LockWorkload) -> LockSpace {
        let p = &w.plan;
        LockSpace {
            clients: one(p.clients),
            ttl_ms: one(p.ttl_ms),
            hold_max_ms: one(p.hold_ms.1),
            hold_span_ms: one(p.hold_ms.1 - p.hold_ms.0.min(p.hold_ms.1)),
            think_max_ms: one(p.think_ms.1),
            length_ms: one(p.length_ms),
            stall: if w.seed_stall_ms > 0 {
                WorkloadFault::Always { ms: one(w.seed_stall_ms) }
            } else {
                WorkloadFault::Never
            },
            placed: w.always.clone(),
        }
    }

    /// The strategy (the family's one generator).
    pub(crate) fn plans(&self) -> BoxedStrategy<(LockPlan, Vec<Fault>)> {
        let clients = self.clients;
        let stall = self
            .stall
            .strategy((0..clients.1.max(1), 1..=3u32))
            .prop_map(|s| s.map(|((client, hold), ms)| Stall { client, hold, ms }));
        let placed = self.placed.clone();
        (
            clients.0..=clients.1,
            stall,
            self.ttl_ms.0..=self.ttl_ms.1,
            self.hold_max_ms.0..=self.hold_max_ms.1,
            self.hold_span_ms.0..=self.hold_span_ms.1,
            self.think_max_ms.0..=self.think_max_ms.1,
            self.length_ms.0..=self.length_ms.1,
        )
            .prop_map(move |(clients, stall, ttl_ms, hold_max, hold_span, think_max, length_ms)| {
                let plan = LockPlan {
                    clients,
                    ttl_ms,
                    hold_ms: (hold_max.saturating_sub(hold_span).max(1), hold_max),
                    think_ms: (5, think_max),
                    length_ms,
                    stall,
                };
                (plan, placed.clone())
            })
            .boxed()
    }
}

fn one<T: Copy>(v: T) -> (T, T) {
    (v, v)
}

impl core::fmt::Display for LockPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let range = |(lo, hi): (u64, u64)| if lo == hi { format!("{lo}ms") } else { format!("{lo}..{hi}ms") };
        write!(
            f,
            "{} client(s), ttl {}ms, hold {}, think {}, attempts until {}ms",
            self.clients,
            self.ttl_ms,
            range(self.hold_ms),
            range(self.think_ms),
            self.length_ms
        )?;
        match self.stall {
            Some(s) if s.ms > 0 => write!(
                f,
                "; client#{} stalls {}ms inside its critical section #{} (workload fault)",
                s.client, s.ms, s.hold
            ),
            _ => write!(f, "; no stall"),
        }
    }
}
