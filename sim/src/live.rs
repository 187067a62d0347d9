//! The live tier: a scenario's own world, run in real time.
//!
//! The simulation (tier 1) runs every actor on turmoil's simulated network
//! and pins every server's clock to simulated time: fast, and one history
//! per seed. The question every reader asks of it is whether it tells the
//! truth. The live tier answers by running **the same scenario code** — the
//! same plan drawn from the same seed, the same actors, the same history,
//! checkers and histograms — on a real tokio runtime, over real loopback
//! TCP, against redis-servers on their real clocks, with the faults made
//! for real. `rp-sim live` is its command; [`Tier`] is the one switch
//! ([`crate::Servers::live`]), read by [`crate::World::new`].
//!
//! What each fault is, live (`world/live.rs` applies them):
//!
//! | fault | simulated | live |
//! |---|---|---|
//! | partition, one-way, hold, latency | turmoil's links | the node's proxy (`proxy.rs`): the node's bridge drops, holds or delays the frames of the client's connections on a real socket |
//! | server pause | the bridge holds requests | `SIGSTOP` / `SIGCONT` of redis-server |
//! | server restart | flush, host bounced | `SIGKILL`, a new process at the fault's end (no persistence); every connection dropped |
//! | clock step | the pin moves | the clock library's offset over the real clock |
//! | replication cut, failover | real replicas | the same real replicas, asynchronous as in production (no replication barrier) |
//! | client pause | the actor's futures frozen | the same, in real time (not yet a separate OS process) |
//! | a workload's aimed delay | the bridge, in simulated time | the bridge, in real time |
//!
//! What only the simulation can do: exact instants (a fault lands when the
//! runtime wakes, not on the millisecond), pinned clocks (a server's clock
//! runs while a command waits), replies in the seed's order. A partitioned
//! client's *connect* succeeds live (the kernel completes the handshake
//! before the proxy sees it) and its first request goes unanswered; in the
//! simulation the connect itself times out.
//!
//! The history is in milliseconds since the run's start, as simulated time
//! is; each live run also records its wall-clock start as the world's epoch,
//! so server times in the execution logs read as in the simulation.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use core::time::Duration;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// Which tier a world runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Tier {
    /// turmoil's simulated network and time; server clocks pinned: one
    /// history per seed.
    #[default]
    Simulated,
    /// Real time, real sockets, real faults: the module docs say what
    /// differs.
    Live,
}

/// What a live run's thread knows: when the run started, where each node's
/// proxy listens, and which client host each proxied connection is from.
struct Context {
    start: Instant,
    /// The world's epoch (Unix ms): what server clocks read at the start.
    epoch_unix_ms: u64,
    nodes: BTreeMap<String, SocketAddr>,
    hosts: BTreeMap<SocketAddr, Arc<str>>,
}

thread_local! {
    /// Set for the length of one live run on the thread running it
    /// ([`Run`]); empty in the simulation.
    static CONTEXT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// One live run on this thread: its clock starts now, and each node's
/// proxy is found by name. Dropped, the thread is back to the simulation's
/// rules.
pub(crate) struct Run(());

impl Run {
    /// Starts the run's clock, whose time 0 is the world's epoch
    /// `epoch_unix_ms`; the nodes are added as their proxies listen.
    pub(crate) fn start(epoch_unix_ms: u64) -> Run {
        let context = Context { start: Instant::now(), epoch_unix_ms, nodes: BTreeMap::new(), hosts: BTreeMap::new() };
        CONTEXT.with(|c| *c.borrow_mut() = Some(context));
        Run(())
    }

    /// Node `name`'s proxy listens at `addr`.
    pub(crate) fn listen(&self, name: &str, addr: SocketAddr) {
        with(|c| {
            c.nodes.insert(name.to_string(), addr);
        });
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        CONTEXT.with(|c| c.borrow_mut().take());
    }
}

fn with<T>(f: impl FnOnce(&mut Context) -> T) -> Option<T> {
    CONTEXT.with(|c| c.borrow_mut().as_mut().map(f))
}

/// Time since the live run on this thread started; `None` outside one.
pub(crate) fn elapsed() -> Option<Duration> {
    with(|c| c.start.elapsed())
}

/// The time since the world's epoch in the live run on this thread (what
/// its servers' clocks read, less any step); `None` outside one.
pub(crate) fn since_epoch() -> Option<Duration> {
    with(|c| Duration::from_millis(c.epoch_unix_ms) + c.start.elapsed())
}

/// `instant` as time since the live run on this thread started, exactly
/// (one instant gives one answer, however late it is asked); `None`
/// outside a live run.
pub(crate) fn since_start(instant: Instant) -> Option<Duration> {
    with(|c| instant.saturating_duration_since(c.start))
}

/// Whether this thread is running a live run.
pub(crate) fn is_live() -> bool {
    with(|_| ()).is_some()
}

/// Connects to node `node`'s proxy for a client on host `host`, and tells
/// the proxy which host the connection is from (what link faults aim at).
/// `None` when this thread runs no live run or has no such node.
pub(crate) async fn connect(node: &str, host: &Arc<str>) -> Option<std::io::Result<tokio::net::TcpStream>> {
    let addr = with(|c| c.nodes.get(node).copied())??;
    let stream = match tokio::net::TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    if let Err(e) = stream.set_nodelay(true) {
        return Some(Err(e));
    }
    match stream.local_addr() {
        Ok(at) => {
            with(|c| c.hosts.insert(at, Arc::clone(host)));
            Some(Ok(stream))
        }
        Err(e) => Some(Err(e)),
    }
}

/// The client host a proxied connection from `peer` was opened by.
pub(crate) fn host_of(peer: SocketAddr) -> Option<Arc<str>> {
    with(|c| c.hosts.get(&peer).cloned()).flatten()
}
