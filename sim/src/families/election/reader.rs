//! The reader: a process beside the nodes that runs the election probe
//! (and, on `election-failover-acknowledged`, the acknowledgement probe)
//! while they campaign, then reads the resource once every node has
//! stopped.

use core::time::Duration;
use redis_primitives::{Acknowledgement, FencedStore, FencingToken, WriteOutcome};
use tokio::time::sleep;

use super::{probe, RESOURCE};
use crate::api::FENCED_STORE_READ;
use crate::history::{Millis, Op};
use crate::world::Actor;

/// Reads the resource once every node has stopped: `no-stale-overwrite`
/// then judges the final value against every accepted write.
pub(super) async fn final_read(
    actor: Actor,
    read_at: u64,
    faults: Vec<(Millis, Millis)>,
    ack_at: Option<Millis>,
) -> crate::world::ActorResult {
    // The acknowledgement probe: a process of its own on the reader's host,
    // at the schedule's moment (a replication cut nothing else disturbs).
    let ack = ack_at.map(|at| {
        let prober = actor.alias("ack-prober");
        actor.spawn(async move {
            let ack = Acknowledgement::new(1, Duration::from_millis(crate::families::lock::ACK_TIMEOUT_MS))?;
            let store = FencedStore::new(prober.connection(0)).acknowledged(ack);
            let what = "Acknowledged FencedStore::write";
            crate::probes::ack::probe(&prober, at, crate::families::lock::ACK_TIMEOUT_MS, what, || async {
                let written = store.write("ack-probe", b"v", FencingToken::new(1)).await?;
                Ok(written == WriteOutcome::Accepted)
            })
            .await
            .map(|_refused| ())
        })
    });
    // Idle until the read: the election probe runs meanwhile, on names of
    // its own.
    probe::probe(&actor, 0, &faults).await?;
    if let Some(ack) = ack {
        ack.await??;
    }
    let now = actor.now();
    if read_at > now {
        sleep(Duration::from_millis(read_at - now)).await;
    }
    let op = |value, token| Op::Read { key: RESOURCE.into(), value, token };
    let id = actor.call(FENCED_STORE_READ, op(None, None));
    match FencedStore::new(actor.connection(0)).read(RESOURCE).await {
        Ok(Some(s)) => actor.ok(id, op(Some(String::from_utf8_lossy(&s.value).into_owned()), Some(s.token.get()))),
        Ok(None) => actor.ok(id, op(None, None)),
        Err(e) => actor.errored(id, op(None, None), &e),
    }
    Ok(())
}
