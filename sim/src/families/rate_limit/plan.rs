//! A rate-limit run spelled out (clients, limit, window, bursts) and the
//! space plans are drawn from, for the seeds and for the property search,
//! with the faults the seeds draw.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use super::{CLIENTS, LENGTH_MS, MAX, WINDOW_MS};
use crate::fault_space::FaultSpace;
use crate::history::Millis;
use crate::nemesis::{Fault, FaultClass};

/// Rate-limit workload: clients sharing one limited name, firing bursts of
/// concurrent requests (`families/rate_limit/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RateLimitPlan {
    /// Clients (each with one multiplexed connection).
    pub clients: u32,
    /// Requests per window.
    pub limit: u64,
    /// Window length (ms).
    pub window_ms: u64,
    /// Every burst, of every client.
    pub bursts: Vec<Burst>,
}

/// `size` concurrent requests from `client` at simulated `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Burst {
    /// Which client (index).
    pub client: u32,
    /// When (simulated ms).
    pub at: Millis,
    /// Requests in flight at once.
    pub size: u32,
}

/// What rate-limit plans may be drawn from (ranges inclusive; each
/// shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RateLimitSpace {
    /// Clients.
    pub clients: (u32, u32),
    /// Requests per window.
    pub limit: (u64, u64),
    /// Window lengths to choose from (the first is the simplest).
    pub windows_ms: Vec<u64>,
    /// Where the bursts go.
    pub bursts: BurstSpace,
}

/// How the bursts of a rate-limit plan are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BurstSpace {
    /// `count` bursts of `size` requests, each by a drawn client at a drawn
    /// time in `[0, length_ms)` (shrinks to fewer, smaller bursts).
    Free {
        /// Number of bursts.
        count: (usize, usize),
        /// Requests per burst.
        size: (u32, u32),
        /// Bursts start before this (ms).
        length_ms: Millis,
    },
    /// The seeds' layout (module docs): at every window boundary before
    /// `length_ms`, a burst 10–150 ms before it and one by another client
    /// 0–150 ms after it, plus one burst 300–700 ms into every window.
    Boundaries {
        /// Requests per burst.
        size: (u32, u32),
        /// The run's length (ms).
        length_ms: Millis,
    },
}

impl RateLimitSpace {
    /// The property search's space: 1–4 clients, limit 2–8 per
    /// 1000/500/250 ms, 1–8 bursts of 1–10 requests in 3 s.
    pub(crate) fn search() -> RateLimitSpace {
        RateLimitSpace {
            clients: (1, 4),
            limit: (2, 8),
            windows_ms: vec![1000, 500, 250],
            bursts: BurstSpace::Free { count: (1, 8), size: (1, 10), length_ms: LENGTH_MS },
        }
    }

    /// What every rate-limit variant's seeds draw: three clients, 5 per
    /// second, boundary bursts of 5–8 requests over 3 s.
    pub(crate) fn seeds() -> RateLimitSpace {
        RateLimitSpace {
            clients: (CLIENTS as u32, CLIENTS as u32),
            limit: (MAX, MAX),
            windows_ms: vec![WINDOW_MS],
            bursts: BurstSpace::Boundaries { size: (5, 8), length_ms: LENGTH_MS },
        }
    }

    /// The strategy (the family's one generator).
    pub(crate) fn plans(&self) -> BoxedStrategy<(RateLimitPlan, Vec<Fault>)> {
        let max_clients = self.clients.1.max(1);
        let (clients, limit, windows) =
            (self.clients.0..=self.clients.1, self.limit.0..=self.limit.1, self.windows_ms.clone());
        match self.bursts {
            // Draw order (clients, bursts, limit, window) is what the
            // committed regression files were recorded with.
            BurstSpace::Free { count, size, length_ms } => {
                let burst = (0..max_clients, 0..length_ms.max(1), size.0..=size.1)
                    .prop_map(|(client, at, size)| Burst { client, at, size });
                (clients, vec(burst, count.0..=count.1), limit, proptest::sample::select(windows))
                    .prop_map(|(clients, bursts, limit, window_ms)| {
                        (RateLimitPlan { clients, limit, window_ms, bursts }, Vec::new())
                    })
                    .boxed()
            }
            BurstSpace::Boundaries { size, length_ms } => {
                let bursts = proptest::sample::select(windows).prop_flat_map(move |window_ms| {
                    let window_ms = window_ms.max(1);
                    let boundaries = (length_ms.saturating_sub(1) / window_ms) as usize;
                    let windows = length_ms.div_ceil(window_ms) as usize;
                    let straddle = (
                        0..max_clients,
                        1..max_clients.max(2),
                        10..=150u64,
                        0..=150u64,
                        size.0..=size.1,
                        size.0..=size.1,
                    );
                    let middle = (0..max_clients, 300..=700u64, size.0..=size.1);
                    (vec(straddle, boundaries), vec(middle, windows)).prop_map(move |(straddles, middles)| {
                        let mut bursts = Vec::new();
                        for (i, (before, offset, ahead, behind, size_before, size_after)) in
                            straddles.into_iter().enumerate()
                        {
                            let boundary = (i as u64 + 1) * window_ms;
                            let after = (before + offset) % max_clients;
                            bursts.push(Burst {
                                client: before,
                                at: boundary.saturating_sub(ahead),
                                size: size_before,
                            });
                            bursts.push(Burst { client: after, at: boundary + behind, size: size_after });
                        }
                        for (i, (who, into, size)) in middles.into_iter().enumerate() {
                            bursts.push(Burst { client: who, at: i as u64 * window_ms + into, size });
                        }
                        (bursts, window_ms)
                    })
                });
                (clients, bursts, limit)
                    .prop_map(|(clients, (bursts, window_ms), limit)| {
                        (RateLimitPlan { clients, limit, window_ms, bursts }, Vec::new())
                    })
                    .boxed()
            }
        }
    }
}

/// The nemesis faults every rate-limit variant's seeds draw: up to two
/// faults of 50–600 ms inside 10–90 % of the run, a swarm subset per seed.
pub(crate) fn seed_faults() -> FaultSpace {
    let classes = [
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    FaultSpace { count: (0, 2), duration_ms: (50, 600), latency_ms: (5, 100), ..FaultSpace::new(&classes, 2) }
        .within(LENGTH_MS / 10, LENGTH_MS * 9 / 10)
        .swarm()
}

impl core::fmt::Display for RateLimitPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} client(s), limit {} per {}ms, ", self.clients, self.limit, self.window_ms)?;
        if self.bursts.is_empty() {
            return write!(f, "no requests");
        }
        write!(f, "{} burst(s):", self.bursts.len())?;
        for b in &self.bursts {
            write!(f, " {}@{}ms by client#{}", b.size, b.at, b.client)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::RateLimitVariant;

    #[test]
    fn seed_bursts_straddle_every_boundary() {
        for seed in 0..20 {
            let plan = crate::scenarios::find("rate-limit").unwrap().space().draw(seed).unwrap();
            let p = plan.workload.plan::<RateLimitVariant>().unwrap();
            for boundary in [1000u64, 2000] {
                assert!(p.bursts.iter().any(|b| b.at < boundary && b.at + 150 >= boundary), "{p}");
                assert!(p.bursts.iter().any(|b| b.at >= boundary && b.at <= boundary + 150), "{p}");
            }
            assert_eq!(p.bursts.len(), 2 * 2 + 3, "{p}");
        }
    }
}
