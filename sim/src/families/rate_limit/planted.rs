//! Limiter keys planted with what the scripts never write, and with the
//! extremes they do write: what faults never plant.
//!
//! Random faults never corrupt a key, so without this the scripts' checks
//! of what they read would go unjudged, and their mutants unkilled. The
//! planter (a task of client 0, for the two correct limiters, on a
//! connection whose error replies are expected) writes each
//! [`PlantedState`](super::planted_state::PlantedState) at a key of its own (`planted-N`) with raw commands,
//! calls `check_at`, reads the key back (`DUMP`), deletes it, and records a
//! [`RateLimitOp::Planted`] that `checks/planted.rs` judges.

use super::limiter::{Limiter, Setup};
use super::op::RateLimitOp;
use super::planted_state::{PlantedAnswer, PlantedState};
use super::RateLimitVariant;
use crate::net::SimConnection;
use crate::world::Actor;
use redis_primitives::rate_limit::Decision;
use redis_primitives::Error;

/// Plants every state of `variant` in turn (see the module docs). A state
/// whose planting or read-back a fault cut short is recorded as far as it
/// got: an unknown answer or a key not read back is not judged.
pub(super) async fn plant_all(actor: Actor, variant: RateLimitVariant, limiter: Limiter, setup: Setup) {
    let mut conn = actor.connection_expecting_errors(0);
    for (n, &state) in PlantedState::of(variant).iter().enumerate() {
        let name = format!("planted-{n}");
        let Ok(Some(key)) = limiter.key(&name) else { return };
        let Some(at) = state.pinned(setup.epoch_ms + actor.now(), setup.window_ms) else { continue };
        let mut args = vec![if state.is_hash() { "HSET" } else { "ZADD" }.to_string(), key.clone()];
        args.extend(state.fields(at, setup.max, setup.window_ms));
        if raw(&mut conn, &args).await.is_err() {
            actor.note(format!("rate-limit planted state {state:?}: planting failed, skipped"));
            continue;
        }
        let before = dump(&mut conn, &key).await;
        let answer = answer(&key, limiter.check(&name, Some(at)).await);
        let after = dump(&mut conn, &key).await;
        let unchanged = match (before, after) {
            (Ok(b), Ok(a)) => Some(a == b),
            _ => None,
        };
        let _ = raw(&mut conn, &["DEL".to_string(), key.clone()]).await;
        actor.observe(RateLimitOp::Planted { key, state, at_ms: at, window_ms: setup.window_ms, answer, unchanged });
    }
}

fn answer(key: &str, r: redis_primitives::Result<Decision>) -> PlantedAnswer {
    match r {
        Ok(d) => PlantedAnswer::Decided {
            admitted: d.is_allowed(),
            retry_after_ms: d.retry_after().map(|r| r.as_millis() as u64),
        },
        Err(e) if e.outcome_is_unknown() => PlantedAnswer::Unknown,
        Err(Error::CorruptState { key: named, .. }) if named == key => PlantedAnswer::Corrupt { key: named },
        Err(e) => PlantedAnswer::Failed { error: e.to_string() },
    }
}

async fn raw(conn: &mut SimConnection, args: &[String]) -> redis::RedisResult<()> {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query_async::<redis::Value>(conn).await.map(|_| ())
}

/// The key's exact bytes and whether it expires: what "left as it was" is.
async fn dump(conn: &mut SimConnection, key: &str) -> redis::RedisResult<(Option<Vec<u8>>, bool)> {
    let bytes: Option<Vec<u8>> = redis::cmd("DUMP").arg(key).query_async(conn).await?;
    let pttl: i64 = redis::cmd("PTTL").arg(key).query_async(conn).await?;
    Ok((bytes, pttl >= 0))
}
