//! A careful textbook lock (`SET NX PX`, validity from the reply, compare-and-delete) and the write it cannot
//! stop: sent while the lease is valid, held on the link, run at the server after the lease is over. The
//! late-writes judge finds it in the server's log (exit 1, a replay command, a timeline page). `--fenced` writes
//! through the library's `FencedStore` with a token the lock takes by `INCR` in the same transaction as its `SET`
//! (from a second round trip, held like the writes, it could come after a newer holder's): the store refuses stale
//! tokens, so no write lands after a newer holder's (`Rule::Fenced`). `docs/guide/harness.md` walks through it.
//! Run: `cargo run --release -p redis-primitives-sim --example textbook_lock [-- --fenced --seeds 1000]`.
use core::time::Duration;
use rand::Rng;
use redis_primitives::{FencedStore, FencingToken, WriteOutcome::Accepted};
use redis_primitives_sim::late_writes::{LeaseOp, Rule};
use redis_primitives_sim::{fenced_writes, judge_late_writes, Actor, ActorResult, FaultClass::*, FaultSpace, Ledger};
use redis_primitives_sim::{Outcome, Servers, SetupError, SimConnection, Trial, World, WorldConfig};
use tokio::time::{sleep, Instant};

/// Where the lock reads time: `Instant::now`, the simulation's (`sim/tests/harness` swaps in a real clock).
pub type Clock = fn() -> Instant;
const TTL_MS: u64 = 200;
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// The lock: if granted, how long to trust it (the TTL less the round trip and 1 % + 2 ms of drift) and a token.
async fn acquire(conn: &mut SimConnection, owner: &str, now: Clock) -> redis::RedisResult<Option<(Duration, u64)>> {
    let (sent, mut tx) = (now(), redis::pipe());
    tx.atomic().cmd("SET").arg("lock").arg(owner).arg("NX").arg("PX").arg(TTL_MS).cmd("INCR").arg("lock:token");
    let (set, token): (Option<String>, u64) = tx.query_async(conn).await?;
    Ok(set.and(Duration::from_millis(TTL_MS - TTL_MS / 100 - 2).checked_sub(now() - sent)).map(|v| (v, token)))
}

/// One client: acquire; write (at most 5 times) while the validity lasts; release; again.
async fn client(actor: Actor, fenced: bool, now: Clock) -> ActorResult {
    let (mut conn, mut rng, store) = (actor.connection(0), actor.rng(), FencedStore::new(actor.connection(0)));
    for attempt in (0..).take_while(|_| actor.now() < 3000) {
        sleep(Duration::from_millis(rng.random_range(5..40))).await;
        let owner = format!("{}-{attempt}", actor.name());
        let id = actor.invoke(LeaseOp::acquire(&owner, TTL_MS));
        let Ok(Some((validity, token))) = acquire(&mut conn, &owner, now).await else {
            actor.info(id, LeaseOp::acquire(&owner, TTL_MS)); // not granted, or no reply: try again
            continue;
        };
        actor.ok(id, LeaseOp::granted(&owner, TTL_MS, validity));
        let until = now() + validity;
        for entry in (0..5).map(|n| format!("{owner}/{n}")).take_while(|_| now() < until) {
            let id = actor.invoke(LeaseOp::write(&entry));
            let landed = match fenced {
                true => store.write("ledger", &entry, FencingToken::new(token)).await.map(|w| w == Accepted).ok(),
                false => Ledger::new("ledger").append(&mut conn, &entry).await.map(|_| true).ok(),
            };
            match landed {
                Some(true) => actor.ok(id, LeaseOp::write(&entry)),
                Some(false) => actor.fail(id, LeaseOp::write(&entry)), // refused: a newer token has written
                None => actor.info(id, LeaseOp::write(&entry)),        // no reply: it may still land
            }
            sleep(Duration::from_millis(rng.random_range(10..60))).await;
        }
        let _: redis::RedisResult<i64> =
            redis::Script::new(RELEASE).key("lock").arg(&owner).invoke_async(&mut conn).await;
    }
    Ok(())
}

/// One seed: three clients through held requests, pauses and latency, then the one judge call.
pub fn world(servers: &mut Servers, seed: u64, fenced: bool, now: Clock) -> Result<Outcome, SetupError> {
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    for i in 0..3 {
        world.actor(format!("client-{i}"), move |actor| client(actor, fenced, now));
    }
    let faults =
        FaultSpace { count: (1, 3), duration_ms: (100, 600), ..FaultSpace::new(&[Hold, ClientPause, Latency], 3) };
    world.nemesis(faults.within(300, 2700).schedule(seed, 3, 1));
    let run = world.run()?;
    let writes = if fenced { fenced_writes(&run, "fenced:ledger") } else { Ledger::new("ledger").writes(&run) };
    Ok(judge_late_writes(&run, &writes, if fenced { Rule::Fenced } else { Rule::Lease }))
}

fn main() -> std::process::ExitCode {
    let fenced = std::env::args().any(|a| a == "--fenced");
    let trial = Trial::new("textbook-lock", move |s, seed| world(s, seed, fenced, Instant::now));
    redis_primitives_sim::run_main(&trial, 100)
}
