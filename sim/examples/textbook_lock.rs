//! The careful textbook lock, and the write it cannot stop: a hand-written
//! `SET NX PX` lock, used as the textbooks say (write only while the
//! validity computed from the reply lasts; release by compare-and-delete),
//! guarding a [`Ledger`]. No built-in lock checker convicts it: every grant
//! is exclusive and every holder stops trusting its lease in time. The
//! writes are another matter. A write *sent* in time can be held on the way
//! (a `hold` fault on the link) and *run* after the lease ended and a newer
//! holder was granted; the bridge's execution log shows when each append
//! ran, and `late-writes` (`checker::late_writes`) convicts it, with no
//! token and whatever the client learnt of the write's outcome.
//!
//! ```sh
//! cargo run --release -p redis-primitives-sim --example textbook_lock             # seeds 0..100
//! cargo run --release -p redis-primitives-sim --example textbook_lock -- --seeds 1000
//! cargo run --release -p redis-primitives-sim --example textbook_lock -- --replay 7
//! cargo run --release -p redis-primitives-sim --example textbook_lock -- --fenced   # clean
//! ```
//!
//! `--fenced` appends through [`Ledger::append_if_held`], a script that
//! writes only while the lock key still holds the writer's owner value: a
//! held append that arrives late is refused at the server, and the same
//! seeds are clean.
//!
//! The lock records its own operation type ([`LockCall`], an
//! [`Operation`]): that is how any code under test enters the history.
//!
//! Exit status: 0 when no seed violated anything (the expected result with
//! `--fenced`), 1 when one did (the expected result without), 2 on a
//! set-up error.

use core::fmt;
use core::time::Duration;
use std::process::ExitCode;

use rand::Rng;
use redis::aio::ConnectionLike;
use redis_primitives_sim::checker::late_writes::{self, Grant};
use redis_primitives_sim::{
    explore_with, Actor, ActorResult, CheckError, Event, EventKind, ExploreOptions, FaultClass, FaultSpace, Jobs,
    Ledger, Millis, Operation, Outcome, Progress, Servers, SetupError, Trial, World, WorldConfig,
};
use serde::Serialize;

const LOCK: &str = "textbook-lock";
const TTL_MS: u64 = 200;
const RUN_MS: Millis = 3000;
const CLIENTS: u32 = 3;
/// Clock drift the client allows for: 1 % of the TTL plus 2 ms, as the
/// Redlock paper's validity rule has it.
const DRIFT_MS: u64 = TTL_MS / 100 + 2;
/// When the auditor reads the ledger: after the run and its quiet tail.
const AUDIT_MS: Millis = RUN_MS + 1500;

/// The lock under test: a textbook single-instance Redis lock.
struct TextbookLock<C> {
    conn: C,
}

impl<C: ConnectionLike + Clone> TextbookLock<C> {
    /// `SET key owner NX PX ttl`; on success, how long the lease may be
    /// trusted from now: the TTL less the round trip and the drift.
    async fn acquire(&self, owner: &str) -> redis::RedisResult<Option<Duration>> {
        let mut conn = self.conn.clone();
        let sent = tokio::time::Instant::now();
        let set: Option<String> =
            redis::cmd("SET").arg(LOCK).arg(owner).arg("NX").arg("PX").arg(TTL_MS).query_async(&mut conn).await?;
        let validity = Duration::from_millis(TTL_MS - DRIFT_MS).checked_sub(sent.elapsed());
        Ok(set.and(validity))
    }

    /// Compare-and-delete: only our own lease.
    async fn release(&self, owner: &str) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let script = redis::Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
        );
        script.key(LOCK).arg(owner).invoke_async::<i64>(&mut conn).await.map(|_| ())
    }
}

/// What the code under test records: its own operation type.
#[derive(Debug, Clone, PartialEq, Serialize)]
enum LockCall {
    /// An acquire; on `Ok`, the validity it computed.
    Acquire { owner: String, validity_ms: Option<u64> },
    /// An append to the ledger.
    Append { entry: String },
    /// A compare-and-delete release.
    Release { owner: String },
    /// The auditor's read of the whole ledger, after the run.
    Audit { entries: Vec<String> },
}

impl fmt::Display for LockCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockCall::Acquire { owner, validity_ms: Some(v) } => write!(f, "acquire as {owner}: valid {v}ms"),
            LockCall::Acquire { owner, validity_ms: None } => write!(f, "acquire as {owner}"),
            LockCall::Append { entry } => write!(f, "append {entry}"),
            LockCall::Release { owner } => write!(f, "release as {owner}"),
            LockCall::Audit { entries } => write!(f, "audit: {} entries", entries.len()),
        }
    }
}

impl Operation for LockCall {
    fn verb(&self) -> &'static str {
        match self {
            LockCall::Acquire { .. } => "acquire",
            LockCall::Append { .. } => "append",
            LockCall::Release { .. } => "release",
            LockCall::Audit { .. } => "audit",
        }
    }
}

/// One client: acquire; append while the validity lasts (checked before
/// every send); release; again until the run ends.
async fn client(actor: Actor, ledger: Ledger, fenced: bool) -> ActorResult {
    let lock = TextbookLock { conn: actor.connection(0) };
    let mut conn = actor.connection(0);
    let mut rng = actor.rng();
    let mut attempt = 0u64;
    while actor.now() < RUN_MS {
        attempt += 1;
        let owner = format!("{}-{attempt}", actor.name());
        let id = actor.invoke(LockCall::Acquire { owner: owner.clone(), validity_ms: None });
        let until = match lock.acquire(&owner).await {
            Ok(Some(validity)) => {
                let ms = validity.as_millis() as u64;
                actor.ok(id, LockCall::Acquire { owner: owner.clone(), validity_ms: Some(ms) });
                tokio::time::Instant::now() + validity
            }
            Ok(None) => {
                actor.fail(id, LockCall::Acquire { owner: owner.clone(), validity_ms: None });
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
                continue;
            }
            Err(_) => {
                actor.info(id, LockCall::Acquire { owner: owner.clone(), validity_ms: None });
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
                continue;
            }
        };
        let mut n = 0;
        while tokio::time::Instant::now() < until && n < 5 {
            n += 1;
            let entry = format!("{owner}/{n}");
            let id = actor.invoke(LockCall::Append { entry: entry.clone() });
            let appended = if fenced {
                ledger.append_if_held(&mut conn, LOCK, &owner, &entry).await
            } else {
                ledger.append(&mut conn, &entry).await.map(|_| true)
            };
            match appended {
                Ok(true) => actor.ok(id, LockCall::Append { entry }),
                // Refused at the server: the lease was gone.
                Ok(false) => {
                    actor.fail(id, LockCall::Append { entry });
                    break;
                }
                // Timed out: it may still run. A careful client stops.
                Err(_) => {
                    actor.info(id, LockCall::Append { entry });
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(10..60))).await;
        }
        let id = actor.invoke(LockCall::Release { owner: owner.clone() });
        match lock.release(&owner).await {
            Ok(()) => actor.ok(id, LockCall::Release { owner }),
            Err(_) => actor.info(id, LockCall::Release { owner }),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
    }
    Ok(())
}

/// Reads the whole ledger once the run is over: what landed.
async fn auditor(actor: Actor, ledger: Ledger) -> ActorResult {
    tokio::time::sleep(Duration::from_millis(AUDIT_MS)).await;
    let mut conn = actor.connection(0);
    let id = actor.invoke(LockCall::Audit { entries: Vec::new() });
    let entries = ledger.entries(&mut conn).await?;
    actor.ok(id, LockCall::Audit { entries });
    Ok(())
}

/// What the auditor read (empty if it never completed).
fn audited(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .rev()
        .find_map(|e| match (e.op.family::<LockCall>(), e.kind) {
            (Some(LockCall::Audit { entries }), EventKind::Ok) => Some(entries.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The grants the history shows: each acquire that came back `Ok`, alive
/// at the server at most `TTL_MS` after its reply.
fn grants(events: &[Event]) -> Vec<Grant> {
    let mut asked = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match (e.op.family::<LockCall>(), e.kind) {
            (Some(LockCall::Acquire { .. }), EventKind::Invoke) => {
                asked.insert(e.op_id, e.time);
            }
            (Some(LockCall::Acquire { validity_ms: Some(_), .. }), EventKind::Ok) => {
                let asked = asked.remove(&e.op_id).unwrap_or(e.time);
                let expires_by = Some(e.time + TTL_MS);
                out.push(Grant { process: e.process.clone(), asked, granted: e.time, expires_by });
            }
            _ => {}
        }
    }
    out
}

/// One seed: three clients, faults on their links drawn from the seed,
/// the ledger's landed writes judged against the grants.
fn run(servers: &mut Servers, seed: u64, fenced: bool) -> Result<Outcome, SetupError> {
    let ledger = Ledger::new("ledger");
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    for i in 0..CLIENTS {
        let ledger = ledger.clone();
        world.actor(format!("client-{i}"), move |actor| client(actor, ledger, fenced));
    }
    // Registered after the clients, so no fault (drawn for the first
    // `CLIENTS` actors) lands on it.
    let audit = ledger.clone();
    world.actor("auditor", move |actor| auditor(actor, audit));
    let faults = FaultSpace {
        count: (1, 3),
        duration_ms: (100, 600),
        ..FaultSpace::new(&[FaultClass::Hold, FaultClass::ClientPause, FaultClass::Latency], 3)
    }
    .within(RUN_MS / 10, RUN_MS * 9 / 10);
    world.nemesis(faults.schedule(seed, CLIENTS, 1));
    let run = world.run()?;
    let mut outcome = Outcome::from_run(&run);
    let landed = ledger.writes(&run.executions[0], &audited(&outcome.history));
    outcome.violations.extend(late_writes::check(&landed, &grants(&outcome.history)));
    Ok(outcome)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value =
        |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(|v| v.parse::<u64>());
    let fenced = args.iter().any(|a| a == "--fenced");
    let flag = if fenced { " --fenced" } else { "" };
    let trial = Trial::new("textbook-lock", move |servers, seed| run(servers, seed, fenced)).replay_with(move |seed| {
        format!("cargo run --release -p redis-primitives-sim --example textbook_lock -- --replay {seed}{flag}")
    });
    let seeds = match (value("--replay"), value("--seeds")) {
        (Some(Ok(seed)), _) => {
            return match redis_primitives_sim::replay(&trial, seed) {
                Ok(_) => ExitCode::SUCCESS,
                Err(CheckError::Violated { .. }) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("textbook_lock: {e}");
                    ExitCode::from(2)
                }
            };
        }
        (None, None) => 100,
        (None, Some(Ok(n))) if n > 0 => n,
        _ => {
            eprintln!("textbook_lock: --replay SEED or --seeds N (a whole number above 0)");
            return ExitCode::from(2);
        }
    };
    let options = ExploreOptions::new(0, seeds).jobs(Jobs::available()).progress(Progress::for_stderr());
    let ex = match explore_with(&trial, &mut Servers::new(), options) {
        Ok(ex) => ex,
        Err(e) => {
            eprintln!("textbook_lock: {e}");
            return ExitCode::from(2);
        }
    };
    for s in ex.violating.iter().take(3) {
        println!("seed {}: {}", s.seed, s.violations[0]);
        println!("  replay: {}", s.replay);
    }
    println!("{} of {seeds} seeds had a late write", ex.violating.len());
    if ex.violating.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
