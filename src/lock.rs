//! `Lock`: a single-instance lease with a fencing token.
//!
//! One Redis key per name holds a random owner value with a TTL; a second key
//! (same hash tag) is a counter that `INCR` bumps on every successful acquire
//! and that never expires. Acquire, release and extend are each one atomic
//! Lua script, or, for release and extend on a server that has them
//! (Valkey 9, Redis 8.4), one native command ([`CompareCommands`], ADR 0013).
//! `acquire` makes exactly one attempt; waiting is the caller's choice,
//! through [`crate::Retry`].
//!
//! Two opt-ins for a replicated Redis, where a failover can roll the counter
//! back and hand a token out again (`docs/guide/replication.md`):
//! [`LockBuilder::acknowledged`] makes a winning acquire count only once
//! replicas confirmed it (`WAIT`, ADR 0016), and [`Tokens::TimeFloored`]
//! issues `max(counter + 1, server time in µs)`, so a counter that went back
//! is skipped past (ADR 0017).
//!
//! ```no_run
//! # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
//! use core::time::Duration;
//! use redis_primitives::{Lock, Ttl};
//!
//! let lock = Lock::new(conn);
//! let ttl = Ttl::new(Duration::from_secs(10))?;
//! if let Some(lease) = lock.acquire("invoices", ttl).await? {
//!     // Pass lease.token() to everything you write while holding it.
//!     println!("holding invoices with token {}", lease.token());
//!     lock.release(&lease).await?;
//! }
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::LazyLock;

use core::time::Duration;
use redis::Value;

use crate::script_source::Script;
use tokio::time::Instant;

use crate::acknowledgement::Acknowledgement;
use crate::connection::Connection;
use crate::drift::Drift;
use crate::error::{Error, Result};
use crate::instant::after;
use crate::keys::Prefix;
use crate::lease::Lease;
use crate::native::{CompareCommands, Detected};
use crate::owner::OwnerSource;
use crate::release::Release;
use crate::script_source;
use crate::token::FencingToken;
use crate::ttl::Ttl;

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| script_source::script(script_source::LOCK_ACQUIRE));
static ACQUIRE_FLOORED: LazyLock<Script> = LazyLock::new(|| script_source::script(script_source::LOCK_ACQUIRE_FLOORED));
static RELEASE: LazyLock<Script> = LazyLock::new(|| script_source::script(script_source::LOCK_RELEASE));
static EXTEND: LazyLock<Script> = LazyLock::new(|| script_source::script(script_source::LOCK_EXTEND));

/// A factory for fenced leases over one connection.
#[derive(Debug, Clone)]
pub struct Lock<C> {
    conn: C,
    prefix: Prefix,
    drift: Drift,
    owners: OwnerSource,
    commands: Detected,
    ack: Option<Acknowledgement>,
    tokens: Tokens,
}

/// Configures a [`Lock`]. `build()` can be called again.
#[derive(Debug, Clone)]
pub struct LockBuilder<C> {
    conn: C,
    prefix: String,
    drift: Drift,
    owners: OwnerSource,
    native: bool,
    ack: Option<Acknowledgement>,
    tokens: Tokens,
}

/// How a [`Lock`] issues fencing tokens ([`LockBuilder::tokens`]).
///
/// Both are strictly increasing on one server whose counter survives.
/// They differ when the counter does not: a restart without persistence, or
/// a failover to a replica that missed the last acquires, takes the counter
/// back, and the next acquires reissue tokens already handed out
/// ([`Tokens::Counter`]) or jump past them to the server's clock
/// ([`Tokens::TimeFloored`]).
///
/// ```no_run
/// # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
/// use redis_primitives::{Lock, Tokens, Ttl};
///
/// let lock = Lock::builder(conn).tokens(Tokens::TimeFloored).build()?;
/// if let Some(lease) = lock.acquire("invoices", Ttl::from_millis(10_000)?).await? {
///     // About 1.8e15 (µs since 1970), not 1: store it in a u64 / i64.
///     assert!(lease.token().get() > 1_000_000_000_000_000);
/// #   lock.release(&lease).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tokens {
    /// The default: `INCR` of the per-name counter. Tokens are 1, 2, 3, …
    /// with no gaps; a counter that goes back (lost, or rolled back by a
    /// failover) reissues tokens.
    #[default]
    Counter,
    /// `max(counter + 1, the server's TIME in microseconds)`, stored in the
    /// counter (ADR 0017). Strictly increasing, with gaps. A counter lost or
    /// rolled back is skipped past **as long as the clock of the server that
    /// issues the next token is not behind the last token issued**: a
    /// promoted replica whose clock lags, a restart with the clock set back,
    /// or a counter moved ahead of the clock (by a server whose clock ran
    /// ahead, or by hand) leaves the floor below the last token, and tokens
    /// are reissued as with [`Tokens::Counter`].
    ///
    /// Tokens start near 1.8e15 (µs since 1970, in 2026): wider than an `i32` and
    /// than what some stores index cheaply, but below 2^53 (JavaScript's
    /// exact integers) until the year 2255. Past 2^53, or once the counter
    /// is ahead of the clock, `counter + 1` wins, exact as ever (ADR 0006).
    /// One more `TIME` and one more `SET` per winning acquire.
    TimeFloored,
}

/// What [`Lock::with_lock`] did.
#[derive(Debug)]
pub enum LockOutcome<T> {
    /// The lock was taken by someone else; the body did not run.
    NotAcquired,
    /// The body ran while holding a lease.
    Ran {
        /// What the body returned.
        output: T,
        /// The lease's fencing token.
        token: FencingToken,
        /// What the release did: [`Release::AlreadyGone`] means the body
        /// outlived its lease; [`Release::Unknown`] means the release got no
        /// clear answer (the body's output is here all the same).
        release: Release,
    },
}

impl<C: Connection> LockBuilder<C> {
    /// Key prefix (default `"lock"`): keys are `prefix:{name}` and `prefix:{name}:fence`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Clock-drift allowance subtracted from every lease's local deadline.
    pub fn drift(mut self, drift: Drift) -> Self {
        self.drift = drift;
        self
    }

    /// Where ownership values come from (default: the OS-seeded CSPRNG).
    pub fn owners(mut self, owners: OwnerSource) -> Self {
        self.owners = owners;
        self
    }

    /// Whether release and extend may use the server's native
    /// compare-and-delete and compare-and-set (default `true`): `DELIFEQ` on
    /// Valkey 9, `DELEX … IFEQ` on Redis 8.4, and `SET … IFEQ … PX` on both,
    /// detected once with `COMMAND INFO` (see [`CompareCommands`]). `false`
    /// always runs the Lua scripts and never asks.
    pub fn native_commands(mut self, native: bool) -> Self {
        self.native = native;
        self
    }

    /// Makes every winning [`Lock::acquire`] wait for `ack.replicas()`
    /// replicas to confirm it (`WAIT`, on the same connection, right after
    /// the acquire script) before the lease is handed out; default: no
    /// waiting. Fewer in time is [`Error::NotAcknowledged`]: the token was
    /// consumed and the lease is released at once (compare-and-delete; if
    /// that fails it expires after its TTL). A refused acquire (the lock is
    /// held) sends no `WAIT`. The lease's deadline is still measured from
    /// before the acquire was sent, so the wait comes out of the lease.
    ///
    /// Only the acquire waits: an extension or a release that a failover
    /// loses is not (the promoted node may expire the lease at its earlier
    /// TTL, or keep a released one until its TTL). Read
    /// [`Acknowledgement`]'s docs first: `WAIT` counts only this
    /// connection's writes (a pool handing out different connections breaks
    /// it), blocks the connection while it waits, and is no guarantee
    /// against a failover that promotes a replica that did not confirm.
    ///
    /// ```no_run
    /// # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
    /// use core::time::Duration;
    /// use redis_primitives::{Acknowledgement, Error, Lock, Ttl};
    ///
    /// let ack = Acknowledgement::new(1, Duration::from_millis(100))?;
    /// let lock = Lock::builder(conn).acknowledged(ack).build()?;
    /// match lock.acquire("invoices", Ttl::from_millis(10_000)?).await {
    ///     Ok(Some(lease)) => println!("token {} is on a replica too", lease.token()),
    ///     Ok(None) => println!("held by someone else"),
    ///     Err(Error::NotAcknowledged { acknowledged, .. }) => {
    ///         eprintln!("only {acknowledged} replica(s) confirmed: not taken")
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn acknowledged(mut self, ack: Acknowledgement) -> Self {
        self.ack = Some(ack);
        self
    }

    /// How tokens are issued (default [`Tokens::Counter`]; see [`Tokens`]).
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = tokens;
        self
    }

    /// Validates the settings.
    pub fn build(&self) -> Result<Lock<C>> {
        Ok(Lock {
            conn: self.conn.clone(),
            prefix: Prefix::new(self.prefix.clone())?,
            drift: self.drift,
            owners: self.owners.clone(),
            commands: Detected::new(self.native),
            ack: self.ack,
            tokens: self.tokens,
        })
    }
}

impl<C: Connection> Lock<C> {
    /// A lock with the default prefix `"lock"` and drift allowance.
    pub fn new(conn: C) -> Lock<C> {
        Lock {
            conn,
            prefix: Prefix::new("lock").expect("the default prefix is valid"),
            drift: Drift::DEFAULT,
            owners: OwnerSource::Random,
            commands: Detected::new(true),
            ack: None,
            tokens: Tokens::Counter,
        }
    }

    /// Starts configuring a lock.
    pub fn builder(conn: C) -> LockBuilder<C> {
        LockBuilder {
            conn,
            prefix: "lock".into(),
            drift: Drift::DEFAULT,
            owners: OwnerSource::Random,
            native: true,
            ack: None,
            tokens: Tokens::Counter,
        }
    }

    /// The key holding the lease for `name`.
    pub fn key(&self, name: &str) -> Result<String> {
        self.prefix.key(name)
    }

    /// The key of the fence counter for `name`.
    pub fn fence_key(&self, name: &str) -> Result<String> {
        Ok(crate::keys::concat(&[&self.prefix.key(name)?, ":fence"]))
    }

    /// The drift allowance in force.
    pub fn drift(&self) -> Drift {
        self.drift
    }

    /// The acknowledgement a winning acquire waits for, if any
    /// ([`LockBuilder::acknowledged`]).
    pub fn acknowledgement(&self) -> Option<Acknowledgement> {
        self.ack
    }

    /// How this lock issues tokens ([`LockBuilder::tokens`]).
    pub fn tokens(&self) -> Tokens {
        self.tokens
    }

    /// One attempt to take `name` for `ttl`. `Ok(None)` when someone holds it.
    ///
    /// On `Err(e)` with `e.outcome_is_unknown()`, the lock may have been
    /// taken: it will expire after `ttl` at the latest.
    ///
    /// A key of another type at `lock:{name}` or its counter is
    /// [`Error::WrongType`]; a counter that is not a positive integer `INCR`
    /// can advance is [`Error::CorruptState`]. Neither takes the lock or
    /// changes the counter.
    ///
    /// With [`LockBuilder::acknowledged`], a winning acquire then waits for
    /// the replicas: too few is [`Error::NotAcknowledged`] (not an unknown
    /// outcome: the token was consumed, the lease released and not handed
    /// out), and a `WAIT` that times out on the client or loses the
    /// connection is the usual unknown outcome (the lease is released if
    /// the release gets through, and otherwise expires after `ttl`).
    pub async fn acquire(&self, name: &str, ttl: Ttl) -> Result<Option<Lease>> {
        let key = self.key(name)?;
        let fence = crate::keys::concat(&[&key, ":fence"]);
        let owner = self.owners.next_owner(16);
        // Everything that depends only on the input is computed before the
        // request is sent: nothing after the send may fail except parsing
        // the reply, and that failure is a typed error, never a panic.
        let usable = self.drift.usable(ttl);
        let mut conn = self.conn.clone();
        let sent_at = Instant::now();
        let script = match self.tokens {
            Tokens::Counter => &*ACQUIRE,
            Tokens::TimeFloored => &*ACQUIRE_FLOORED,
        };
        let reply: Value = script
            .call([&key, &fence])
            .arg(owner.as_str())
            .arg(ttl.as_millis())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| match Error::from_redis(e, &key) {
                // The script reports the counter, not the lock key.
                Error::CorruptState { detail, .. } => Error::corrupt(&fence, detail),
                other => other,
            })?;
        let Some(token) = token_from_reply(reply, &fence)? else { return Ok(None) };
        let lease = Lease { name: name.to_string(), key, owner, token, ttl, sent_at, deadline: after(sent_at, usable) };
        if let Some(ack) = self.ack {
            // The same connection: WAIT counts this connection's writes.
            if let Err(e) = ack.wait(&mut conn, &lease.key).await {
                // A lease nobody will use: hand it back now rather than let
                // it block the name for a TTL. Best effort; the error the
                // caller needs is the acknowledgement's.
                let _ = self.release(&lease).await;
                return Err(e);
            }
        }
        Ok(Some(lease))
    }

    /// Compare-and-delete. `Ok(false)` when the lease had already expired or
    /// belongs to someone else now (their lease is left untouched).
    pub async fn release(&self, lease: &Lease) -> Result<bool> {
        let mut conn = self.conn.clone();
        let (key, owner) = (lease.key.as_str(), lease.owner.as_str());
        let native = self.commands.commands(&mut conn).await.delete(key, owner);
        let n: i64 = match self.commands.run(&mut conn, native, key).await? {
            Some(n) => n,
            None => {
                RELEASE.call([key]).arg(owner).invoke_async(&mut conn).await.map_err(|e| Error::from_redis(e, key))?
            }
        };
        Ok(n == 1)
    }

    /// Compare-and-pexpire to `ttl` from now. `Ok(false)` when the lease is
    /// gone (it is not recreated) or someone else holds the name. On success
    /// the lease's TTL and local deadline move forward, measured from the
    /// moment this request was sent.
    ///
    /// On `Err` the outcome is unknown: the extend may have run and set the
    /// key to live `ttl` from about now. When that is sooner than the
    /// lease's local deadline (an extend asking a shorter TTL than the lease
    /// has left), the deadline is brought forward to what `ttl` would give,
    /// so the lease never trusts itself past a key that may have expired;
    /// a longer `ttl` changes nothing (the lease cannot count on it).
    pub async fn extend(&self, lease: &mut Lease, ttl: Ttl) -> Result<bool> {
        let usable = self.drift.usable(ttl);
        // Measured from before any detection: a deadline counted from the
        // earlier moment is the conservative one.
        let sent_at = Instant::now();
        match self.extend_request(lease, ttl).await {
            Ok(true) => {
                lease.ttl = ttl;
                lease.sent_at = sent_at;
                lease.deadline = after(sent_at, usable);
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                lease.deadline = lease.deadline.min(after(sent_at, usable));
                Err(e)
            }
        }
    }

    /// The extend request itself: whether the server moved the key.
    async fn extend_request(&self, lease: &Lease, ttl: Ttl) -> Result<bool> {
        let mut conn = self.conn.clone();
        let (key, owner) = (lease.key.as_str(), lease.owner.as_str());
        let native = self.commands.commands(&mut conn).await.extend(key, owner, ttl.as_millis());
        // The native `SET … IFEQ` answers OK or nil; the script 1 or 0.
        let extended = match self.commands.run::<Option<String>, _>(&mut conn, native, key).await? {
            Some(reply) => reply.is_some(),
            None => {
                let n: i64 = EXTEND
                    .call([key])
                    .arg(owner)
                    .arg(ttl.as_millis())
                    .invoke_async(&mut conn)
                    .await
                    .map_err(|e| Error::from_redis(e, key))?;
                n == 1
            }
        };
        Ok(extended)
    }

    /// The commands [`Lock::release`] and [`Lock::extend`] send on this
    /// connection: asks the server with `COMMAND INFO` the first time (and
    /// after a failed question), then remembers the answer for this lock and
    /// its clones. [`CompareCommands::Scripts`] when built with
    /// `native_commands(false)`.
    pub async fn compare_commands(&self) -> CompareCommands {
        self.commands.commands(&mut self.conn.clone()).await
    }

    /// Acquires `name`, runs `body` with the lease, then releases.
    /// The body does not run when the lock is taken. Nothing stops the body
    /// when the lease expires under it: [`Release::AlreadyGone`] in the
    /// outcome reports that afterwards. For a body that must stop in time,
    /// use [`Lock::with_lock_guarded`].
    ///
    /// `Err` only comes from the acquire (the body did not run). Once the
    /// body has run, its output is always returned, in
    /// [`LockOutcome::Ran`], beside the release's fate: a release that fails
    /// or times out is [`Release::Unknown`], not an error. The release waits
    /// as long as the connection lets it: give the connection a response
    /// timeout.
    pub async fn with_lock<T, F, Fut>(&self, name: &str, ttl: Ttl, body: F) -> Result<LockOutcome<T>>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = T>,
    {
        let Some(lease) = self.acquire(name, ttl).await? else {
            return Ok(LockOutcome::NotAcquired);
        };
        let token = lease.token;
        let output = body(lease.clone()).await;
        let release = Release::from_reply(self.release(&lease).await);
        Ok(LockOutcome::Ran { output, token, release })
    }

    /// The last fencing token issued for `name` (the holder's, if held).
    /// A counter that is not a canonical decimal in `0..=2^63 − 1` is
    /// [`Error::CorruptState`].
    pub async fn current_token(&self, name: &str) -> Result<Option<FencingToken>> {
        let fence = self.fence_key(name)?;
        let mut conn = self.conn.clone();
        let raw: Option<Vec<u8>> =
            redis::cmd("GET").arg(&fence).query_async(&mut conn).await.map_err(|e| Error::from_redis(e, &fence))?;
        // The counter is a Redis integer: INCR never takes it past 2^63 − 1.
        raw.map(|text| {
            FencingToken::parse_canonical(&text).filter(|t| i64::try_from(t.get()).is_ok()).ok_or_else(|| {
                let text = String::from_utf8_lossy(&text);
                Error::corrupt(&fence, format!("fence counter {text:?} is not an integer in 0..=2^63 − 1"))
            })
        })
        .transpose()
    }

    /// The server-side time left on `name`'s lease; `None` when not held.
    pub async fn remaining_ttl(&self, name: &str) -> Result<Option<Duration>> {
        let key = self.key(name)?;
        let mut conn = self.conn.clone();
        let pttl: i64 =
            redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.map_err(|e| Error::from_redis(e, &key))?;
        match pttl {
            -2 => Ok(None),
            ms if ms >= 0 => Ok(Some(Duration::from_millis(ms as u64))),
            other => {
                Err(Error::corrupt(&key, format!("PTTL {other}: the lock key has no expiry; something else wrote it")))
            }
        }
    }

    /// A builder holding this lock's settings, so a primitive built on a
    /// caller's lock (the election) can adjust them before building its own.
    pub(crate) fn to_builder(&self) -> LockBuilder<C> {
        LockBuilder {
            conn: self.conn.clone(),
            prefix: self.prefix.as_str().to_string(),
            drift: self.drift,
            owners: self.owners.clone(),
            native: self.commands.enabled(),
            ack: self.ack,
            tokens: self.tokens,
        }
    }
}

/// The acquire script's reply: nil when held, else the token as an integer
/// (below 2^53) or as its exact decimal string (from 2^53 on; ADR 0006).
fn token_from_reply(reply: Value, fence: &str) -> Result<Option<FencingToken>> {
    let token = match reply {
        Value::Nil => return Ok(None),
        Value::Int(n) => u64::try_from(n).ok().map(FencingToken::new),
        Value::BulkString(text) => FencingToken::parse_canonical(&text),
        other => {
            return Err(Error::UnexpectedReply {
                key: fence.to_string(),
                detail: format!("acquire script returned {other:?}"),
            })
        }
    };
    // The script refuses counters below 1 itself; a zero or an unparsable
    // token here means the reply was not the counter's.
    match token {
        Some(t) if t.get() > 0 => Ok(Some(t)),
        _ => Err(Error::UnexpectedReply {
            key: fence.to_string(),
            detail: "acquire script returned a token that is not a positive integer".into(),
        }),
    }
}
