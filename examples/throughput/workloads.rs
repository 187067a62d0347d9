//! The workloads measured and the pairs compared: each primitive against
//! the hand-written Redis it replaces, with the scripts of the latter.

use crate::*;

/// What a user writes without a fencing token: the compare-and-delete
/// release every Redis lock tutorial shows.
pub(crate) const COMPARE_AND_DELETE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// The textbook sliding-window log: trim, count, add, expire, in one script.
pub(crate) const TEXTBOOK_LOG: &str = "
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, tonumber(ARGV[1]) - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0";

/// The same, with the server's clock instead of the client's: what the
/// log's exactness under client clock skew costs, alone.
pub(crate) const TEXTBOOK_LOG_SERVER_TIME: &str = "
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[1]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0";

/// One side of a comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    LockPairs,
    /// An alternative fenced acquire measured for ADR 0014 (`--only multi`):
    /// `MULTI`, `SET NX PX`, `INCR`, `EXEC`, then the compare-and-delete.
    MultiPairs,
    /// Another alternative measured for ADR 0014 (`--only module --module
    /// PATH`): the acquire as a module command (`FENCE.ACQUIRE`, the
    /// experiment in examples/fence_acquire_module.c), then the
    /// compare-and-delete. Needs the module loaded.
    ModulePairs,
    UnfencedPairs,
    UnfencedNativePairs,
    LogDecisions,
    TextbookLog,
    TextbookLogServerTime,
    CounterDecisions,
    FixedWindow,
    FencedWrites,
    PlainSet,
    /// `Tokens::TimeFloored` pairs (ADR 0017).
    FlooredPairs,
    /// Acknowledged pairs, `WAIT 1` after each winning acquire (ADR 0016):
    /// needs a replica.
    AcknowledgedPairs,
    /// Acknowledged fenced writes: needs a replica.
    AcknowledgedWrites,
}

/// The `WAIT` timeout of the acknowledged rows: far above a local
/// replica's confirmation, so a row measures the wait, not the timeout.
pub(crate) const ACK_TIMEOUT: Duration = Duration::from_millis(1000);

/// The response timeout of the connection the acknowledged rows use: a
/// `WAIT` must be answered, not abandoned at redis-rs's default 500 ms.
pub(crate) const ACK_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The comparisons: (this crate, the floor, label, scripts per op of
/// this crate's side, for its share of the EVALSHA ceiling).
pub(crate) const PAIRS: [Pair; 6] = [
    (
        Workload::LockPairs,
        Workload::UnfencedPairs,
        "lock acquire+release pairs/s",
        "`SET NX PX` + compare-and-delete (unfenced)",
        2.0,
    ),
    (Workload::LogDecisions, Workload::TextbookLog, "sliding-log decisions/s", "textbook one-script log", 1.0),
    (
        Workload::LogDecisions,
        Workload::TextbookLogServerTime,
        "sliding-log decisions/s",
        "textbook log on the server's `TIME`",
        1.0,
    ),
    (
        Workload::CounterDecisions,
        Workload::FixedWindow,
        "sliding-counter decisions/s",
        "`NaiveFixedWindow` (`INCR` + `EXPIRE`)",
        1.0,
    ),
    (Workload::FencedWrites, Workload::PlainSet, "fenced writes/s", "plain `SET`", 1.0),
    (
        Workload::FlooredPairs,
        Workload::LockPairs,
        "time-floored lock pairs/s",
        "this crate's default pairs (`Tokens::Counter`)",
        2.0,
    ),
];

/// With one replica attached, on the same primary and connection: what
/// waiting for it costs.
pub(crate) const REPLICATED_PAIRS: [Pair; 2] = [
    (
        Workload::AcknowledgedPairs,
        Workload::LockPairs,
        "acknowledged lock pairs/s (`WAIT 1 1000`)",
        "the same pairs unacknowledged",
        2.0,
    ),
    (
        Workload::AcknowledgedWrites,
        Workload::FencedWrites,
        "acknowledged fenced writes/s (`WAIT 1 1000`)",
        "the same writes unacknowledged",
        1.0,
    ),
];

/// One comparison: (this crate, the floor, label, floor's description,
/// scripts per op of this crate's side).
pub(crate) type Pair = (Workload, Workload, &'static str, &'static str, f64);

/// On a server with `DELIFEQ`, the lock pair beside the unfenced pair a
/// user of that server could write; the lock's release is native there, so
/// a pair is one script.
pub(crate) const NATIVE_PAIR: Pair = (
    Workload::LockPairs,
    Workload::UnfencedNativePairs,
    "lock acquire+release pairs/s",
    "`SET NX PX` + `DELIFEQ` (unfenced, native)",
    1.0,
);

/// Operations per second of `workload` with `in_flight` tasks on `conn`.
/// The unfenced acquire: `SET key owner NX PX 60000`.
pub(crate) fn set_nx_px_cmd(key: &str, owner: &str) -> redis::Cmd {
    redis::cmd("SET").arg(key).arg(owner).arg("NX").arg("PX").arg(60_000).to_owned()
}

/// Runs the unfenced acquire; distinct names never contend, so it must win.
pub(crate) async fn set_nx_px(conn: &mut MultiplexedConnection, key: &str, owner: &str) -> Result<(), BoxError> {
    let set: Option<String> = set_nx_px_cmd(key, owner).query_async(conn).await?;
    set.map(drop).ok_or_else(|| "distinct names never contend".into())
}

/// The textbook release; it must find its own key.
pub(crate) async fn compare_and_delete(
    cad: &redis::Script,
    conn: &mut MultiplexedConnection,
    key: &str,
    owner: &str,
) -> Result<(), BoxError> {
    let deleted: i64 = cad.key(key).arg(owner).invoke_async(conn).await?;
    if deleted == 1 {
        Ok(())
    } else {
        Err("compare-and-delete failed".into())
    }
}
