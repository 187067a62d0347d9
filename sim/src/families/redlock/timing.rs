//! A Redlock client's timing: its TTL, per-master timeout and end of
//! attempts, the connection settings that follow from them, and waiting
//! for a shifted instant. Shared by the client loop and its attempts.

use core::time::Duration;
use tokio::time::Instant;

use crate::net::NetConfig;

/// TTL, this client's per-master timeout and end of attempts (ms) of one run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    pub(super) ttl_ms: u64,
    pub(super) master_timeout_ms: u64,
    pub(super) length_ms: u64,
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
pub(super) fn net_for(master_timeout_ms: u64) -> NetConfig {
    let net = NetConfig::default();
    NetConfig { response_timeout: Duration::from_millis(master_timeout_ms.saturating_sub(2).max(1)), ..net }
}

/// Waits until `at` shifted by `shift_ms` (either way).
pub(super) async fn sleep_until_shifted(at: Instant, shift_ms: i64) {
    let shift = Duration::from_millis(shift_ms.unsigned_abs());
    let when = if shift_ms >= 0 { at + shift } else { at.checked_sub(shift).unwrap_or(at) };
    tokio::time::sleep_until(when).await;
}
