//! `Acknowledgement`: how many replicas must have a write before it counts.
//!
//! Redis replicates asynchronously: a primary answers a write before any
//! replica has it, so a primary that crashes right after a successful
//! acquire can be replaced by a replica that never saw the new fence
//! counter, and the promoted node hands the same token out again (the
//! failure `tests/library/replication.rs` shows first). With an
//! acknowledgement, a winning acquire (or an accepted fenced write) is
//! followed by `WAIT replicas timeout_ms` on the same connection, and only
//! counts if at least `replicas` replicas confirmed it in time; otherwise the
//! call is [`Error::NotAcknowledged`]. Opt in with
//! [`crate::LockBuilder::acknowledged`],
//! [`crate::election::ElectionBuilder::acknowledged`] or
//! [`crate::FencedStore::acknowledged`]. ADR 0016 weighs it.
//!
//! What `WAIT` is, and is not:
//!
//! - **Per connection.** `WAIT` waits for the replicas to acknowledge the
//!   last write *of the connection that sends it*. A
//!   `MultiplexedConnection` or a `ConnectionManager` clone is the same TCP
//!   connection, so the `WAIT` covers the script just run. A pool that hands
//!   each clone or call a different connection breaks this: `WAIT` on a
//!   connection that wrote nothing returns at once with every connected
//!   replica — an acknowledgement of nothing. So does a `ConnectionManager`
//!   that reconnects between the script's reply and the `WAIT`.
//! - **It blocks that connection.** The server reads nothing more from a
//!   connection while its `WAIT` waits, so every request multiplexed on it
//!   waits too (up to the timeout when a replica is behind or gone). Give
//!   acknowledged primitives a connection of their own if the others on it
//!   are latency-sensitive, and give that connection a response timeout
//!   longer than the `WAIT` timeout (redis-rs's default is 500 ms): a `WAIT`
//!   the client stops waiting for is [`Error::OutcomeUnknown`], not an
//!   answer.
//! - **Not strong consistency.** An acknowledged write is on `replicas`
//!   replicas; a failover may still promote one that is not among them
//!   (with two replicas and `replicas = 1`, the other one), and then the
//!   write is lost all the same. Acknowledge by as many replicas as your
//!   failover may choose from, or make the failover pick the most
//!   up-to-date one (Sentinel and Cluster favour the largest replication
//!   offset, after any configured priority and only among the replicas
//!   they can reach).
//! - **Its cost** is one more round trip after every winning call, plus the
//!   time the slowest required replica takes to confirm
//!   (`reports/throughput.md` measures it beside the plain pair).
//!
//! ```
//! use core::time::Duration;
//! use redis_primitives::Acknowledgement;
//!
//! let ack = Acknowledgement::new(1, Duration::from_millis(100))?;
//! assert_eq!((ack.replicas(), ack.timeout()), (1, Duration::from_millis(100)));
//! assert!(Acknowledgement::new(0, Duration::from_millis(100)).is_err()); // WAIT 0 proves nothing
//! assert!(Acknowledgement::new(1, Duration::ZERO).is_err()); // WAIT n 0 blocks forever
//! # Ok::<(), redis_primitives::Error>(())
//! ```

use core::num::NonZeroU32;
use core::time::Duration;

use crate::error::{Error, Result};

/// How many replicas must confirm a write, and how long to wait for them
/// (`WAIT replicas timeout_ms`). See the module docs for what it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Acknowledgement {
    replicas: NonZeroU32,
    timeout: Duration,
}

impl Acknowledgement {
    /// The longest accepted timeout, in milliseconds: 2^53 − 1 (about
    /// 285 000 years). The server adds its clock to the timeout in signed
    /// 64-bit milliseconds, and Valkey refuses a sum that overflows (`ERR
    /// timeout is out of range`), so a timeout that merely fits an `i64` is
    /// not enough; this bound leaves room for any clock until the year
    /// 285 000.
    pub const MAX_TIMEOUT_MILLIS: u64 = (1 << 53) - 1;

    /// At least `replicas` replicas, within `timeout`.
    ///
    /// [`Error::InvalidInput`] for `replicas == 0` (a `WAIT` for no replica
    /// confirms nothing), a zero timeout (`WAIT n 0` blocks forever), a
    /// timeout that is not a whole number of milliseconds (`WAIT` counts in
    /// milliseconds; rounding 0.4 ms down would be that endless wait) or one
    /// longer than [`Acknowledgement::MAX_TIMEOUT_MILLIS`] (which covers
    /// every timeout whose milliseconds do not fit an `i64`).
    ///
    /// ```
    /// use core::time::Duration;
    /// use redis_primitives::{Acknowledgement, Error};
    ///
    /// assert!(Acknowledgement::new(2, Duration::from_millis(250)).is_ok());
    /// assert!(matches!(
    ///     Acknowledgement::new(1, Duration::from_micros(1500)),
    ///     Err(Error::InvalidInput { what: "acknowledgement timeout", .. })
    /// ));
    /// assert!(Acknowledgement::new(1, Duration::MAX).is_err());
    /// ```
    pub fn new(replicas: u32, timeout: Duration) -> Result<Acknowledgement> {
        let replicas = NonZeroU32::new(replicas).ok_or_else(|| {
            Error::invalid("acknowledgement replicas", "must be at least 1 (WAIT for no replica confirms nothing)")
        })?;
        if timeout.is_zero() {
            return Err(Error::invalid(
                "acknowledgement timeout",
                "must be greater than zero (WAIT n 0 blocks forever)",
            ));
        }
        if timeout.subsec_nanos() % 1_000_000 != 0 {
            return Err(Error::invalid(
                "acknowledgement timeout",
                format!("{timeout:?} is not a whole number of milliseconds (WAIT counts in milliseconds)"),
            ));
        }
        if timeout.as_millis() > u128::from(Acknowledgement::MAX_TIMEOUT_MILLIS) {
            return Err(Error::invalid(
                "acknowledgement timeout",
                format!(
                    "{} ms exceeds the maximum of {} ms (the server's deadline must fit its 64-bit milliseconds)",
                    timeout.as_millis(),
                    Acknowledgement::MAX_TIMEOUT_MILLIS
                ),
            ));
        }
        Ok(Acknowledgement { replicas, timeout })
    }

    /// The number of replicas that must confirm.
    pub fn replicas(&self) -> u32 {
        self.replicas.get()
    }

    /// How long `WAIT` waits for them.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `WAIT` on `conn` (the connection that just wrote `key`) and
    /// checks the count. `key` names the write in the error.
    ///
    /// The `WAIT` travels in a pipeline behind `PTTL key`, whose reply is
    /// ignored: on one connection that is the same round trip, and a
    /// cluster connection sends a pipeline to the node of its first keyed
    /// command, the node that ran the write. Alone, `WAIT` (no key) is sent
    /// by redis-rs's cluster connection to every primary it knows, answering
    /// with the minimum: a shard without its replica would refuse every
    /// acquire on every shard, and a primary missing from a stale slot map
    /// (the one just promoted) would not be asked at all
    /// (`tests/cluster/mitigations.rs`).
    pub(crate) async fn wait(&self, conn: &mut impl redis::aio::ConnectionLike, key: &str) -> Result<()> {
        // Whole milliseconds, at most 2^53 − 1: checked by `new`.
        let timeout_ms = self.timeout.as_millis() as u64;
        let (_, acknowledged): (redis::Value, i64) = redis::pipe()
            .cmd("PTTL")
            .arg(key)
            .cmd("WAIT")
            .arg(self.replicas.get())
            .arg(timeout_ms)
            .query_async(conn)
            .await
            .map_err(|e| Error::from_redis(e, key))?;
        let acknowledged = u32::try_from(acknowledged).map_err(|_| Error::UnexpectedReply {
            key: key.to_string(),
            detail: format!("WAIT returned {acknowledged}, not a replica count"),
        })?;
        if acknowledged >= self.replicas.get() {
            Ok(())
        } else {
            Err(Error::NotAcknowledged { key: key.to_string(), acknowledged, required: self.replicas.get() })
        }
    }
}

/// Both sides of every documented edge: at least one replica, a timeout of
/// 1 ms to 2^53 − 1 ms in whole milliseconds (the range of a TTL), refused
/// with `InvalidInput` (moved here from the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;
    use crate::ttl::Ttl;

    #[test]
    fn a_replica_or_more_and_a_timeout_in_the_range_of_a_ttl() {
        assert_eq!(Acknowledgement::MAX_TIMEOUT_MILLIS, Ttl::MAX_MILLIS);
        let max = Acknowledgement::MAX_TIMEOUT_MILLIS;
        for (replicas, ms) in [(1, 1), (3, 500), (u32::MAX, 7), (1, max - 1), (1, max)] {
            let a = Acknowledgement::new(replicas, Duration::from_millis(ms)).unwrap();
            assert_eq!((a.replicas(), a.timeout()), (replicas, Duration::from_millis(ms)));
        }
        let ns = Duration::from_nanos;
        let refused = [
            (0, Duration::from_millis(5), "acknowledgement replicas"),
            (2, Duration::ZERO, "acknowledgement timeout"),
            (1, Duration::from_millis(max + 1), "acknowledgement timeout"),
            (1, Duration::from_millis(u64::MAX), "acknowledgement timeout"),
            (2, Duration::from_millis(5) + ns(1), "acknowledgement timeout"),
            (2, ns(999_999), "acknowledgement timeout"),
        ];
        for (replicas, timeout, what) in refused {
            let r = Acknowledgement::new(replicas, timeout);
            assert!(
                matches!(&r, Err(Error::InvalidInput { what: w, .. }) if *w == what),
                "{replicas}, {timeout:?}: {r:?}"
            );
        }
    }
}
