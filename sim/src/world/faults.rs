//! How a simulated world applies a nemesis step (a live one: `live.rs`):
//! each fault kind as the turmoil network, a pause handle, a bridge or a
//! real server sees it, and the step recorded in the history.

use core::time::Duration;
use turmoil::Sim;

use super::{RestartMode, World};
use crate::error::SimError;
use crate::history::Millis;
use crate::nemesis::{Action, Direction, FaultKind, Target};

impl World<'_> {
    /// Applies one step of the schedule at `now` and records it.
    pub(super) fn apply(&mut self, sim: &mut Sim<'static>, action: &Action, now: Millis) -> Result<(), SimError> {
        let fault = action.fault;
        match fault.kind {
            FaultKind::Partition | FaultKind::PartitionOneWay { .. } | FaultKind::Hold | FaultKind::Latency { .. } => {
                self.apply_network(sim, action)
            }
            FaultKind::ClientPause | FaultKind::ServerPause | FaultKind::ServerRestart => {
                self.apply_process(sim, action)?
            }
            FaultKind::CutReplication | FaultKind::Failover => self.apply_replication(sim, action)?,
            FaultKind::ClockStep { .. } => self.apply_clock(action),
        }
        self.record_step(action, now);
        Ok(())
    }

    /// Records a step of the schedule, applied at `now`.
    fn record_step(&self, action: &Action, now: Millis) {
        super::record_step(&self.history, &self.actors, &self.node_names, action, now);
    }

    /// A fault of the links between clients and servers: turmoil's network.
    fn apply_network(&mut self, sim: &mut Sim<'static>, action: &Action) {
        let fault = action.fault;
        let links = self.links(fault.target);
        match (fault.kind, action.undo) {
            (FaultKind::Partition, false) => links.iter().for_each(|(c, n)| sim.partition(c.as_str(), n.as_str())),
            (FaultKind::Partition, true) => links.iter().for_each(|(c, n)| sim.repair(c.as_str(), n.as_str())),
            (FaultKind::PartitionOneWay { direction }, undo) => {
                for (c, n) in &links {
                    let (from, to) = match direction {
                        Direction::ToServer => (c.as_str(), n.as_str()),
                        Direction::ToClient => (n.as_str(), c.as_str()),
                    };
                    if undo {
                        sim.repair_oneway(from, to);
                    } else {
                        sim.partition_oneway(from, to);
                    }
                }
            }
            (FaultKind::Hold, false) => links.iter().for_each(|(c, n)| sim.hold(c.as_str(), n.as_str())),
            (FaultKind::Hold, true) => links.iter().for_each(|(c, n)| sim.release(c.as_str(), n.as_str())),
            (FaultKind::Latency { ms }, false) => {
                for (c, n) in &links {
                    sim.set_link_latency(c.as_str(), n.as_str(), Duration::from_millis(ms));
                }
            }
            (FaultKind::Latency { .. }, true) => {
                for (c, n) in &links {
                    sim.set_link_latency(c.as_str(), n.as_str(), self.config.min_latency);
                    sim.set_link_max_message_latency(c.as_str(), n.as_str(), self.config.max_latency);
                }
            }
            // Another group's kind: `apply` routes each kind to its group.
            _ => {}
        }
    }

    /// A pause of a client or a server, or a server restart.
    fn apply_process(&mut self, sim: &mut Sim<'static>, action: &Action) -> Result<(), SimError> {
        let fault = action.fault;
        match (fault.kind, action.undo) {
            (FaultKind::ClientPause, false) => {
                if let Target::Client(c) = fault.target {
                    self.actors[c as usize].pause.pause_until(Duration::from_millis(fault.end()));
                }
            }
            (FaultKind::ClientPause, true) => {
                if let Target::Client(c) = fault.target {
                    self.actors[c as usize].pause.resume();
                }
            }
            (FaultKind::ServerPause, false) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].pause_until(Duration::from_millis(fault.end()));
                }
            }
            (FaultKind::ServerPause, true) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].resume();
                }
            }
            (FaultKind::ServerRestart, false) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    sim.crash(name.as_str());
                    let node = self
                        .servers
                        .node_mut(n as usize)
                        .ok_or_else(|| SimError::InvalidSchedule(format!("server {n} missing from the pool")))?;
                    match self.config.restart {
                        RestartMode::Flush => node.flush()?,
                        RestartMode::Process => node.restart()?,
                    }
                }
            }
            (FaultKind::ServerRestart, true) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    sim.bounce(name.as_str());
                }
            }
            // Another group's kind: `apply` routes each kind to its group.
            _ => {}
        }
        Ok(())
    }

    /// A fault of a primary and its replicas: a cut link, a failover.
    fn apply_replication(&mut self, sim: &mut Sim<'static>, action: &Action) -> Result<(), SimError> {
        let fault = action.fault;
        match (fault.kind, action.undo) {
            (FaultKind::CutReplication, undo) => {
                if let Target::Node(n) = fault.target {
                    let node = self.node_mut(n)?;
                    if undo {
                        node.restore_replication()?;
                    } else {
                        node.cut_replication()?;
                    }
                    let linked = node.linked_replicas();
                    self.bridges[n as usize].set_linked_replicas(linked);
                }
            }
            (FaultKind::Failover, false) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    sim.crash(name.as_str());
                    self.node_mut(n)?.fail_primary();
                    self.bridges[n as usize].set_linked_replicas(0);
                }
            }
            (FaultKind::Failover, true) => {
                if let Target::Node(n) = fault.target {
                    let node = self.node_mut(n)?;
                    node.promote()?;
                    let (addr, linked) = (node.addr(), node.linked_replicas());
                    let bridge = &self.bridges[n as usize];
                    bridge.repoint(addr);
                    bridge.set_linked_replicas(linked);
                    let name = self.node_names[n as usize].clone();
                    sim.bounce(name.as_str());
                }
            }
            // Another group's kind: `apply` routes each kind to its group.
            _ => {}
        }
        Ok(())
    }

    /// A step of a server's clock.
    fn apply_clock(&mut self, action: &Action) {
        let fault = action.fault;
        match (fault.kind, action.undo) {
            (FaultKind::ClockStep { offset_ms }, false) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].step_clock(offset_ms);
                }
            }
            (FaultKind::ClockStep { .. }, true) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].unstep_clock();
                }
            }
            // Another group's kind: `apply` routes each kind to its group.
            _ => {}
        }
    }
}
