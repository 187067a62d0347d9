//! `Redlock`: a lock across N independent redis-server masters.
//!
//! A single-instance lease ([`crate::Lock`]) dies with its one Redis.
//! Redlock writes the same key to N masters that do not replicate to each
//! other and holds the lock only while a majority (N/2+1) has it, so the
//! lock survives the loss of a minority of masters.
//!
//! ## Acquire (one attempt)
//!
//! 1. Read the monotonic clock: T1.
//! 2. Draw one ownership value for this attempt: 20 bytes from the CSPRNG.
//! 3. Send `SET key owner NX PX ttl` to every master at once, each under its
//!    own timeout ([`RedlockConfig::master_timeout`]), so a master that does
//!    not answer counts as a miss instead of stalling the attempt. The
//!    requests are polled together in the caller's task; nothing is spawned.
//! 4. Read the clock again: T2.
//! 5. The lock is held only if votes ≥ N/2+1 **and** the validity
//!    `TTL − (T2 − T1) − drift` is positive (which implies T2 − T1 < TTL:
//!    the elapsed-time gate). `drift = TTL × factor + constant` ([`Drift`]).
//! 6. Otherwise release on **every** master — also those that said no,
//!    failed or timed out, because a timed-out `SET` may still have landed —
//!    and return an [`Acquisition::Refused`] saying why.
//!
//! Release is a compare-and-delete on every master; extend is a
//! compare-and-pexpire on every master, accepted only with a majority of
//! confirmations and a positive validity, and only if started while the
//! lease was still valid. Waiting for the lock is explicit, through
//! [`Redlock::acquire_with_retry`] and a [`Retry`] policy.
//!
//! ## Even N
//!
//! An even N is accepted. Its majority N/2+1 is one more than half, so
//! N = 4 needs 3 votes and tolerates one failed master, exactly like N = 3;
//! N = 2 needs both and tolerates none. The extra master buys nothing but a
//! fifth key to write.
//!
//! ## What Redlock does **not** guarantee
//!
//! - **No fencing token.** A per-master counter does not give one: the
//!   masters are independent, their counters disagree, and nothing orders
//!   one client's majority read against another's. A holder that pauses past
//!   its validity can still write, and nothing downstream can refuse it.
//!   If the protected resource can check a token, use a single-instance
//!   [`crate::Lock`] with [`crate::FencedStore`] instead.
//! - **Bounded clock drift and bounded pauses.** Validity is measured on the
//!   client's clock, expiry on each master's. A master whose clock runs fast
//!   (or steps forward) expires the key early; a client paused between T2 and
//!   its use of the lease acts after its validity. The drift allowance covers
//!   only *small* rate differences.
//! - **A clock step on a minority of masters can give two clients a
//!   majority**: step two of five masters forward past the TTL and their
//!   keys vanish; a second client then wins them plus one free master.
//! - **Persistence.** A master that restarts empty while a lock is held
//!   forgets its key, and the same arithmetic gives a second client a
//!   majority. Run masters with `appendfsync always`, or keep a restarted
//!   master out of service for at least one TTL.
//! - **Duplicates are only caught when visible.** [`Redlock::connect`]
//!   compares each master's `run_id`; a master that does not answer
//!   `INFO server` in time is not compared ([`Redlock::unverified_masters`]).
//!
//! ```no_run
//! # async fn demo(conns: Vec<redis::aio::MultiplexedConnection>) -> redis_primitives::Result<()> {
//! use core::time::Duration;
//! use redis_primitives::redlock::{Acquisition, Redlock, RedlockConfig};
//! use redis_primitives::Ttl;
//!
//! let config = RedlockConfig::new(Ttl::new(Duration::from_secs(10))?);
//! let redlock = Redlock::connect(conns, config).await?; // five independent masters
//! match redlock.acquire("nightly-report").await? {
//!     Acquisition::Held(lease) => {
//!         // Work only while lease.is_trusted(); there is no fencing token.
//!         redlock.release(&lease).await;
//!     }
//!     Acquisition::Refused(why) => println!("not held: {:?}, {} votes", why.reason, why.votes),
//! }
//! # Ok(()) }
//! ```

mod config;
mod identity;
mod join;
mod lease;
mod vote;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex};

use core::future::Future;
use core::time::Duration;
use redis::RedisResult;
use tokio::time::Instant;

pub use config::RedlockConfig;
pub use lease::RedlockLease;
pub use vote::{Acquisition, Extension, MasterVote, Refusal, RefusalReason, Released, Vote};

use crate::connection::Connection;
use crate::drift::Drift;
use crate::error::{Error, Result};
use crate::instant::after;
use crate::keys::Prefix;
use crate::native::{CompareCommands, Detected};
use crate::owner::{Owner, OwnerSource};
use crate::retry::Retry;
use crate::ttl::Ttl;
use join::join_all;
use vote::{remaining_validity, Round};

// Sent with `EVAL`, not `EVALSHA`: on a master that has not seen the script
// yet (a fresh or restarted one) `EVALSHA` costs a NOSCRIPT error, a load and
// a second call — three round trips inside one per-master timeout. `EVAL`
// always takes one; the scripts are a few hundred bytes and Redis caches the
// compiled body by its hash. The per-master operations are exactly the
// single-instance lock's compare-and-delete and compare-and-pexpire, so the
// same script files serve both.
static RELEASE: LazyLock<Cow<'static, str>> =
    LazyLock::new(|| crate::script_source::text(crate::script_source::LOCK_RELEASE));
static EXTEND: LazyLock<Cow<'static, str>> =
    LazyLock::new(|| crate::script_source::text(crate::script_source::LOCK_EXTEND));

/// Bytes of CSPRNG output per ownership value (Redlock asks for at least 20).
pub const OWNER_BYTES: usize = 20;

/// A lock across N independent masters. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Redlock<C> {
    masters: Vec<C>,
    /// Per master: its native compare-and-delete / compare-and-pexpire, if
    /// it has them (learnt from the handshake's `INFO server`).
    commands: Vec<Detected>,
    run_ids: Vec<Option<String>>,
    prefix: Prefix,
    ttl: Ttl,
    drift: Drift,
    master_timeout: Duration,
    owners: OwnerSource,
    quorum: usize,
}

impl<C: Connection> Redlock<C> {
    /// Validates `config` for `masters`, then asks each master for its
    /// `run_id` (`INFO server`, all at once, each under the handshake
    /// timeout) and refuses the same server listed twice.
    ///
    /// Every setting is checked before anything is sent. Errors are
    /// [`Error::InvalidInput`] with `what` one of `"redlock masters"` (none
    /// given, or a duplicate), `"redlock drift"`, `"redlock master_timeout"`,
    /// `"redlock handshake_timeout"`, `"prefix"`. A master that does not
    /// answer `INFO` in time is accepted but left unverified: Redlock is
    /// meant to start with a minority of masters down.
    pub async fn connect(masters: Vec<C>, config: RedlockConfig) -> Result<Redlock<C>> {
        let prefix = config.validate(masters.len())?;
        let handshake = config.handshake_timeout;
        let answers = join_all(masters.iter().cloned().map(|conn| identity::identify(conn, handshake)).collect()).await;
        // A master whose INFO said nothing of its version keeps the scripts:
        // asking it separately would cost a round trip in every connect.
        let commands = answers
            .iter()
            .map(|answer| {
                if !config.native_commands {
                    return Detected::new(false);
                }
                let found = answer.as_ref().and_then(|identity| identity.commands);
                Detected::known(found.unwrap_or(CompareCommands::Scripts))
            })
            .collect();
        let identities: Vec<Option<Vec<String>>> = answers
            .into_iter()
            .map(|answer| answer.map(|identity| identity.run_ids).filter(|ids| !ids.is_empty()))
            .collect();
        for (i, a) in identities.iter().enumerate() {
            for (j, b) in identities.iter().enumerate().skip(i + 1) {
                if let (Some(a), Some(b)) = (a, b) {
                    if let Some(id) = identity::shared(a, b) {
                        return Err(Error::invalid(
                            "redlock masters",
                            format!(
                                "masters {i} and {j} are the same redis-server (run_id {id}); \
                                 Redlock needs independent masters, or one failure counts twice"
                            ),
                        ));
                    }
                }
            }
        }
        let run_ids = identities.into_iter().map(|ids| ids.map(|ids| ids.join(","))).collect();
        let quorum = masters.len() / 2 + 1;
        Ok(Redlock {
            masters,
            commands,
            run_ids,
            prefix,
            ttl: config.ttl,
            drift: config.drift,
            master_timeout: config.master_timeout,
            owners: config.owners,
            quorum,
        })
    }

    /// Per master, the commands [`Redlock::release`] and [`Redlock::extend`]
    /// send: the native `DELIFEQ` / `DELEX … IFEQ` and `SET … IFEQ` where
    /// the master's `INFO server` (asked by [`Redlock::connect`]) named a
    /// version that has them, the scripts otherwise (and for a master that
    /// did not answer, or with [`RedlockConfig::native_commands`] off).
    /// After a native command was refused (an error reply of any wording,
    /// which ran nothing) that master is asked again with `COMMAND INFO`.
    pub async fn compare_commands(&self) -> Vec<CompareCommands> {
        let mut out = Vec::with_capacity(self.masters.len());
        for (conn, commands) in self.masters.iter().zip(&self.commands) {
            out.push(commands.commands(&mut conn.clone()).await);
        }
        out
    }

    /// The number of masters, N.
    pub fn len(&self) -> usize {
        self.masters.len()
    }

    /// Always `false`: construction refuses an empty list.
    pub fn is_empty(&self) -> bool {
        self.masters.is_empty()
    }

    /// Yes votes needed: N/2+1.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// The lease TTL.
    pub fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// The drift setting.
    pub fn drift(&self) -> Drift {
        self.drift
    }

    /// The drift allowance for the TTL.
    pub fn drift_allowance(&self) -> Duration {
        self.drift.allowance(self.ttl.as_duration())
    }

    /// The per-master timeout.
    pub fn master_timeout(&self) -> Duration {
        self.master_timeout
    }

    /// Each master's `run_id` as seen at connect (`None`: not verified).
    /// A connection that reaches several servers (a cluster connection, which
    /// sends `INFO` to every primary) has their ids sorted and joined by `,`.
    pub fn run_ids(&self) -> &[Option<String>] {
        &self.run_ids
    }

    /// Indexes of the masters whose `run_id` could not be read at connect,
    /// and which therefore could not be checked for duplicates.
    pub fn unverified_masters(&self) -> Vec<usize> {
        self.run_ids.iter().enumerate().filter(|(_, id)| id.is_none()).map(|(i, _)| i).collect()
    }

    /// The key for `name`, the same on every master: `prefix:{name}`.
    pub fn key(&self, name: &str) -> Result<String> {
        self.prefix.key(name)
    }

    /// One attempt to take `name` on a majority of masters (steps 1–6 of the
    /// module docs). `Err` only for a malformed name, before anything is
    /// sent; master failures are votes in the result.
    pub async fn acquire(&self, name: &str) -> Result<Acquisition> {
        let key = self.prefix.key(name)?;
        Ok(self.acquire_key(name, key).await)
    }

    /// Acquires `name`, trying again under `retry` (jittered delays, bounded
    /// attempts, an optional deadline) while attempts are refused. Returns
    /// the lease, or the last refusal once the policy gives up.
    pub async fn acquire_with_retry(&self, name: &str, retry: &Retry) -> Result<Acquisition> {
        let key = self.prefix.key(name)?;
        // `Retry::run` reports exhaustion as `None`; the last refusal is kept
        // aside so the caller still learns why. A std Mutex (never held
        // across an await) keeps the future `Send`.
        let last: Mutex<Option<Refusal>> = Mutex::new(None);
        let (last_ref, key_ref) = (&last, &key);
        let held = retry
            .run(move || async move {
                match self.acquire_key(name, key_ref.clone()).await {
                    Acquisition::Held(lease) => Ok(Some(lease)),
                    Acquisition::Refused(refusal) => {
                        match last_ref.lock() {
                            Ok(mut slot) => *slot = Some(refusal),
                            Err(poisoned) => *poisoned.into_inner() = Some(refusal),
                        }
                        Ok(None)
                    }
                }
            })
            .await?;
        if let Some(lease) = held {
            return Ok(Acquisition::Held(lease));
        }
        let refusal = match last.into_inner() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        // `Retry::run` always makes its first attempt, so a refusal is there.
        refusal.map(Acquisition::Refused).ok_or_else(|| Error::invalid("retry", "the policy made no attempt"))
    }

    /// Compare-and-delete on every master: deletes our key where it still
    /// holds our owner value, leaves anyone else's alone.
    pub async fn release(&self, lease: &RedlockLease) -> Released {
        Released::from_votes(self.release_key(&lease.key, &lease.owner).await)
    }

    /// Re-arms the lease's keys to the TTL on every master.
    ///
    /// Extended only if it started while the lease was still valid, a
    /// majority confirmed, and TTL − elapsed − drift of this round is
    /// positive; the lease then runs from this round's T1 and
    /// [`Extension::Extended`] carries the new validity. Otherwise the lease
    /// is lost: its keys are released everywhere, it stops being trusted,
    /// and the [`Refusal`] says why.
    pub async fn extend(&self, lease: &mut RedlockLease) -> Extension {
        let started = Instant::now();
        if started >= lease.valid_until {
            let cleanup = self.release_key(&lease.key, &lease.owner).await;
            return Extension::Refused(Refusal {
                reason: RefusalReason::Expired,
                votes: 0,
                quorum: self.quorum,
                elapsed: Duration::ZERO,
                ttl: self.ttl,
                drift: self.drift_allowance(),
                masters: Vec::new(),
                cleanup,
            });
        }
        let ttl_ms = self.ttl.as_millis();
        let round = {
            let (key, owner) = (lease.key.as_str(), lease.owner.as_str());
            self.round(started, key, |conn, commands| pexpire_if_owner(conn, commands, key, owner, ttl_ms)).await
        };
        match self.decide(&round) {
            Ok(validity) => {
                lease.started_at = round.started;
                lease.acquired_at = round.finished;
                lease.validity = validity;
                lease.valid_until = after(round.finished, validity);
                lease.votes = round.yes();
                lease.ttl = self.ttl;
                lease.masters = round.votes;
                Extension::Extended { validity }
            }
            Err(reason) => {
                // From the release on, another client may take the lock.
                lease.valid_until = lease.valid_until.min(started);
                let cleanup = self.release_key(&lease.key, &lease.owner).await;
                Extension::Refused(self.refusal(reason, round, cleanup))
            }
        }
    }

    async fn acquire_key(&self, name: &str, key: String) -> Acquisition {
        let started = Instant::now();
        let owner = self.owners.next_owner(OWNER_BYTES);
        let round = self.set_round(started, &key, &owner).await;
        match self.decide(&round) {
            Ok(validity) => Acquisition::Held(RedlockLease {
                name: name.to_string(),
                key,
                owner,
                ttl: self.ttl,
                started_at: round.started,
                acquired_at: round.finished,
                validity,
                valid_until: after(round.finished, validity),
                votes: round.yes(),
                quorum: self.quorum,
                masters: round.votes,
            }),
            Err(reason) => {
                let cleanup = self.release_key(&key, &owner).await;
                Acquisition::Refused(self.refusal(reason, round, cleanup))
            }
        }
    }

    /// Majority first, then the elapsed-time gate: validity must be positive.
    fn decide(&self, round: &Round) -> core::result::Result<Duration, RefusalReason> {
        if round.yes() < self.quorum {
            return Err(RefusalReason::NoMajority);
        }
        remaining_validity(self.ttl, round.elapsed(), self.drift_allowance()).ok_or(RefusalReason::TooSlow)
    }

    fn refusal(&self, reason: RefusalReason, round: Round, cleanup: Vec<MasterVote>) -> Refusal {
        Refusal {
            reason,
            votes: round.yes(),
            quorum: self.quorum,
            elapsed: round.elapsed(),
            ttl: self.ttl,
            drift: self.drift_allowance(),
            masters: round.votes,
            cleanup,
        }
    }

    /// Steps 3–4: `SET NX PX` on every master at once; T1 is `started`.
    /// Lent to the naive variant ([`crate::naive_seam`]), which decides otherwise.
    pub(crate) async fn set_round(&self, started: Instant, key: &str, owner: &Owner) -> Round {
        let (owner, ttl_ms) = (owner.as_str(), self.ttl.as_millis());
        self.round(started, key, |conn, _| set_nx_px(conn, key, owner, ttl_ms)).await
    }

    /// Compare-and-delete on every master, each under the per-master timeout
    /// (a frozen master must not hold the caller hostage on the way out either).
    pub(crate) async fn release_key(&self, key: &str, owner: &Owner) -> Vec<MasterVote> {
        let owner = owner.as_str();
        self.round(Instant::now(), key, |conn, commands| delete_if_owner(conn, commands, key, owner)).await.votes
    }

    pub(crate) fn owners(&self) -> &OwnerSource {
        &self.owners
    }

    /// Sends `request` to every master at once and collects one vote each.
    async fn round<'a, F, Fut>(&'a self, started: Instant, key: &'a str, request: F) -> Round
    where
        F: Fn(C, &'a Detected) -> Fut,
        Fut: Future<Output = RedisResult<bool>> + 'a,
    {
        let timeout = self.master_timeout;
        let asks = self
            .masters
            .iter()
            .zip(&self.commands)
            .enumerate()
            .map(|(master, (conn, commands))| ask(master, started, timeout, key, request(conn.clone(), commands)))
            .collect();
        let votes = join_all(asks).await;
        Round { started, finished: Instant::now(), votes }
    }
}

/// One request to one master, bounded by the per-master timeout.
async fn ask<Fut>(master: usize, started: Instant, timeout: Duration, key: &str, request: Fut) -> MasterVote
where
    Fut: Future<Output = RedisResult<bool>>,
{
    let vote = match tokio::time::timeout(timeout, request).await {
        Err(_elapsed) => Vote::TimedOut,
        // The connection's own response timeout means the same thing as ours.
        Ok(Err(e)) if e.is_timeout() => Vote::TimedOut,
        Ok(Err(e)) => Vote::Error(Arc::new(Error::from_redis(e, key))),
        Ok(Ok(true)) => Vote::Yes,
        Ok(Ok(false)) => Vote::No,
    };
    MasterVote { master, vote, latency: Instant::now().saturating_duration_since(started) }
}

async fn set_nx_px<C: Connection>(mut conn: C, key: &str, owner: &str, ttl_ms: u64) -> RedisResult<bool> {
    let reply: Option<String> =
        redis::cmd("SET").arg(key).arg(owner).arg("NX").arg("PX").arg(ttl_ms).query_async(&mut conn).await?;
    Ok(reply.is_some())
}

/// The master's native compare-and-delete where it has one (ADR 0013), else
/// the single-instance lock's script.
async fn delete_if_owner<C: Connection>(mut conn: C, commands: &Detected, key: &str, owner: &str) -> RedisResult<bool> {
    let native = commands.commands(&mut conn).await.delete(key, owner);
    let n: i64 = match commands.try_native(&mut conn, native).await? {
        Some(n) => n,
        None => redis::cmd("EVAL").arg(&**RELEASE).arg(1).arg(key).arg(owner).query_async(&mut conn).await?,
    };
    Ok(n == 1)
}

/// The master's native `SET … IFEQ … PX` (`OK` or nil) where it has one,
/// else the single-instance lock's compare-and-pexpire script (1 or 0).
async fn pexpire_if_owner<C: Connection>(
    mut conn: C,
    commands: &Detected,
    key: &str,
    owner: &str,
    ttl_ms: u64,
) -> RedisResult<bool> {
    let native = commands.commands(&mut conn).await.extend(key, owner, ttl_ms);
    if let Some(reply) = commands.try_native::<Option<String>, _>(&mut conn, native).await? {
        return Ok(reply.is_some());
    }
    let n: i64 =
        redis::cmd("EVAL").arg(&**EXTEND).arg(1).arg(key).arg(owner).arg(ttl_ms).query_async(&mut conn).await?;
    Ok(n == 1)
}
