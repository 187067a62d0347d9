//! One run of the lock workload: the world built from the seed, the
//! clients and the reader registered, the schedule set, the world run. The
//! actors are `client.rs` and `reader.rs`; what the run is judged by is
//! `judge.rs`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::client::client;
use super::reader::reader;
use super::{LockPlan, LockWorkload, Protection, ACK_TIMEOUT_MS};
use crate::nemesis::{Fault, Schedule};
use crate::outcome::Outcome;
use crate::servers::{Servers, SetupError};
use crate::workload_fault::WorkloadFault;
use crate::world::{World, WorldConfig};

impl LockWorkload {
    /// Runs `plan` under these settings, with `schedule`.
    pub(crate) fn run_planned(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &LockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        let this = LockWorkload { plan: plan.clone(), ..self.clone() };
        this.run_exact(servers, seed, schedule)
    }

    /// Runs the plan these settings hold, with `schedule`.
    fn run_exact(&self, servers: &mut Servers, seed: u64, schedule: Schedule) -> Result<Outcome, SetupError> {
        let stall = self.plan.stall.filter(|s| s.ms > 0).map(|s| (s.client, s.hold));
        let config = WorldConfig::new(seed).nodes(self.nodes).replicas(self.lock_node, self.replicas);
        let mut world = World::new(servers, config)?;
        let done = Arc::new(AtomicU32::new(0));
        for i in 0..self.plan.clients {
            let w = self.clone();
            let stall_at = stall.filter(|(c, _)| *c == i && self.stall_ms() > 0).map(|(_, hold)| hold);
            let done = Arc::clone(&done);
            world.actor(format!("client-{i}"), move |actor| async move {
                let r = client(actor, w, stall_at).await;
                done.fetch_add(1, Ordering::Relaxed);
                r
            });
        }
        // The reader: once every fault has healed. Writes still in flight
        // then are fine: the checker compares the final value only with
        // writes that completed before the read was sent.
        let last_fault = schedule.faults.iter().map(Fault::end).max().unwrap_or(0);
        let read_at = if self.modes {
            // The liveness probe waits for requests still in flight at the
            // last heal to land (latency faults add up to 300 ms).
            (self.plan.length_ms + 500).max(last_fault + 400)
        } else {
            (self.plan.length_ms + 500).max(last_fault + 200)
        };
        // The acknowledgement probe's moment: a replication cut of the lock's
        // node that nothing else disturbs (client faults never aim at the
        // reader's host).
        let ack_at = match (self.protection, self.replicas) {
            (Protection::Acknowledged, 1..) => {
                crate::probes::ack::send_at(&schedule, self.lock_node as u32, None, ACK_TIMEOUT_MS)
            }
            _ => None,
        };
        let w = self.clone();
        world.actor("reader", move |actor| reader(actor, w, read_at, done, ack_at));
        world.nemesis(schedule.clone());
        let run = world.run()?;
        // The workload's own stall is a fault too: list it with the schedule.
        let stalls = run.history.events().iter().filter_map(WorkloadFault::from_event).collect();
        Ok(self.judge(&run, &schedule, stalls))
    }
}
