//! [`Claim`]: a claimed job, its attempt and its lease, as a worker holds it.

use tokio::time::Instant;

use crate::token::FencingToken;

/// A claimed job: its payload, its attempt (the fence) and its lease.
#[derive(Debug, Clone)]
pub struct Claim {
    pub(super) queue: String,
    pub(super) id: String,
    pub(super) key: String,
    pub(super) payload: Vec<u8>,
    pub(super) attempt: FencingToken,
    pub(super) lease_until_ms: u64,
    pub(super) sent_at: Instant,
    pub(super) deadline: Instant,
}

impl Claim {
    /// The job id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's payload, as enqueued.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The attempt number: 1 for the job's first claim, one more for every
    /// later one. It is a fencing token: pass it to every resource the job
    /// writes, so a resource can refuse a worker whose claim was superseded.
    pub fn attempt(&self) -> FencingToken {
        self.attempt
    }

    /// When the lease lapses on the server's clock (unix ms), as set by the
    /// claim or the last successful extend. Exact below 2^53 ms.
    pub fn lease_until_ms(&self) -> u64 {
        self.lease_until_ms
    }

    /// When the claim (or the last successful extend) request was sent.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }

    /// `sent_at + lease − drift allowance`: the instant after which the
    /// worker must assume its claim may have been reaped and handed on.
    pub fn local_deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the local deadline is still ahead. `true` does not prove the
    /// claim is still the job's; `false` proves the worker must stop acting
    /// on it (it may still try [`JobQueue::complete`](super::JobQueue::complete), which will say).
    pub fn is_trusted(&self) -> bool {
        Instant::now() < self.deadline
    }
}
