//! Redlock scenarios: `redlock`, `redlock-no-validity`, `redlock-clock-jump`.
//!
//! Five bridged redis-servers are the independent masters; three client
//! actors contend for one name with the production
//! [`redis_primitives::redlock::Redlock`] (or the broken
//! [`redis_primitives::naive::NaiveRedlock`]): TTL 300 ms, default drift.
//! Every library call is recorded with `actor.call` (`Redlock::connect`,
//! `acquire`, `acquire_with_retry`, `extend`, `release`) and, on completion,
//! with its round: each master's answer (`y`/`n`/`e`/`t`, `u` for a timeout
//! reported as an error), the elapsed time, the validity and `valid_until`,
//! the refusal reason and the cleanup. What user code decides with (an
//! `Acquisition`'s and an `Extension`'s accessors, a lease's votes and
//! quorum, a refusal's `validity_left`, a timed-out vote's latency) is read
//! after every call and recorded only when it disagrees.
//! Beside its workload, client-0 runs the refused-extend probe
//! (`refusal.rs`: a lease whose key was overwritten on a majority,
//! extended, must stop being trusted) and then the validation probe
//! (`validation.rs`): bad configurations, one master listed twice, and a
//! Redlock with a drift and an owner source of its own, whose settings,
//! commands per master and lease it reads back. Beside both, the
//! trust-edge probe (`trust.rs`) reads a lease of its own at its
//! `valid_until` and extends it there.
//!
//! Checkers: `redlock-mutual-exclusion` (no two clients inside their
//! validity, extensions included), `redlock-validity` (validity ≤ TTL −
//! elapsed − drift, no extension of an expired lease, justified too-slow
//! refusals), `redlock-votes` (quorum for grants and extensions, no
//! no-majority refusal with a majority, each yes/no consistent with the keys
//! a master can hold), `redlock-rounds` (every master asked, no round past
//! the per-master timeout, no master left unverified by `connect` on a link
//! no fault touched) and, in `redlock`, `liveness` after the faults.
//!
//! - `redlock`: client-0 waits up to 299 ms per master, the others 80 ms.
//!   Phase 1 (0–1.5 s) aims at the elapsed-time gate: client-0's links are
//!   slow (100–130 ms each way), or one master answers it in 280–300 ms, so
//!   a round leaves a few ms of validity or none. Phase 2 (≈1.5–1.9 s): two
//!   masters, then three, are cut off from every client (a minority must
//!   still grant, a majority must refuse acquires and extends). Phase 3
//!   (1.9–2.35 s): generated faults under swarm testing; then a quiet tail
//!   in which some client must be granted within TTL + 299 ms + 300 ms of
//!   the last heal. Holders extend (in time, within 3 ms of the end of
//!   their validity, or after pausing themselves past it), release in time
//!   or late (after the validity, sometimes after the keys' TTL); clients
//!   1 and 2 sometimes wait through `acquire_with_retry`.
//! - `redlock-no-validity`: the client that ignores the elapsed time and
//!   trusts "TTL from the reply" (plain acquire–work–release): it trusts its
//!   lease for a round trip longer than the keys live, and another client
//!   takes them.
//! - `redlock-clock-jump`: the documented non-guarantee. Client-0 reaches
//!   only masters 0–2 (its links to 3 and 4 are cut), wins those three;
//!   masters 0 and 1 then step their clocks forward past the TTL, so its keys
//!   there expire at once; client-1 wins 0, 1, 3 and 4 — a second majority
//!   while client-0's validity still runs.

use crate::api::{
    NAIVE_REDLOCK_ACQUIRE, NAIVE_REDLOCK_CONNECT, NAIVE_REDLOCK_RELEASE, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY,
    REDLOCK_CONNECT, REDLOCK_EXTEND, REDLOCK_RELEASE,
};
use crate::checker::key_lifetimes::{Life, Rule};
use crate::history::Millis;
use serde::{Deserialize, Serialize};

use crate::family::Family;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use core::time::Duration;
use rand::rngs::StdRng;
use rand::Rng;
use redis_primitives::naive::NaiveRedlock;
use redis_primitives::redlock::{
    Acquisition, Extension, MasterVote, Redlock, RedlockConfig, RedlockLease, Refusal, RefusalReason, Vote,
};
use redis_primitives::{Drift, OwnerSource, Retry, Ttl};
use tokio::time::Instant;

use crate::scenarios::{outcome_from, Outcome, Situation};
pub mod checks;
pub mod refusal;
pub mod trust;

use crate::history::{FaultRecord, Op, RedlockRound};
use crate::nemesis::{Fault, FaultClass, FaultKind, Schedule, Target};
use crate::net::{NetConfig, SimConnection};
use crate::servers::{Servers, SetupError};
use crate::space::FaultSpace;
use crate::stats::{self, Histograms};
use crate::world::{Actor, ActorResult, World, WorldConfig};
use checks::calls::{FaultWindow, Liveness, RedlockSetup};
use checks::{liveness, mutual_exclusion, rounds, validity, votes};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

/// The lock name.
pub const NAME: &str = "job";
const MASTERS: usize = 5;
const CLIENTS: usize = 3;
const TTL_MS: u64 = 300;
const MASTER_TIMEOUT_MS: u64 = 250;
const LENGTH_MS: u64 = 3000;
/// `redlock`: client-0 waits almost a TTL for each master (so one slow
/// master can eat the whole validity), the others 80 ms (so a partitioned
/// minority costs them 80 ms, not the lease).
const CORRECT_MASTER_TIMEOUTS_MS: [u64; CLIENTS] = [299, 80, 80];
/// `redlock` runs longer: a quiet tail for the liveness check.
const CORRECT_LENGTH_MS: u64 = 3300;
/// Slack of the liveness bound beyond a TTL and a round (ms): the pause
/// between attempts (≤ 30), a retry delay (≤ 40), round trips and the
/// cleanup of a refused attempt.
const LIVENESS_SLACK_MS: u64 = 300;

/// Situations the `redlock` scenario exists to reach.
pub const SITUATIONS: &[Situation] = &[
    Situation {
        name: "acquire-refused-validity-exhausted",
        meaning: "a majority said yes but the round ate the TTL: refused as too slow",
    },
    Situation {
        name: "minority-master-partitioned-still-granted",
        meaning: "granted although some master timed out or failed",
    },
    Situation {
        name: "majority-partitioned-refused",
        meaning: "refused for want of a majority while a majority of masters did not answer",
    },
    Situation { name: "extension-confirmed", meaning: "an extend was confirmed by a majority in time" },
    Situation {
        name: "extension-refused-after-expiry",
        meaning: "an extend started after the lease's validity was refused as expired",
    },
    Situation { name: "release-after-expiry", meaning: "a lease was released after its validity had passed" },
    Situation {
        name: "retry-acquired-after-contention",
        meaning: "acquire_with_retry got the lock on a later attempt",
    },
    Situation {
        name: "lease-expired-while-paused",
        meaning: "a holder paused past its validity and found its lease untrusted on resume",
    },
];

/// Which Redlock, under which faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The production Redlock.
    Correct,
    /// `NaiveRedlock`: no validity gate.
    NoValidity,
    /// The production Redlock under a clock step on two of five masters.
    ClockJump,
}

enum Client {
    Correct(Redlock<SimConnection>),
    Naive(NaiveRedlock<SimConnection>),
}

fn acquire_op(votes: Option<u32>, validity_ms: Option<u64>, round: Option<RedlockRound>) -> Op {
    Op::RedlockAcquire {
        name: NAME.into(),
        masters: MASTERS as u32,
        quorum: (MASTERS / 2 + 1) as u32,
        votes,
        validity_ms,
        round,
    }
}

fn letter(v: &MasterVote) -> char {
    match &v.vote {
        Vote::Yes => 'y',
        Vote::No => 'n',
        // A timeout the connection noticed, reported as an error instead
        // of `TimedOut` (`redlock-rounds` convicts it).
        Vote::Error(e) if matches!(**e, redis_primitives::Error::OutcomeUnknown { .. }) => 'u',
        Vote::Error(_) => 'e',
        Vote::TimedOut => 't',
    }
}

/// One letter per master in index order: `y`, `n`, `e`, `t` (`u`: an error
/// that says the request timed out). When the
/// library did not report exactly one answer per master, the answers are
/// listed as reported, so the length shows the gap (`redlock-rounds`).
fn answers(votes: &[MasterVote]) -> String {
    let mut sorted: Vec<&MasterVote> = votes.iter().collect();
    sorted.sort_by_key(|v| v.master);
    let complete = sorted.len() == MASTERS && sorted.iter().enumerate().all(|(i, v)| v.master == i);
    if complete {
        sorted.into_iter().map(letter).collect()
    } else {
        votes.iter().map(letter).collect()
    }
}

fn lease_round(actor: &Actor, lease: &RedlockLease) -> RedlockRound {
    RedlockRound {
        answers: answers(lease.masters()),
        elapsed_ms: Some(actor.millis_of(lease.acquired_at()).saturating_sub(actor.millis_of(lease.started_at()))),
        validity_ms: Some(lease.validity().as_millis() as u64),
        started_at: Some(actor.millis_of(lease.started_at())),
        valid_until: Some(actor.millis_of(lease.valid_until())),
        refusal: None,
        cleanup: None,
        trusted_after: None,
    }
}

fn refusal_round(r: &Refusal) -> RedlockRound {
    let reason = match r.reason {
        RefusalReason::NoMajority => "no-majority",
        RefusalReason::TooSlow => "too-slow",
        RefusalReason::Expired => "expired",
    };
    RedlockRound {
        answers: if r.masters.is_empty() { String::new() } else { answers(&r.masters) },
        elapsed_ms: Some(r.elapsed.as_millis() as u64),
        refusal: Some(reason.into()),
        cleanup: Some(answers(&r.cleanup)),
        ..RedlockRound::default()
    }
}

/// Redlock workload: clients contending for one Redlock over five masters
/// (`scenarios/redlock.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedlockPlan {
    /// When each client starts contending; one entry per client.
    pub starts: Vec<RedlockStart>,
    /// Lease TTL (ms).
    pub ttl_ms: u64,
    /// Per-master timeout of one acquire round (ms).
    pub master_timeout_ms: u64,
    /// Clients start no new attempt after this (ms).
    pub length_ms: Millis,
    /// Per-client override of `master_timeout_ms` (index = client); a
    /// client beyond the list uses `master_timeout_ms`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub master_timeouts_ms: Vec<u64>,
}

/// When a Redlock client starts contending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedlockStart {
    /// At this simulated time.
    At(Millis),
    /// Once client-0 has been granted the lock (or at `latest`), plus `delay`.
    AfterFirstGrant {
        /// Delay after the grant (ms).
        delay: Millis,
        /// Start at this time at the latest (ms).
        latest: Millis,
    },
}

/// TTL, this client's per-master timeout and end of attempts (ms) of one run.
#[derive(Debug, Clone, Copy)]
struct Timing {
    ttl_ms: u64,
    master_timeout_ms: u64,
    length_ms: u64,
}

/// The connection settings of a `redlock` client: the connection's own
/// response timeout fires 2 ms before the library's per-master timeout.
///
/// It must fire first: turmoil drops the data a partition catches without
/// retransmitting it, so a connection whose request was lost is dead for
/// good, and only the connection's own timeout discards it (the next request
/// reconnects). When the library's timeout wins instead, it drops the request
/// future and the dead connection stays in use after the partition heals
/// (with equal timeouts it wins: `TimeoutRace::ReplyFirst` yields before
/// declaring the timeout). The library's timeout still bounds everything
/// the connection's does not: connecting (500 ms) to an unreachable master.
fn net_for(master_timeout_ms: u64) -> NetConfig {
    let net = NetConfig::default();
    NetConfig { response_timeout: Duration::from_millis(master_timeout_ms.saturating_sub(2).max(1)), ..net }
}

async fn client(
    actor: Actor,
    variant: Variant,
    start: RedlockStart,
    first_grant: Arc<AtomicBool>,
    timing: Timing,
) -> ActorResult {
    let masters: Vec<SimConnection> = match variant {
        Variant::Correct => (0..MASTERS).map(|i| actor.connection_with(i, net_for(timing.master_timeout_ms))).collect(),
        _ => (0..MASTERS).map(|i| actor.connection(i)).collect(),
    };
    let config = RedlockConfig::new(Ttl::from_millis(timing.ttl_ms)?)
        .master_timeout(Duration::from_millis(timing.master_timeout_ms))
        .owners(OwnerSource::seeded(actor.seed()));
    let connect_op = |unverified| Op::RedlockConnect { masters: MASTERS as u32, unverified };
    let (api, client) = match variant {
        Variant::NoValidity => (NAIVE_REDLOCK_CONNECT, None),
        _ => (REDLOCK_CONNECT, Some(())),
    };
    // The validation and refused-extend probes run beside client-0's
    // workload, on connections of its own (the same links, so the same
    // faults): their waits on slow links must not take phase 1's time from
    // client-0's rounds.
    let probe = (variant == Variant::Correct && actor.index() == 0).then(|| {
        let own: Vec<SimConnection> =
            (0..MASTERS).map(|i| actor.connection_with(i, net_for(timing.master_timeout_ms))).collect();
        let a = actor.clone();
        // The trust-edge probe runs beside the others, on the same
        // connections: it tries until it gets a clean edge, which must not
        // take their time.
        let links = own.clone();
        let trust =
            actor.spawn(async move { trust::probe(&a, &links, timing.master_timeout_ms, timing.length_ms).await });
        let a = actor.clone();
        actor.spawn(async move {
            // One Redlock for the refusal probes; the timed-out one connects
            // anew only when a fault failed the first handshake.
            let timeout = timing.master_timeout_ms;
            let r = refusal::connect(&a, &own, timeout).await?;
            if let Some(r) = &r {
                refusal::refused_extend(&a, r, &own, timing.length_ms).await?;
            }
            crate::scenarios::validation::redlock(&a, &own).await?;
            let r = match r {
                Some(r) => Some(r),
                None => refusal::connect(&a, &own, timeout).await?,
            };
            if let Some(r) = r {
                refusal::timed_out_majority(&a, &r).await?;
            }
            // Its panic is this task's, which the client reports.
            match trust.await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        })
    });
    let id = actor.call(api, connect_op(None));
    let client = match client {
        None => match NaiveRedlock::connect(masters, config).await {
            Ok(r) => {
                actor.ok(id, connect_op(Some(Vec::new())));
                Client::Naive(r)
            }
            Err(e) => {
                actor.fail(id, connect_op(None));
                return Err(e.into());
            }
        },
        Some(()) => match Redlock::connect(masters, config).await {
            Ok(r) => {
                let unverified = r.unverified_masters().into_iter().map(|m| m as u32).collect();
                actor.ok(id, connect_op(Some(unverified)));
                // drift_allowance: 10 ‰ of the TTL plus 2 ms (Drift::DEFAULT).
                let allowance = Duration::from_millis(timing.ttl_ms) / 100 + Duration::from_millis(2);
                let run_ids_read = r.run_ids().iter().filter(|id| id.is_some()).count();
                actor.configured(
                    "Redlock",
                    &[
                        ("len", r.len().to_string(), MASTERS.to_string()),
                        ("is_empty", r.is_empty().to_string(), "false".to_string()),
                        ("quorum", r.quorum().to_string(), (MASTERS / 2 + 1).to_string()),
                        ("ttl", r.ttl().to_string(), Ttl::from_millis(timing.ttl_ms)?.to_string()),
                        ("drift", format!("{:?}", r.drift()), format!("{:?}", redis_primitives::Drift::DEFAULT)),
                        ("drift factor_per_mille", r.drift().factor_per_mille().to_string(), "10".to_string()),
                        (
                            "drift constant",
                            format!("{:?}", r.drift().constant()),
                            format!("{:?}", Duration::from_millis(2)),
                        ),
                        ("drift_allowance", format!("{:?}", r.drift_allowance()), format!("{allowance:?}")),
                        (
                            "master_timeout",
                            format!("{:?}", r.master_timeout()),
                            format!("{:?}", Duration::from_millis(timing.master_timeout_ms)),
                        ),
                        ("key", r.key(NAME)?, format!("redlock:{{{NAME}}}")),
                        (
                            "run_ids read + unverified",
                            (run_ids_read + r.unverified_masters().len()).to_string(),
                            MASTERS.to_string(),
                        ),
                    ],
                );
                Client::Correct(r)
            }
            Err(e) => {
                actor.fail(id, connect_op(None));
                return Err(e.into());
            }
        },
    };
    let mut rng = actor.rng_for("redlock-work");
    match start {
        RedlockStart::At(at) => {
            let now = actor.now();
            if at > now {
                tokio::time::sleep(Duration::from_millis(at - now)).await;
            }
        }
        RedlockStart::AfterFirstGrant { delay, latest } => {
            while !first_grant.load(Ordering::Acquire) && actor.now() < latest {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }
    // Extends, retries, pauses and late releases: the production Redlock in
    // `redlock` only (the broken and non-guarantee variants keep the plain
    // acquire–work–release that their pinned seeds were found with).
    let full = variant == Variant::Correct;
    let attempts = NonZeroU32::new(6).unwrap_or(NonZeroU32::MIN);
    let Some(retry) =
        crate::scenarios::validation::retry(&actor, attempts, Duration::from_millis(10), Duration::from_millis(40))
    else {
        return Ok(());
    };
    let retry = retry.deadline(Duration::from_millis(400)).seeded(actor.seed_for("redlock-retry"));
    while actor.now() < timing.length_ms {
        match &client {
            Client::Correct(r) => correct_attempt(&actor, r, full, &retry, &mut rng, &first_grant, timing).await,
            Client::Naive(r) => naive_attempt(&actor, r, &mut rng, &first_grant).await,
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..=30))).await;
    }
    // Long finished by now; its error (a constructor refusing what it must
    // take) fails the run like the workload's own.
    if let Some(probe) = probe {
        probe.await.map_err(|e| format!("the validation probe panicked: {e}"))??;
    }
    Ok(())
}

/// Waits until `at` shifted by `shift_ms` (either way).
async fn sleep_until_shifted(at: Instant, shift_ms: i64) {
    let shift = Duration::from_millis(shift_ms.unsigned_abs());
    let when = if shift_ms >= 0 { at + shift } else { at.checked_sub(shift).unwrap_or(at) };
    tokio::time::sleep_until(when).await;
}

/// The accessors user code decides with, against the variant and the
/// masters' answers; reported (as a `configuration` read-back) only when
/// one differs, so a correct run's history does not grow with them.
fn check_accessors(actor: &Actor, a: &Acquisition) {
    let held = matches!(a, Acquisition::Held(_));
    let mut fields = vec![
        ("Acquisition::is_held", a.is_held().to_string(), held.to_string()),
        ("Acquisition::into_lease", a.clone().into_lease().is_some().to_string(), held.to_string()),
        ("Acquisition::refusal", a.refusal().is_some().to_string(), (!held).to_string()),
    ];
    match a {
        Acquisition::Held(lease) => {
            let yes = lease.masters().iter().filter(|v| v.vote.is_yes()).count();
            fields.push(("RedlockLease::votes", lease.votes().to_string(), yes.to_string()));
            fields.push(("RedlockLease::quorum", lease.quorum().to_string(), (MASTERS / 2 + 1).to_string()));
        }
        Acquisition::Refused(r) => {
            // TTL − elapsed − drift, when positive.
            let left = r.ttl.as_duration().checked_sub(r.elapsed).and_then(|d| d.checked_sub(r.drift));
            let left = left.filter(|d| !d.is_zero());
            fields.push(("Refusal::validity_left", format!("{:?}", r.validity_left()), format!("{left:?}")));
        }
    }
    actor.configured_if_differs("Acquisition", &fields);
}

/// One `acquire` (or `acquire_with_retry`) of the production Redlock, and
/// what the holder does with a grant.
async fn correct_attempt(
    actor: &Actor,
    r: &Redlock<SimConnection>,
    full: bool,
    retry: &Retry,
    rng: &mut StdRng,
    first_grant: &AtomicBool,
    timing: Timing,
) {
    let with_retry = full && actor.index() > 0 && rng.random_bool(0.3);
    let invoked = actor.now();
    let api = if with_retry { REDLOCK_ACQUIRE_WITH_RETRY } else { REDLOCK_ACQUIRE };
    let id = actor.call(api, acquire_op(None, None, None));
    let result = if with_retry { r.acquire_with_retry(NAME, retry).await } else { r.acquire(NAME).await };
    if let Ok(a) = &result {
        check_accessors(actor, a);
        match a {
            Acquisition::Held(lease) => check_timeouts(actor, r, &[lease.masters()]),
            Acquisition::Refused(refusal) => check_timeouts(actor, r, &[&refusal.masters, &refusal.cleanup]),
        }
    }
    let lease = match result {
        Ok(Acquisition::Held(lease)) => lease,
        Ok(Acquisition::Refused(refusal)) => {
            let missing = refusal.masters.iter().filter(|v| matches!(v.vote, Vote::TimedOut | Vote::Error(_))).count();
            match refusal.reason {
                RefusalReason::TooSlow => actor.reached("acquire-refused-validity-exhausted"),
                RefusalReason::NoMajority if missing > MASTERS / 2 => actor.reached("majority-partitioned-refused"),
                _ => {}
            }
            // A refusal is definite: every master was asked to drop our key.
            actor.fail(id, acquire_op(Some(refusal.votes as u32), None, Some(refusal_round(&refusal))));
            return;
        }
        Err(e) => {
            actor.note(format!("redlock acquire: {e}"));
            actor.errored(id, acquire_op(None, None, None), &e);
            return;
        }
    };
    let round = lease_round(actor, &lease);
    let until = round.valid_until.unwrap_or(invoked);
    if round.answers.contains(['t', 'e']) {
        actor.reached("minority-master-partitioned-still-granted");
    }
    if with_retry && round.started_at.is_some_and(|s| s > invoked) {
        actor.reached("retry-acquired-after-contention");
    }
    actor.ok(id, acquire_op(Some(lease.votes() as u32), Some(until.saturating_sub(invoked)), Some(round)));
    if actor.index() == 0 {
        first_grant.store(true, Ordering::Release);
    }
    if full {
        hold(actor, r, lease, id.0, rng, timing).await;
    } else {
        // Work until shortly before the end of the believed validity.
        sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
        release(actor, r, &lease, id.0).await;
    }
}

/// What a holder of the production Redlock does: extend (in time, at the
/// edge of its validity, or after a pause that outlived it), then release
/// (usually in time, sometimes after the validity or the keys' TTL).
async fn hold(
    actor: &Actor,
    r: &Redlock<SimConnection>,
    mut lease: RedlockLease,
    lease_id: u64,
    rng: &mut StdRng,
    timing: Timing,
) {
    let style = rng.random_range(0..100u32);
    if style < 12 {
        // A process pause (GC, suspended VM) right after the grant, longer
        // than the validity: on resume the lease must not be trusted, and
        // an extend must be refused.
        let d = lease.remaining().as_millis() as u64 + rng.random_range(5..=150);
        actor.observe(Op::Fault(FaultRecord::HolderPause { process: actor.name().to_string(), ms: d }));
        actor.pause().pause_for(Duration::from_millis(d));
        tokio::time::sleep(Duration::from_millis(1)).await;
        if !lease.is_trusted() {
            actor.reached("lease-expired-while-paused");
        }
        extend(actor, r, &mut lease, lease_id).await;
        release(actor, r, &lease, lease_id).await;
        return;
    }
    if style < 27 {
        // Extend within a few ms of the end of the validity, either side.
        sleep_until_shifted(lease.valid_until(), rng.random_range(-3..=3)).await;
        if !extend(actor, r, &mut lease, lease_id).await {
            release(actor, r, &lease, lease_id).await;
            return;
        }
    } else {
        for _ in 0..rng.random_range(0..=2u32) {
            sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=40)).await;
            if !extend(actor, r, &mut lease, lease_id).await {
                release(actor, r, &lease, lease_id).await;
                return;
            }
        }
    }
    if rng.random_bool(0.15) {
        // Release late: after the validity, sometimes after the keys' TTL.
        sleep_until_shifted(lease.valid_until(), rng.random_range(0..=timing.ttl_ms as i64 + 50)).await;
    } else {
        sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
    }
    release(actor, r, &lease, lease_id).await;
}

/// `Redlock::extend`, recorded; whether it was extended.
async fn extend(actor: &Actor, r: &Redlock<SimConnection>, lease: &mut RedlockLease, lease_id: u64) -> bool {
    let op = |round| Op::RedlockExtend { name: NAME.into(), lease: lease_id, round };
    let id = actor.call(REDLOCK_EXTEND, op(None));
    let extension = r.extend(lease).await;
    match &extension {
        Extension::Extended { .. } => check_timeouts(actor, r, &[lease.masters()]),
        Extension::Refused(refusal) => check_timeouts(actor, r, &[&refusal.masters, &refusal.cleanup]),
    }
    // As `check_accessors`: the variant, its accessor, and the validity it
    // names against the lease's own.
    let extended = match &extension {
        Extension::Extended { validity } => Some(*validity),
        Extension::Refused(_) => None,
    };
    actor.configured_if_differs(
        "Extension",
        &[
            ("Extension::is_extended", extension.is_extended().to_string(), extended.is_some().to_string()),
            (
                "RedlockLease::validity after an extend",
                format!("{:?}", extended.map(|_| lease.validity())),
                format!("{extended:?}"),
            ),
        ],
    );
    match extension {
        Extension::Extended { .. } => {
            actor.reached("extension-confirmed");
            actor.ok(id, op(Some(lease_round(actor, lease))));
            true
        }
        Extension::Refused(refusal) => {
            match refusal.reason {
                RefusalReason::Expired => actor.reached("extension-refused-after-expiry"),
                RefusalReason::NoMajority => actor.reached("extension-refused-no-majority"),
                RefusalReason::TooSlow => actor.reached("extension-refused-too-slow"),
            }
            // The lease is lost: it must say so itself, its trust ending no
            // later than this extend began.
            let round = RedlockRound {
                valid_until: Some(actor.millis_of(lease.valid_until())),
                trusted_after: Some(lease.is_trusted()),
                ..refusal_round(&refusal)
            };
            actor.fail(id, op(Some(round)));
            false
        }
    }
}

/// `Redlock::release`, recorded with each master's answer.
async fn release(actor: &Actor, r: &Redlock<SimConnection>, lease: &RedlockLease, lease_id: u64) {
    let op = |round| Op::RedlockRelease { name: NAME.into(), lease: Some(lease_id), round };
    if !lease.is_trusted() {
        actor.reached("release-after-expiry");
    }
    let id = actor.call(REDLOCK_RELEASE, op(None));
    let released = r.release(lease).await;
    check_timeouts(actor, r, &[&released.masters]);
    // `deleted` counts the masters whose compare-and-delete removed our key:
    // the yes votes, not every answer.
    let yes = released.masters.iter().filter(|v| v.vote.is_yes()).count();
    actor.configured_if_differs("Released", &[("Released::deleted", released.deleted.to_string(), yes.to_string())]);
    actor.ok(id, op(Some(RedlockRound { answers: answers(&released.masters), ..RedlockRound::default() })));
}

/// A `TimedOut` vote comes from a timer: the connection's response timeout
/// (`net_for`) or the library's own, so never sooner than the first of them
/// after the round started. An error that is not a timeout (a dropped
/// connection) reported as one would hide a master that answered. Reported
/// only when one differs.
fn check_timeouts(actor: &Actor, r: &Redlock<SimConnection>, rounds: &[&[MasterVote]]) {
    let master_timeout_ms = u64::try_from(r.master_timeout().as_millis()).unwrap_or(u64::MAX);
    let first_timer = net_for(master_timeout_ms).response_timeout.min(r.master_timeout());
    for v in rounds.iter().flat_map(|votes| votes.iter()) {
        if matches!(v.vote, Vote::TimedOut) && v.latency < first_timer {
            actor.configured(
                &format!("MasterVote of master {}", v.master),
                &[("TimedOut after at least", format!("{:?}", v.latency), format!("{first_timer:?}"))],
            );
        }
    }
}

/// One attempt of the naive Redlock: acquire, work until shortly before
/// what it believes is the end of its lease, release.
async fn naive_attempt(actor: &Actor, r: &NaiveRedlock<SimConnection>, rng: &mut StdRng, first_grant: &AtomicBool) {
    let invoked = actor.now();
    let id = actor.call(NAIVE_REDLOCK_ACQUIRE, acquire_op(None, None, None));
    let lease = match r.acquire(NAME).await {
        Ok(Some(lease)) => lease,
        // The naive client does not say why; no round to judge.
        Ok(None) => return actor.fail(id, acquire_op(None, None, None)),
        Err(e) => {
            actor.note(format!("redlock acquire: {e}"));
            return actor.fail(id, acquire_op(None, None, None));
        }
    };
    let done = actor.now();
    let until = actor.millis_of(lease.valid_until());
    let round = RedlockRound {
        answers: answers(lease.masters()),
        elapsed_ms: Some(lease.elapsed().as_millis() as u64),
        validity_ms: Some(until.saturating_sub(done)),
        started_at: Some(invoked),
        valid_until: Some(until),
        ..RedlockRound::default()
    };
    actor.ok(id, acquire_op(Some(lease.votes() as u32), Some(until.saturating_sub(invoked)), Some(round)));
    if actor.index() == 0 {
        first_grant.store(true, Ordering::Release);
    }
    sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
    let op = |round| Op::RedlockRelease { name: NAME.into(), lease: Some(id.0), round };
    let rid = actor.call(NAIVE_REDLOCK_RELEASE, op(None));
    let released = r.release(&lease).await;
    actor.ok(rid, op(Some(RedlockRound { answers: answers(&released.masters), ..RedlockRound::default() })));
}

/// What Redlock plans may be drawn from (ranges inclusive; each shrinks
/// towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedlockSpace {
    /// Clients.
    pub clients: (u32, u32),
    /// Lease TTL (ms).
    pub ttl_ms: (u64, u64),
    /// Per-master timeout (ms; at most the TTL).
    pub master_timeout_ms: (u64, u64),
    /// Per-client overrides of the per-master timeout.
    pub master_timeouts_ms: Vec<u64>,
    /// How long clients keep trying (ms).
    pub length_ms: (u64, u64),
    /// When clients start, and what the workload's shape places.
    pub shape: RedlockShape,
}

/// The shape of a Redlock plan: when its clients start and the faults the
/// shape places itself (on top of the nemesis's drawn faults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedlockShape {
    /// Every client starts at a drawn time in `start_ms`; nothing placed.
    Free {
        /// Start times (ms).
        start_ms: (u64, u64),
    },
    /// `redlock-no-validity`'s seeds: client-0 first, its links slow
    /// (100–130 ms each way) for 1.5 s, so that its rounds take most of
    /// the TTL; the others 0–40 ms after its first grant.
    SlowFirst,
    /// `redlock`'s seeds, aimed at each gate in turn. Phase 1 (0–1.48 s):
    /// either all of client-0's links are slow, or exactly one master
    /// answers it in 280–300 ms (with its near-TTL per-master timeout a
    /// round leaves a validity of a few ms, or none, and must be refused).
    /// Phase 2 (1.48–1.89 s): two masters become unreachable (a minority:
    /// whoever asks must still be granted), then three (a majority: every
    /// acquire and extend must be refused). Then the nemesis's faults and a
    /// quiet tail for the liveness check.
    Gates,
    /// `redlock-clock-jump`'s seeds: client-0 cannot reach masters 3 and 4
    /// while it acquires; once it holds 0–2, masters 0 and 1 jump forward
    /// past the TTL, and the others start.
    ClockJump,
}

impl RedlockSpace {
    /// The property search's space over 5 masters: 1–3 clients starting
    /// in the first 1.2 s, TTL 250–600 ms, master timeout 50–250 ms.
    pub fn search() -> RedlockSpace {
        RedlockSpace {
            clients: (1, 3),
            ttl_ms: (250, 600),
            master_timeout_ms: (50, 250),
            master_timeouts_ms: Vec::new(),
            length_ms: (1500, 3000),
            shape: RedlockShape::Free { start_ms: (0, 1200) },
        }
    }

    /// What `variant`'s seeds draw.
    pub fn seeds(variant: Variant) -> RedlockSpace {
        let fixed = |v| (v, v);
        let (length_ms, master_timeouts_ms, shape) = match variant {
            Variant::Correct => (CORRECT_LENGTH_MS, CORRECT_MASTER_TIMEOUTS_MS.to_vec(), RedlockShape::Gates),
            Variant::NoValidity => (LENGTH_MS, Vec::new(), RedlockShape::SlowFirst),
            Variant::ClockJump => (LENGTH_MS, Vec::new(), RedlockShape::ClockJump),
        };
        RedlockSpace {
            clients: (CLIENTS as u32, CLIENTS as u32),
            ttl_ms: fixed(TTL_MS),
            master_timeout_ms: fixed(MASTER_TIMEOUT_MS),
            master_timeouts_ms,
            length_ms: fixed(length_ms),
            shape,
        }
    }

    /// The strategy (the family's one generator).
    pub fn plans(&self) -> BoxedStrategy<(RedlockPlan, Vec<Fault>)> {
        let n = self.clients.0.max(1) as usize..=self.clients.1.max(1) as usize;
        let others = self.clients.1.max(1) as usize - 1;
        let starts_and_placed: BoxedStrategy<(Vec<RedlockStart>, Vec<Fault>)> = match self.shape {
            RedlockShape::Free { start_ms } => {
                vec((start_ms.0..=start_ms.1).prop_map(RedlockStart::At), n).prop_map(|s| (s, Vec::new())).boxed()
            }
            RedlockShape::SlowFirst => (100..=130u64, vec(0..=40u64, others))
                .prop_map(|(ms, delays)| {
                    let slow =
                        Fault { at: 0, duration: 1500, kind: FaultKind::Latency { ms }, target: Target::Client(0) };
                    (after_first(&delays), vec![slow])
                })
                .boxed(),
            RedlockShape::Gates => {
                let masters: Vec<u32> = (0..MASTERS as u32).collect();
                let phase1 = (any::<bool>(), 100..=130u64, 0..MASTERS as u32, 140..=150u64);
                let cut = |n| (proptest::sample::subsequence(masters.clone(), n), 150..=170u64, 5..=20u64);
                (phase1, 0..=50u64, cut(2), cut(3), vec(0..=40u64, others))
                    .prop_map(move |((all_slow, slow_ms, node, one_ms), offset, minority, majority, delays)| {
                        // Phase 1 ends before phase 2's first cut: a link's
                        // state has one switch.
                        let (target, ms) = if all_slow {
                            (Target::Client(0), slow_ms)
                        } else {
                            (Target::Link { client: 0, node }, one_ms)
                        };
                        let mut faults = vec![Fault { at: 0, duration: 1480, kind: FaultKind::Latency { ms }, target }];
                        let mut at = 1480 + offset;
                        for (nodes, duration, gap) in [minority, majority] {
                            for client in 0..CLIENTS as u32 {
                                for &node in &nodes {
                                    let target = Target::Link { client, node };
                                    faults.push(Fault { at, duration, kind: FaultKind::Partition, target });
                                }
                            }
                            at += duration + gap;
                        }
                        (after_first(&delays), faults)
                    })
                    .boxed()
            }
            RedlockShape::ClockJump => (400..=700u64, 60..=120u64, 100..=500u64, vec(5..=40u64, others))
                .prop_map(|(cut, jump_at, beyond, delays)| {
                    let offset_ms = (TTL_MS + beyond) as i64;
                    let mut faults = Vec::new();
                    for node in [3u32, 4] {
                        let target = Target::Link { client: 0, node };
                        faults.push(Fault { at: 0, duration: cut, kind: FaultKind::Partition, target });
                    }
                    for node in [0u32, 1] {
                        let kind = FaultKind::ClockStep { offset_ms };
                        faults.push(Fault { at: jump_at, duration: 1000, kind, target: Target::Node(node) });
                    }
                    // Client-0 goes first; the others after the jump.
                    let mut starts = vec![RedlockStart::At(0)];
                    starts.extend(delays.iter().map(|d| RedlockStart::At(jump_at + d)));
                    (starts, faults)
                })
                .boxed(),
        };
        let timeouts = self.master_timeouts_ms.clone();
        (
            starts_and_placed,
            self.ttl_ms.0..=self.ttl_ms.1,
            self.master_timeout_ms.0..=self.master_timeout_ms.1,
            self.length_ms.0..=self.length_ms.1,
        )
            .prop_map(move |((starts, placed), ttl_ms, master_timeout_ms, length_ms)| {
                let plan = RedlockPlan {
                    starts,
                    ttl_ms,
                    master_timeout_ms: master_timeout_ms.min(ttl_ms),
                    length_ms,
                    master_timeouts_ms: timeouts.clone(),
                };
                (plan, placed)
            })
            .boxed()
    }
}

/// Client-0 at 0, the others `delays` after its first grant (at 1.2 s at
/// the latest).
fn after_first(delays: &[u64]) -> Vec<RedlockStart> {
    let mut starts = vec![RedlockStart::At(0)];
    starts.extend(delays.iter().map(|&delay| RedlockStart::AfterFirstGrant { delay, latest: 1200 }));
    starts
}

/// The nemesis faults `variant`'s seeds draw (swarm subsets, single links
/// allowed): for `redlock`, up to two faults of 50–400 ms in 1.9–2.35 s,
/// after its gates' phases; for `redlock-no-validity`, up to two of
/// 50–600 ms after client-0's slow phase; none for `redlock-clock-jump`.
pub fn seed_faults(variant: Variant) -> FaultSpace {
    let mut classes = vec![
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    match variant {
        Variant::Correct => {
            classes.insert(1, FaultClass::PartitionOneWay);
            FaultSpace { count: (0, 2), duration_ms: (50, 400), links: true, ..FaultSpace::new(&classes, 2) }
                .within(1900, 2350)
                .swarm()
        }
        Variant::NoValidity => {
            FaultSpace { count: (0, 2), duration_ms: (50, 600), links: true, ..FaultSpace::new(&classes, 2) }
                .within(1600, LENGTH_MS - 100)
                .swarm()
        }
        Variant::ClockJump => FaultSpace::none(),
    }
}

/// What the Redlock checkers need to know about a run of `plan` under
/// `schedule`.
fn setup_of(variant: Variant, plan: &RedlockPlan, schedule: &Schedule) -> RedlockSetup {
    let ttl = Duration::from_millis(plan.ttl_ms);
    let mut setup = RedlockSetup::new(MASTERS as u32, plan.ttl_ms, Drift::DEFAULT.allowance(ttl).as_millis() as u64);
    let timeout = |i: usize| plan.master_timeouts_ms.get(i).copied().unwrap_or(plan.master_timeout_ms);
    for i in 0..plan.starts.len() {
        setup.master_timeout_ms.insert(format!("client-{i}"), timeout(i));
    }
    for f in &schedule.faults {
        if let (FaultKind::ClientPause, Target::Client(c)) = (f.kind, f.target) {
            setup.pauses.push((format!("client-{c}"), f.at, f.end()));
        }
        let (client, node) = match f.target {
            Target::Client(c) => (Some(format!("client-{c}")), None),
            Target::Link { client, node } => (Some(format!("client-{client}")), Some(node as usize)),
            Target::Node(n) => (None, Some(n as usize)),
        };
        setup.faults.push(FaultWindow { from: f.at, to: f.end(), client, node });
    }
    setup.clocks_trusted =
        !schedule.faults.iter().any(|f| matches!(f.kind.class(), FaultClass::ClockStep | FaultClass::ServerRestart));
    if variant == Variant::Correct && setup.clocks_trusted {
        let heal_at = schedule.faults.iter().map(Fault::end).max().unwrap_or(0);
        let longest = (0..plan.starts.len()).map(timeout).max().unwrap_or(plan.master_timeout_ms);
        let bound = plan.ttl_ms + longest + LIVENESS_SLACK_MS;
        // Only when the clients are still trying at the deadline.
        if heal_at + bound + 50 <= plan.length_ms {
            setup.liveness = Some(Liveness { heal_at, bound });
        }
    }
    setup
}

/// Runs an explicit plan of a Redlock scenario.
pub fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    plan: &RedlockPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let setup = setup_of(variant, plan, &schedule);
    let config = WorldConfig::new(seed).nodes(MASTERS);
    let mut world = World::new(servers, config)?;
    let first_grant = Arc::new(AtomicBool::new(false));
    for (i, start) in plan.starts.iter().enumerate() {
        let start = *start;
        let timing = Timing {
            ttl_ms: plan.ttl_ms,
            master_timeout_ms: plan.master_timeouts_ms.get(i).copied().unwrap_or(plan.master_timeout_ms),
            length_ms: plan.length_ms,
        };
        let flag = Arc::clone(&first_grant);
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, start, flag, timing));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    let events = &outcome.history;
    let mut violations = mutual_exclusion::check(events);
    violations.extend(validity::check(events, &setup));
    violations.extend(votes::check(events, &setup));
    violations.extend(rounds::check(events, &setup));
    violations.extend(liveness::check(events, &setup));
    if variant == Variant::Correct {
        let rule = Rule { prefix: "redlock:{", suffix: "}", life: Life::AtMost(plan.ttl_ms), what: "Redlock key" };
        for (node, keys) in run.keys_at_end.iter().enumerate() {
            let rules = [rule, refusal::KEY_RULE];
            violations.extend(crate::checker::key_lifetimes::check(node, keys, &rules, &[]));
        }
    }
    outcome.violations.extend(violations);
    let mut h = Histograms::new();
    stats::record_acquire_latency(&outcome.history, &mut h);
    outcome.histograms = h;
    Ok(outcome)
}

impl Family for Variant {
    type Plan = RedlockPlan;
    type Space = RedlockSpace;
    const NAME: &'static str = "redlock";

    fn nodes(&self) -> u32 {
        MASTERS as u32
    }

    fn seeds(&self) -> (RedlockSpace, FaultSpace) {
        (RedlockSpace::seeds(*self), seed_faults(*self))
    }

    fn plans(space: &RedlockSpace) -> BoxedStrategy<(RedlockPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &RedlockSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &RedlockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &RedlockPlan) -> u32 {
        plan.starts.len() as u32
    }

    fn validate(plan: &RedlockPlan) -> Result<(), String> {
        if plan.ttl_ms == 0 || plan.master_timeout_ms == 0 || plan.master_timeouts_ms.contains(&0) {
            return Err("ttl_ms and master_timeout_ms must be positive".into());
        }
        Ok(())
    }

    fn smaller(plan: &RedlockPlan) -> Vec<RedlockPlan> {
        if plan.starts.len() <= 1 {
            return Vec::new();
        }
        (0..plan.starts.len())
            .map(|i| {
                let mut p = plan.clone();
                p.starts.remove(i);
                p
            })
            .collect()
    }
}

impl core::fmt::Display for RedlockPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} client(s) over {MASTERS} masters, ttl {}ms, master timeout {}ms, attempts until {}ms; starts:",
            self.starts.len(),
            self.ttl_ms,
            self.master_timeout_ms,
            self.length_ms
        )?;
        if !self.master_timeouts_ms.is_empty() {
            write!(f, " (per client: {:?}ms)", self.master_timeouts_ms)?;
        }
        for (i, s) in self.starts.iter().enumerate() {
            match s {
                RedlockStart::At(at) => write!(f, " client#{i} at {at}ms")?,
                RedlockStart::AfterFirstGrant { delay, latest } => {
                    write!(f, " client#{i} {delay}ms after client#0's first grant (by {latest}ms)")?
                }
            }
        }
        Ok(())
    }
}
