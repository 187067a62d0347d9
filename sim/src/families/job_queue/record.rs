//! What the job-queue family records in the history: [`JobOp`], its
//! operation type (a call of one of the queue's verbs, or a probed case),
//! and the conversions its fields share.

use redis_primitives::JobState;
use serde::{Deserialize, Serialize};

use core::fmt;

use super::probe::Probed;
use crate::history::{Millis, Operation};
use crate::world::DEFAULT_EPOCH_UNIX_MS;

/// What every job operation records (one shape for all verbs; absent
/// fields are left out of the JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobCall {
    /// The job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The claim's attempt (the fence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
    /// Whether it was accepted (enqueue added, extend extended, complete
    /// accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// The lease's end on the server's clock, as simulated ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Millis>,
    /// A refusal's current attempt, or a job's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The jobs a reap returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// A claimed job's payload, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// The lease an extension asked for (ms), when it is not the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
}

/// Which of the queue's calls an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) enum JobVerb {
    /// `JobQueue::enqueue`.
    Enqueue,
    /// `JobQueue::claim`.
    Claim,
    /// `JobQueue::extend`.
    Extend,
    /// `JobQueue::complete`.
    Complete,
    /// `JobQueue::reap`.
    Reap,
    /// `JobQueue::state`.
    State,
}

impl JobVerb {
    /// Its kebab-case name (`job-claim`), for timelines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobVerb::Enqueue => "job-enqueue",
            JobVerb::Claim => "job-claim",
            JobVerb::Extend => "job-extend",
            JobVerb::Complete => "job-complete",
            JobVerb::Reap => "job-reap",
            JobVerb::State => "job-state",
        }
    }
}

/// The job-queue family's operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum JobOp {
    /// A call of `verb`, with its arguments and (on a completion) result.
    Call {
        /// Which call.
        verb: JobVerb,
        /// Its arguments and result.
        call: JobCall,
    },
    /// A case of the corruption probe (`probe.rs`).
    Probe(Probed),
}

impl Operation for JobOp {
    fn verb(&self) -> &'static str {
        match self {
            JobOp::Call { verb, .. } => verb.name(),
            JobOp::Probe(_) => "job-probe",
        }
    }
}

impl fmt::Display for JobOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobOp::Call { verb, call } => {
                write!(f, "{}", verb.name())?;
                if let Some(id) = &call.id {
                    write!(f, " {id}")?;
                }
                if let Some(a) = call.attempt {
                    write!(f, " attempt={a}")?;
                }
                if let Some(a) = call.accepted {
                    write!(f, " accepted={a}")?;
                }
                if let Some(u) = call.lease_until {
                    write!(f, " lease-until={u}ms")?;
                }
                if let Some(s) = &call.state {
                    write!(f, " state={s}")?;
                }
                if !call.ids.is_empty() {
                    write!(f, " ids={}", call.ids.join(","))?;
                }
                if let Some(ms) = call.lease_ms {
                    write!(f, " lease={ms}ms")?;
                }
                Ok(())
            }
            JobOp::Probe(p) => write!(f, "job-probe `{}`: expected {}, got {}", p.case, p.expected, p.got),
        }
    }
}

/// The payload the producer enqueues with `id`.
pub(super) fn payload_of(id: &str) -> String {
    format!("payload of {id}")
}

pub(super) fn record(verb: JobVerb, call: JobCall) -> JobOp {
    JobOp::Call { verb, call }
}

pub(super) fn state_name(s: Option<JobState>) -> String {
    match s {
        Some(JobState::Pending) => "pending",
        Some(JobState::Active) => "active",
        Some(JobState::Done) => "done",
        None => "unknown",
    }
    .to_string()
}

/// Server-clock ms (the server's wall clock is pinned to simulated time
/// from [`DEFAULT_EPOCH_UNIX_MS`]) as simulated ms.
pub(super) fn sim_ms(server_ms: u64) -> Millis {
    server_ms.saturating_sub(DEFAULT_EPOCH_UNIX_MS)
}
