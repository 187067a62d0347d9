//! `FencedStore`: the resource side of fencing.
//!
//! A fencing token protects nothing unless the resource checks it. This store
//! keeps, per key, the value and the highest token it has accepted, and
//! refuses any write with a lower token. Equal tokens are accepted, so the
//! current holder can write repeatedly. The check and the write are one Lua
//! script, so no interleaving can slip a stale write between them.
//!
//! What fencing does **not** do: detect staleness. A holder whose lease has
//! expired can still write *before* the new holder's first write, and is
//! accepted (reference case 13). Fencing orders writes; it does not know time.
//!
//! Tokens are compared exactly over the whole `u64` range (as canonical
//! decimal strings, never as Lua numbers: ADR 0006). A stored token this
//! library could not have written is [`Error::CorruptState`], from `write`
//! and `read` alike.
//!
//! On a replicated Redis an accepted write can be lost by a failover (the
//! promoted replica never had it); [`FencedStore::acknowledged`] makes an
//! accepted write wait for replicas to confirm it (`WAIT`, ADR 0016).
//!
//! ```no_run
//! # async fn demo(conn: redis::aio::MultiplexedConnection, lease: redis_primitives::Lease) -> redis_primitives::Result<()> {
//! use redis_primitives::{FencedStore, WriteOutcome};
//! let store = FencedStore::new(conn);
//! match store.write("report", b"v2", lease.token()).await? {
//!     WriteOutcome::Accepted => {}
//!     WriteOutcome::Rejected { highest_seen, .. } => {
//!         eprintln!("a newer holder (token {highest_seen}) already wrote; stopping");
//!     }
//! }
//! # Ok(()) }
//! ```

use std::sync::LazyLock;

use crate::script_source::Script;

use crate::acknowledgement::Acknowledgement;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::keys::Prefix;
use crate::script_source;
use crate::token::FencingToken;

static WRITE: LazyLock<Script> = LazyLock::new(|| script_source::script(script_source::FENCED_WRITE));

/// A key-value resource that refuses writes carrying a stale fencing token.
#[derive(Debug, Clone)]
pub struct FencedStore<C> {
    conn: C,
    prefix: Prefix,
    ack: Option<Acknowledgement>,
}

/// The result of a fenced write. A rejection is a value, not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The write was applied.
    Accepted,
    /// A write with a higher token was accepted earlier; nothing changed.
    Rejected {
        /// The token this write carried.
        rejected_token: FencingToken,
        /// The highest token the resource has accepted.
        highest_seen: FencingToken,
    },
}

/// A stored value and the token that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The value bytes.
    pub value: Vec<u8>,
    /// The token of the accepted write that stored them.
    pub token: FencingToken,
}

impl<C: Connection> FencedStore<C> {
    /// A store with the default prefix `"fenced"` (keys `fenced:{key}`).
    pub fn new(conn: C) -> FencedStore<C> {
        FencedStore { conn, prefix: Prefix::new("fenced").expect("the default prefix is valid"), ack: None }
    }

    /// A store with a custom key prefix.
    pub fn with_prefix(conn: C, prefix: impl Into<String>) -> Result<FencedStore<C>> {
        Ok(FencedStore { conn, prefix: Prefix::new(prefix)?, ack: None })
    }

    /// The Redis key backing `key`.
    pub fn redis_key(&self, key: &str) -> Result<String> {
        self.prefix.key(key)
    }

    /// Writes `value` under `key` unless a higher token has written before.
    /// A stored token that is not a canonical decimal `u64` is
    /// [`Error::CorruptState`], and nothing is written.
    ///
    /// With [`FencedStore::acknowledged`], an accepted write then waits for
    /// the replicas; too few is [`Error::NotAcknowledged`], and the write
    /// **was applied** on the primary all the same (a failover may lose
    /// it). A rejected write waits for nothing.
    pub async fn write(&self, key: &str, value: impl AsRef<[u8]>, token: FencingToken) -> Result<WriteOutcome> {
        let rkey = self.redis_key(key)?;
        let mut conn = self.conn.clone();
        let (accepted, highest): (i64, String) = WRITE
            .call([&rkey])
            .arg(value.as_ref())
            .arg(token.get())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(e, &rkey))?;
        if accepted == 1 {
            if let Some(ack) = self.ack {
                // The same connection: WAIT counts this connection's writes.
                ack.wait(&mut conn, &rkey).await?;
            }
            return Ok(WriteOutcome::Accepted);
        }
        let highest_seen = parse_stored(highest.as_bytes(), &rkey)?;
        Ok(WriteOutcome::Rejected { rejected_token: token, highest_seen })
    }

    /// The current value and the token that wrote it; `None` if never
    /// written. A corrupt stored token or a half-written entry is
    /// [`Error::CorruptState`], as in [`FencedStore::write`].
    pub async fn read(&self, key: &str) -> Result<Option<Stored>> {
        let rkey = self.redis_key(key)?;
        let mut conn = self.conn.clone();
        let (token, value): (Option<Vec<u8>>, Option<Vec<u8>>) = redis::cmd("HMGET")
            .arg(&rkey)
            .arg("token")
            .arg("value")
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(e, &rkey))?;
        match (token, value) {
            (Some(t), Some(v)) => Ok(Some(Stored { value: v, token: parse_stored(&t, &rkey)? })),
            (None, None) => Ok(None),
            _ => Err(Error::corrupt(&rkey, "half-written fenced entry (a token without a value or the reverse)")),
        }
    }
}

impl<C> FencedStore<C> {
    /// Makes every accepted [`FencedStore::write`] wait for `ack.replicas()`
    /// replicas to confirm it (`WAIT`, on the same connection, right after
    /// the write script); default: no waiting. Fewer in time is
    /// [`Error::NotAcknowledged`], and the write **was applied** on the
    /// primary: it stands there (a later lower token is refused) and may be
    /// lost by a failover. A rejected write sends no `WAIT`. See
    /// [`Acknowledgement`] for what `WAIT` does not promise (it counts only
    /// this connection's writes and blocks the connection while it waits).
    ///
    /// ```no_run
    /// # async fn demo(conn: redis::aio::MultiplexedConnection, lease: redis_primitives::Lease) -> redis_primitives::Result<()> {
    /// use core::time::Duration;
    /// use redis_primitives::{Acknowledgement, Error, FencedStore};
    ///
    /// let store = FencedStore::new(conn).acknowledged(Acknowledgement::new(1, Duration::from_millis(100))?);
    /// match store.write("report", b"v2", lease.token()).await {
    ///     Ok(outcome) => println!("{outcome:?}"),
    ///     Err(Error::NotAcknowledged { .. }) => eprintln!("written on the primary only: a failover may lose it"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn acknowledged(mut self, ack: Acknowledgement) -> Self {
        self.ack = Some(ack);
        self
    }
}

/// A stored token, which the write script only ever stores in canonical form.
fn parse_stored(text: &[u8], key: &str) -> Result<FencingToken> {
    FencingToken::parse_canonical(text).ok_or_else(|| {
        Error::corrupt(key, format!("stored token {:?} is not a canonical decimal u64", String::from_utf8_lossy(text)))
    })
}
