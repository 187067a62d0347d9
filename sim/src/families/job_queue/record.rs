//! What a job call records in the history: one shape for every verb
//! ([`JobCall`], an `Op::Custom` record), and the conversions its fields
//! share.

use redis_primitives::JobState;
use serde::{Deserialize, Serialize};

use crate::history::{Millis, Op};
use crate::world::DEFAULT_EPOCH_UNIX_MS;

/// What every job operation records (one shape for all verbs; absent
/// fields are left out of the JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCall {
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

/// The payload the producer enqueues with `id`.
pub(super) fn payload_of(id: &str) -> String {
    format!("payload of {id}")
}

pub(super) fn record(verb: &str, call: JobCall) -> Op {
    Op::custom(verb, &call)
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
