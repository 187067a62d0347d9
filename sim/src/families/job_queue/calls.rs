//! The workload's calls on the queue, each recorded: enqueue, claim,
//! extend, complete and reap on either queue, a state read on the fenced
//! one, with what a claim's deadline and trust must say read back.

use redis_primitives::{Completion, Enqueued, JobQueue, JobState, Ttl};
use redis_primitives_naive::NaiveJobQueue;

use super::record::{payload_of, record, sim_ms, state_name, JobCall};
use super::{JobQueueVariant, CLAIM, COMPLETE, ENQUEUE, EXTEND, QUEUE, REAP, STATE};
use crate::checker::Allowance;
use crate::families::job_queue::api::{JOB_CLAIM, JOB_COMPLETE, JOB_ENQUEUE, JOB_EXTEND, JOB_REAP, JOB_STATE};
use crate::world::Actor;

/// One queue or the other, behind the workload's calls.
#[derive(Clone)]
pub(super) enum Queue {
    Fenced(JobQueue<crate::net::SimConnection>),
    Naive(NaiveJobQueue<crate::net::SimConnection>),
}

/// A claim as the workload holds it.
pub(super) enum Held {
    Fenced(redis_primitives::Claim),
    Naive(String),
}

impl Held {
    pub(super) fn id(&self) -> &str {
        match self {
            Held::Fenced(c) => c.id(),
            Held::Naive(id) => id,
        }
    }

    fn attempt(&self) -> Option<u64> {
        match self {
            Held::Fenced(c) => Some(c.attempt().get()),
            Held::Naive(_) => None,
        }
    }
}

pub(super) fn queue(actor: &Actor, variant: JobQueueVariant) -> Result<Queue, redis_primitives::Error> {
    let conn = actor.connection(0);
    Ok(match variant {
        JobQueueVariant::Fenced => Queue::Fenced(JobQueue::new(conn, QUEUE)?),
        JobQueueVariant::Naive => Queue::Naive(NaiveJobQueue::new(conn, QUEUE)?),
    })
}

/// One recorded enqueue of `id` with its payload; whether it was added.
pub(super) async fn enqueue(actor: &Actor, q: &Queue, id: &str) -> bool {
    let call = JobCall { id: Some(id.to_string()), ..JobCall::default() };
    let op = actor.call(JOB_ENQUEUE, record(ENQUEUE, call.clone()));
    let payload = payload_of(id);
    let r = match q {
        Queue::Fenced(q) => q.enqueue(id, &payload).await.map(|e| e == Enqueued::Added),
        Queue::Naive(q) => q.enqueue(id, &payload).await.map(|()| true),
    };
    match r {
        Ok(added) => {
            actor.ok(op, record(ENQUEUE, JobCall { accepted: Some(added), ..call }));
            added
        }
        Err(e) => {
            actor.errored(op, record(ENQUEUE, call), &e);
            false
        }
    }
}

/// One recorded claim; `None` when nothing was claimed or it failed.
pub(super) async fn claim(actor: &Actor, q: &Queue, lease: Ttl) -> Option<Held> {
    let op = actor.call(JOB_CLAIM, record(CLAIM, JobCall::default()));
    let sent = tokio::time::Instant::now();
    let claimed = match q {
        Queue::Fenced(q) => q.claim(lease).await.map(|c| c.map(Held::Fenced)),
        Queue::Naive(q) => q.claim().await.map(|c| c.map(|(id, _)| Held::Naive(id))),
    };
    match claimed {
        Ok(Some(h)) => {
            let (lease_until, payload) = match &h {
                Held::Fenced(c) => {
                    (Some(sim_ms(c.lease_until_ms())), Some(String::from_utf8_lossy(c.payload()).into_owned()))
                }
                Held::Naive(_) => (None, None),
            };
            let call = JobCall {
                id: Some(h.id().to_string()),
                attempt: h.attempt(),
                lease_until,
                payload,
                ..JobCall::default()
            };
            actor.ok(op, record(CLAIM, call));
            if let Held::Fenced(c) = &h {
                check_deadline(actor, "claim", c, sent, lease);
                check_trust(actor, c);
            }
            Some(h)
        }
        Ok(None) => {
            actor.ok(op, record(CLAIM, JobCall::default()));
            None
        }
        Err(e) => {
            actor.errored(op, record(CLAIM, JobCall::default()), &e);
            None
        }
    }
}

/// A claim's clock starts when its request is sent (the claim's or the
/// confirmed extend's), and its local deadline is that instant plus the
/// lease minus the drift allowance of `JobQueue::new` (`Drift::DEFAULT`),
/// exactly, as `lease-views` judges a `Lock` lease. A deadline taken from
/// the reply or without the allowance trusts the claim a little too long,
/// which only an unlucky reap would otherwise show. Recorded (as a
/// `configuration` read-back) only when it says otherwise.
fn check_deadline(actor: &Actor, after: &str, c: &redis_primitives::Claim, sent: tokio::time::Instant, lease: Ttl) {
    let lease_ms = lease.as_millis();
    let want_ns = Allowance::DEFAULT.deadline_ns(0, lease_ms);
    let got_ns = c.local_deadline().saturating_duration_since(sent).as_nanos();
    if c.sent_at() != sent || c.local_deadline() < sent || got_ns != want_ns {
        let got = format!(
            "sent {}ms after the {after} was sent, deadline {got_ns} ns after it",
            c.sent_at().saturating_duration_since(sent).as_millis()
        );
        let want =
            format!("sent when the {after} was sent, deadline {want_ns} ns after it (lease {lease_ms} ms − drift)");
        // The library reads the clock for its send a moment after the
        // worker did: the same instant in the simulation, not live.
        let sent_apart = c.sent_at().saturating_duration_since(sent).max(sent.saturating_duration_since(c.sent_at()));
        let deadline_apart = core::time::Duration::from_nanos(got_ns.abs_diff(want_ns) as u64);
        actor.configured_reading(
            "Claim",
            &[("local_deadline", got, want)],
            &["local_deadline"],
            sent_apart.max(deadline_apart),
        );
    }
}

/// A claim is trusted until its local deadline and not from then on: read
/// now, and again at the deadline (or later, if the worker was paused)
/// beside the workload, which must not wait for it. Recorded (as a
/// `configuration` read-back) only when it says otherwise.
fn check_trust(actor: &Actor, c: &redis_primitives::Claim) {
    let report = |actor: &Actor, c: &redis_primitives::Claim, want: bool| {
        if c.is_trusted() != want {
            let at = format!("{}ms, local deadline {}ms", actor.now(), actor.millis_of(c.local_deadline()));
            actor.configured("Claim", &[("is_trusted", c.is_trusted().to_string(), format!("{want} at {at}"))]);
        }
    };
    report(actor, c, tokio::time::Instant::now() < c.local_deadline());
    let (a, c) = (actor.clone(), c.clone());
    drop(actor.spawn(async move {
        tokio::time::sleep_until(c.local_deadline()).await;
        report(&a, &c, false);
    }));
}

/// One recorded completion.
pub(super) async fn complete(actor: &Actor, q: &Queue, held: &Held) {
    let call = JobCall { id: Some(held.id().to_string()), attempt: held.attempt(), ..JobCall::default() };
    let op = actor.call(JOB_COMPLETE, record(COMPLETE, call.clone()));
    let r = match (q, held) {
        (Queue::Fenced(q), Held::Fenced(c)) => q.complete(c).await.map(|c| match c {
            Completion::Accepted => (true, None),
            Completion::Rejected { current_attempt, state } => {
                (false, Some(format!("attempt {} {}", current_attempt.map_or(0, |a| a.get()), state_name(state))))
            }
        }),
        (Queue::Naive(q), h) => q.complete(h.id()).await.map(|()| (true, None)),
        (Queue::Fenced(_), Held::Naive(_)) => return,
    };
    match r {
        Ok((accepted, state)) => actor.ok(op, record(COMPLETE, JobCall { accepted: Some(accepted), state, ..call })),
        Err(e) => actor.errored(op, record(COMPLETE, call), &e),
    }
}

/// One recorded reap; the ids it returned.
pub(super) async fn reap(actor: &Actor, q: &Queue) -> Option<Vec<String>> {
    let op = actor.call(JOB_REAP, record(REAP, JobCall::default()));
    let r = match q {
        Queue::Fenced(q) => q.reap().await,
        Queue::Naive(q) => q.reap().await,
    };
    match r {
        Ok(ids) => {
            actor.ok(op, record(REAP, JobCall { ids: ids.clone(), ..JobCall::default() }));
            Some(ids)
        }
        Err(e) => {
            actor.errored(op, record(REAP, JobCall::default()), &e);
            None
        }
    }
}

pub(super) async fn extend(actor: &Actor, q: &Queue, held: &mut Held, lease: Ttl) {
    let (Queue::Fenced(q), Held::Fenced(c)) = (q, held) else { return };
    let call = JobCall {
        id: Some(c.id().to_string()),
        attempt: Some(c.attempt().get()),
        lease_ms: Some(lease.as_millis()),
        ..JobCall::default()
    };
    let op = actor.call(JOB_EXTEND, record(EXTEND, call.clone()));
    let sent = tokio::time::Instant::now();
    match q.extend(c, lease).await {
        Ok(extended) => {
            let lease_until = extended.then(|| sim_ms(c.lease_until_ms()));
            actor.ok(op, record(EXTEND, JobCall { accepted: Some(extended), lease_until, ..call }));
            if extended {
                check_deadline(actor, "extend", c, sent, lease);
                check_trust(actor, c);
            }
        }
        Err(e) => actor.errored(op, record(EXTEND, call), &e),
    }
}

/// One recorded state read of `id` (the auditor's and the workers' alike;
/// the naive twin has no state to read): the state it read, `None` when the
/// job was unknown or the read failed.
pub(super) async fn state(actor: &Actor, q: &JobQueue<crate::net::SimConnection>, id: &str) -> Option<JobState> {
    let call = JobCall { id: Some(id.to_string()), ..JobCall::default() };
    let op = actor.call(JOB_STATE, record(STATE, call.clone()));
    match q.state(id).await {
        Ok(s) => {
            actor.ok(op, record(STATE, JobCall { state: Some(state_name(s)), ..call }));
            s
        }
        Err(e) => {
            actor.errored(op, record(STATE, call), &e);
            None
        }
    }
}
