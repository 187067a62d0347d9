//! **Broken on purpose:** the "reliable queue" pattern, `RPOPLPUSH` from a
//! pending list into a processing list, with no lease and no fence.
//!
//! What breaks: a claim carries no lease, so nothing says when a worker has
//! had the job too long, and no attempt number, so nothing tells one claim of
//! a job from the next. A worker that dies leaves its job in the processing
//! list forever, unless something reaps it; and a reaper cannot tell a dead
//! worker from a slow one, so [`NaiveJobQueue::reap`] moves *every* job in
//! processing back to pending. A worker that was merely paused (a GC, a
//! swap storm) finds its job claimed again, both workers run it, and both
//! completions count: [`NaiveJobQueue::complete`] never refuses. Enqueueing
//! an id twice queues it twice, too. Shown by
//! `tests/library/job_queue.rs::naive_queue_completes_a_job_twice_after_a_reap`;
//! the fix is [`redis_primitives::JobQueue`].
//!
//! Each step is its own round trip (the claim's pop and its payload read,
//! the completion's `LREM` and its state write), so a crash between them
//! leaves half a step behind, as such code does.

use redis_primitives::{validate_name, Connection, Error, Result};

use crate::support::{fault, invalid};

/// Pending and processing lists, no lease, no fence. Do not use.
#[derive(Debug, Clone)]
pub struct NaiveJobQueue<C> {
    conn: C,
    /// `naive-jobq:{name}`.
    base: String,
}

impl<C: Connection> NaiveJobQueue<C> {
    /// The queue `name`: keys `naive-jobq:{name}:pending` and
    /// `naive-jobq:{name}:processing` (lists of ids) and
    /// `naive-jobq:{name}:job:<id>` (a hash: `payload`, `state`).
    pub fn new(conn: C, name: &str) -> Result<NaiveJobQueue<C>> {
        validate_name(name)?;
        Ok(NaiveJobQueue { conn, base: format!("naive-jobq:{{{name}}}") })
    }

    fn pending_key(&self) -> String {
        format!("{}:pending", self.base)
    }

    fn processing_key(&self) -> String {
        format!("{}:processing", self.base)
    }

    fn job_key(&self, id: &str) -> Result<String> {
        validate_name(id).map_err(|e| match e {
            Error::InvalidInput { why, .. } => invalid("job id", why),
            other => other,
        })?;
        Ok(format!("{}:job:{id}", self.base))
    }

    /// `HSET job payload` then `LPUSH pending id`. An id enqueued twice is
    /// queued twice.
    pub async fn enqueue(&self, id: &str, payload: impl AsRef<[u8]>) -> Result<()> {
        let job = self.job_key(id)?;
        let pending = self.pending_key();
        let mut conn = self.conn.clone();
        redis::cmd("HSET")
            .arg(&job)
            .arg("payload")
            .arg(payload.as_ref())
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| fault(e, &job))?;
        redis::cmd("LPUSH").arg(&pending).arg(id).query_async::<()>(&mut conn).await.map_err(|e| fault(e, &pending))
    }

    /// `RPOPLPUSH pending processing`, then `HGET job payload`. No lease, no
    /// fence: if the worker dies, the job sits in processing.
    pub async fn claim(&self) -> Result<Option<(String, Vec<u8>)>> {
        let pending = self.pending_key();
        let mut conn = self.conn.clone();
        let id: Option<String> = redis::cmd("RPOPLPUSH")
            .arg(&pending)
            .arg(self.processing_key())
            .query_async(&mut conn)
            .await
            .map_err(|e| fault(e, &pending))?;
        let Some(id) = id else { return Ok(None) };
        let job = format!("{}:job:{id}", self.base);
        let payload: Option<Vec<u8>> =
            redis::cmd("HGET").arg(&job).arg("payload").query_async(&mut conn).await.map_err(|e| fault(e, &job))?;
        match payload {
            Some(payload) => Ok(Some((id, payload))),
            None => Err(Error::CorruptState { key: job, detail: "a queued id has no payload".to_string() }),
        }
    }

    /// `LREM processing 1 id`, then `HSET job state done`. Never refuses: a
    /// stale worker's completion counts like anyone's.
    pub async fn complete(&self, id: &str) -> Result<()> {
        let job = self.job_key(id)?;
        let processing = self.processing_key();
        let mut conn = self.conn.clone();
        redis::cmd("LREM")
            .arg(&processing)
            .arg(1)
            .arg(id)
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| fault(e, &processing))?;
        redis::cmd("HSET")
            .arg(&job)
            .arg("state")
            .arg("done")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| fault(e, &job))
    }

    /// Moves **every** id in processing back to pending (`RPOPLPUSH`, as
    /// many times as `LLEN` counted) and returns them. With no lease it
    /// cannot tell a slow worker from a dead one: that is the bug.
    pub async fn reap(&self) -> Result<Vec<String>> {
        let processing = self.processing_key();
        let pending = self.pending_key();
        let mut conn = self.conn.clone();
        let n: usize =
            redis::cmd("LLEN").arg(&processing).query_async(&mut conn).await.map_err(|e| fault(e, &processing))?;
        let mut moved = Vec::with_capacity(n);
        // Counted first, so workers claiming meanwhile cannot keep it busy.
        for _ in 0..n {
            let id: Option<String> = redis::cmd("RPOPLPUSH")
                .arg(&processing)
                .arg(&pending)
                .query_async(&mut conn)
                .await
                .map_err(|e| fault(e, &processing))?;
            match id {
                Some(id) => moved.push(id),
                None => break,
            }
        }
        Ok(moved)
    }
}
