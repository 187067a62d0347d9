//! `WorkloadFault`: a fault the workload places itself, typed.
//!
//! Besides the nemesis's faults, some workloads disturb themselves at a
//! seeded moment: a lock holder stalls inside its critical section, a
//! worker freezes after a claim, an election's leader stalls, is stopped or
//! has its renewals held at the server. The run's schedule lists them with
//! the nemesis's ([`crate::ScheduledFault::Workload`]), so a replayed
//! violation shows every disturbance. They are recorded as what they are,
//! a stall, a hold or a stop of a process or of a role, and become text
//! only when printed; nothing reads them back.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Event, Millis, Op};

/// Whom a workload fault strikes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadTarget {
    /// A named process of the run.
    Process(String),
    /// Whichever process holds a role when the fault starts, as the plan
    /// names it ("the node leading then"): the plan cannot know which.
    Role(String),
}

/// What a workload fault does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadFaultKind {
    /// The process freezes for `ms`, then resumes.
    Stall {
        /// How long.
        ms: Millis,
        /// Where, in a few words ("inside its critical section").
        context: Option<String>,
    },
    /// The process's next requests to `node` (those mentioning `key`, if
    /// set) each wait at the server for the next of `ms`.
    Held {
        /// The node.
        node: u32,
        /// One wait per request held, in order.
        ms: Vec<Millis>,
        /// Only requests mentioning this key are held.
        key: Option<String>,
    },
    /// The process is asked to stop (`stop()`).
    Stop,
}

/// A fault the workload places itself (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadFault {
    /// When it starts (simulated ms).
    pub at: Millis,
    /// Whom it strikes.
    pub target: WorkloadTarget,
    /// What it does.
    pub kind: WorkloadFaultKind,
}

impl fmt::Display for WorkloadTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadTarget::Process(p) | WorkloadTarget::Role(p) => f.write_str(p),
        }
    }
}

impl fmt::Display for WorkloadFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (at, who) = (self.at, &self.target);
        match &self.kind {
            WorkloadFaultKind::Stall { ms, context: Some(context) } => {
                write!(f, "at {at}ms: {who} stalls for {ms}ms {context}, then resumes")
            }
            WorkloadFaultKind::Stall { ms, context: None } => {
                write!(f, "at {at}ms for {ms}ms: stall (workload) {who}, then resume")
            }
            WorkloadFaultKind::Held { node, ms, key } => {
                let waits: Vec<String> = ms.iter().map(Millis::to_string).collect();
                let (requests, wait) = if ms.len() == 1 { ("request", "waits") } else { ("requests", "wait") };
                write!(f, "at {at}ms: the next {requests} of {who} to redis-{node}")?;
                if let Some(key) = key {
                    write!(f, " mentioning {key}")?;
                }
                write!(f, " {wait} {} ms at the server (workload)", waits.join(" and "))
            }
            WorkloadFaultKind::Stop => write!(f, "at {at}ms: stop() (workload) on {who}"),
        }
    }
}

impl WorkloadFault {
    /// The workload fault a history event records, if it records one: a
    /// process's own stall (`Op::Paused`) or its requests held at a server
    /// (`Op::Delayed`).
    pub(crate) fn from_event(e: &Event) -> Option<WorkloadFault> {
        let kind = match &e.op {
            Op::Paused { ms, context } => WorkloadFaultKind::Stall { ms: *ms, context: Some(context.clone()) },
            Op::Delayed { node, ms, mentioning } => {
                WorkloadFaultKind::Held { node: *node, ms: vec![*ms], key: mentioning.clone() }
            }
            _ => return None,
        };
        Some(WorkloadFault { at: e.time, target: WorkloadTarget::Process(e.process.clone()), kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_as_a_line_of_the_schedule() {
        let stall = WorkloadFault {
            at: 700,
            target: WorkloadTarget::Process("client-1".into()),
            kind: WorkloadFaultKind::Stall { ms: 900, context: Some("inside its critical section".into()) },
        };
        assert_eq!(stall.to_string(), "at 700ms: client-1 stalls for 900ms inside its critical section, then resumes");
        let leader = || WorkloadTarget::Role("the node leading then".into());
        let planned =
            WorkloadFault { at: 5, target: leader(), kind: WorkloadFaultKind::Stall { ms: 9, context: None } };
        assert_eq!(planned.to_string(), "at 5ms for 9ms: stall (workload) the node leading then, then resume");
        let held = WorkloadFault {
            at: 40,
            target: leader(),
            kind: WorkloadFaultKind::Held { node: 0, ms: vec![200, 240], key: None },
        };
        assert_eq!(
            held.to_string(),
            "at 40ms: the next requests of the node leading then to redis-0 wait 200 and 240 ms at the server (workload)"
        );
        let one = WorkloadFault {
            at: 1,
            target: WorkloadTarget::Process("w".into()),
            kind: WorkloadFaultKind::Held { node: 2, ms: vec![30], key: Some("k".into()) },
        };
        assert_eq!(
            one.to_string(),
            "at 1ms: the next request of w to redis-2 mentioning k waits 30 ms at the server (workload)"
        );
        let stop = WorkloadFault { at: 3, target: leader(), kind: WorkloadFaultKind::Stop };
        assert_eq!(stop.to_string(), "at 3ms: stop() (workload) on the node leading then");
        let json = serde_json::to_string(&held).unwrap();
        assert_eq!(serde_json::from_str::<WorkloadFault>(&json).unwrap(), held, "{json}");
    }
}
