//! A fault as the history records it ([`crate::history::Op::Fault`]):
//! the typed fault, its target by name and whether it starts or ends.
//!
//! Checkers, the timeline and the report match on these types; the text
//! (`crash redis-0 (all keys and scripts lost)`) exists only in `Display`,
//! and in the history's JSON, which carries that text as
//! `{"description": …}` so that a history's digest is the one the text
//! gave before the fault was typed. The JSON is written, never read back.

use core::fmt;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::nemesis::{Direction, FaultClass, FaultKind};
use crate::time::Millis;

/// Who a recorded fault hit, by the names the history uses (an actor's
/// process name, a node's host name): a [`crate::Target`] resolved in the
/// world it ran in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NamedTarget {
    /// A client actor, cut off from (or frozen for) every node.
    Client(String),
    /// A Redis node.
    Node(String),
    /// The link between one client and one node.
    Link {
        /// The client's process name.
        client: String,
        /// The node's host name.
        node: String,
    },
}

impl NamedTarget {
    /// The process and host names it mentions (a timeline's lanes).
    pub fn names(&self) -> Vec<&str> {
        match self {
            NamedTarget::Client(c) => vec![c],
            NamedTarget::Node(n) => vec![n],
            NamedTarget::Link { client, node } => vec![client, node],
        }
    }
}

impl fmt::Display for NamedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamedTarget::Client(c) => write!(f, "{c} <-> all nodes"),
            NamedTarget::Node(n) => f.write_str(n),
            NamedTarget::Link { client, node } => write!(f, "{client} <-> {node}"),
        }
    }
}

/// One step of the nemesis's schedule: a fault applied, or its undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NemesisStep {
    /// What went wrong.
    pub kind: FaultKind,
    /// To whom.
    pub target: NamedTarget,
    /// `true` for the undo (`repair`, `resume`, `promote`...).
    pub undo: bool,
    /// The fault's duration (ms): how long a pause lasts.
    pub duration: Millis,
}

impl NemesisStep {
    /// The class of its fault.
    pub fn class(&self) -> FaultClass {
        self.kind.class()
    }

    /// Whether it starts a fault of `class` (not its undo).
    pub fn starts(&self, class: FaultClass) -> bool {
        !self.undo && self.class() == class
    }

    /// Whether it undoes a fault of `class`.
    pub fn undoes(&self, class: FaultClass) -> bool {
        self.undo && self.class() == class
    }
}

impl fmt::Display for NemesisStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.undo { self.kind.undo_name() } else { self.kind.name() };
        write!(f, "{verb} {}", self.target)?;
        let node = matches!(self.target, NamedTarget::Node(_));
        match (self.kind, self.undo) {
            (FaultKind::PartitionOneWay { direction: Direction::ToServer }, _) => f.write_str(" (requests)"),
            (FaultKind::PartitionOneWay { direction: Direction::ToClient }, _) => f.write_str(" (replies)"),
            (FaultKind::Latency { ms }, false) => write!(f, " ({ms}ms)"),
            (FaultKind::ClientPause | FaultKind::ServerPause, false) => write!(f, " for {}ms", self.duration),
            (FaultKind::ServerRestart, false) if node => f.write_str(" (all keys and scripts lost)"),
            (FaultKind::CutReplication, false) if node => f.write_str(" (writes stop reaching its replicas)"),
            (FaultKind::Failover, false) if node => f.write_str(" (the primary crashes)"),
            (FaultKind::Failover, true) if node => {
                f.write_str(" (a replica becomes the primary with what it had received)")
            }
            (FaultKind::ClockStep { offset_ms }, false) => write!(f, " ({offset_ms:+}ms)"),
            _ => Ok(()),
        }
    }
}

/// A fault in the history: a step of the nemesis's schedule, or a fault
/// a workload injects itself at a moment it chooses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultRecord {
    /// The nemesis applied a scheduled fault or its undo.
    Nemesis(NemesisStep),
    /// The election workload froze its leader (a GC pause at a chosen
    /// moment; the actor's own `Op::Paused` follows).
    LeaderStall {
        /// The leader's process name.
        process: String,
        /// For how long (ms).
        ms: Millis,
        /// At what moment, in words (`across its deadline`), if chosen.
        when: Option<String>,
    },
    /// A Redlock holder paused its own process right after its grant, for
    /// longer than the lease's validity.
    HolderPause {
        /// The holder's process name.
        process: String,
        /// For how long (ms).
        ms: Millis,
    },
}

impl FaultRecord {
    /// The nemesis step, if it is one.
    pub fn nemesis(&self) -> Option<&NemesisStep> {
        match self {
            FaultRecord::Nemesis(step) => Some(step),
            _ => None,
        }
    }

    /// Whether it freezes client process `process` (a nemesis client
    /// pause on it, a holder's own pause).
    pub fn freezes(&self, process: &str) -> bool {
        match self {
            FaultRecord::Nemesis(s) => s.starts(FaultClass::ClientPause) && s.target.names() == [process],
            FaultRecord::HolderPause { process: p, .. } => p == process,
            FaultRecord::LeaderStall { .. } => false,
        }
    }

    /// Whether it ends a nemesis pause of client process `process`.
    pub fn resumes(&self, process: &str) -> bool {
        matches!(self, FaultRecord::Nemesis(s) if s.undoes(FaultClass::ClientPause) && s.target.names() == [process])
    }
}

#[cfg(test)]
impl FaultRecord {
    /// A nemesis step of `kind` on client `process` (for tests).
    pub(crate) fn on_client(kind: FaultKind, process: &str, undo: bool, duration: Millis) -> FaultRecord {
        FaultRecord::Nemesis(NemesisStep { kind, target: NamedTarget::Client(process.into()), undo, duration })
    }

    /// A nemesis step of `kind` on node `node` (for tests).
    pub(crate) fn on_node(kind: FaultKind, node: &str, undo: bool, duration: Millis) -> FaultRecord {
        FaultRecord::Nemesis(NemesisStep { kind, target: NamedTarget::Node(node.into()), undo, duration })
    }
}

impl fmt::Display for FaultRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultRecord::Nemesis(step) => step.fmt(f),
            FaultRecord::LeaderStall { process, ms, when } => {
                write!(f, "stall {process} (the leader) for {ms}ms")?;
                match when {
                    Some(w) => write!(f, " {w}"),
                    None => Ok(()),
                }
            }
            FaultRecord::HolderPause { process, ms } => {
                write!(f, "client-pause {process} for {ms}ms (itself, holding the lock)")
            }
        }
    }
}

impl Serialize for FaultRecord {
    /// `{"description": "<the Display text>"}`: the form the history's
    /// digest has always hashed.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Fault", 1)?;
        s.serialize_field("description", &self.to_string())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: FaultKind, target: NamedTarget, undo: bool) -> FaultRecord {
        FaultRecord::Nemesis(NemesisStep { kind, target, undo, duration: 300 })
    }

    #[test]
    fn text_is_what_the_history_always_said() {
        let client = || NamedTarget::Client("client-0".into());
        let node = || NamedTarget::Node("redis-0".into());
        let link = NamedTarget::Link { client: "client-1".into(), node: "redis-2".into() };
        let cases = [
            (step(FaultKind::ClientPause, client(), false), "client-pause client-0 <-> all nodes for 300ms"),
            (step(FaultKind::ClientPause, client(), true), "resume client-0 <-> all nodes"),
            (step(FaultKind::ServerRestart, node(), false), "crash redis-0 (all keys and scripts lost)"),
            (step(FaultKind::ClockStep { offset_ms: -40 }, node(), false), "clock-step redis-0 (-40ms)"),
            (step(FaultKind::Latency { ms: 9 }, link.clone(), false), "latency client-1 <-> redis-2 (9ms)"),
            (
                step(FaultKind::PartitionOneWay { direction: Direction::ToClient }, link, true),
                "repair-oneway client-1 <-> redis-2 (replies)",
            ),
            (
                step(FaultKind::Failover, node(), true),
                "promote redis-0 (a replica becomes the primary with what it had received)",
            ),
            (
                FaultRecord::LeaderStall { process: "n1".into(), ms: 50, when: Some("now".into()) },
                "stall n1 (the leader) for 50ms now",
            ),
            (
                FaultRecord::HolderPause { process: "c".into(), ms: 7 },
                "client-pause c for 7ms (itself, holding the lock)",
            ),
        ];
        for (record, text) in cases {
            assert_eq!(record.to_string(), text);
            let json = serde_json::to_string(&record).unwrap();
            assert_eq!(json, serde_json::json!({ "description": text }).to_string());
        }
    }

    #[test]
    fn a_client_pause_freezes_its_client_only() {
        let pause = step(FaultKind::ClientPause, NamedTarget::Client("a".into()), false);
        let resume = step(FaultKind::ClientPause, NamedTarget::Client("a".into()), true);
        assert!(pause.freezes("a") && !pause.freezes("b") && !pause.resumes("a"));
        assert!(resume.resumes("a") && !resume.freezes("a"));
        let server = step(FaultKind::ServerPause, NamedTarget::Node("a".into()), true);
        assert!(!server.resumes("a"));
        assert!(FaultRecord::HolderPause { process: "a".into(), ms: 1 }.freezes("a"));
    }
}
