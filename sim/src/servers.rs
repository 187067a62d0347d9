//! The real redis-server processes behind the simulation.
//!
//! [`redis_primitives_testkit::RedisServer`] already knows how to start a
//! server on an ephemeral loopback port with `noeviction` and no persistence,
//! in its own process group, killed on drop and with the thread that started
//! it. This module adds what the harness needs on top:
//!
//! - the **clock library** preloaded, each server with its own
//!   [`ServerClock`] control file, and a start-up check that the preload
//!   really took effect (the dynamic linker only *warns* when it cannot load
//!   an `LD_PRELOAD` library, and a silently real clock would make every
//!   TTL in the simulation wrong);
//! - a **pool** ([`Servers`]) reused across the runs of an exploration:
//!   starting a server costs tens of milliseconds, resetting one
//!   (`FLUSHALL` + `SCRIPT FLUSH`, clock released) a fraction of one;
//! - a **process-wide registry** of live server process groups, so the
//!   binary's Ctrl-C handler can call [`shutdown_all`] and leave no orphans
//!   even when it exits without unwinding;
//! - **replicas** ([`ServerNode::set_replicas`]): a node may be a primary
//!   with real replicas (real replication, the testkit's), which share the
//!   primary's clock control file, so one pin sets the clock of the whole
//!   node, and with it of whichever server a failover promotes. Faults on
//!   the replication link and the failover itself are methods here with
//!   their undo ([`ServerNode::cut_replication`] /
//!   [`ServerNode::restore_replication`], [`ServerNode::fail_primary`] /
//!   [`ServerNode::promote`]); the world applies them.
//!
//! A replicated node's clock is never released between runs, only pinned
//! again: a replication link times out when its server's clock jumps
//! forward by more than `repl-timeout` (60 s) since the last byte, and real
//! time is two years after the simulation's epoch. Pinned clocks only ever
//! go back between runs, which no timeout counts.
//!
//! This is set-up code outside the simulation: `std::time` and blocking
//! sockets are fine here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use redis_primitives_testkit::{RedisServer, ServerConfig, ServerError};

use crate::clock::ServerClock;
pub use crate::error::SetupError;
use crate::placement::{Pinning, Placement};

/// A key a run left on a server ([`ServerNode::keys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAtEnd {
    /// Its name.
    pub key: String,
    /// Its `TYPE` (`string`, `hash`, `zset`, ...).
    pub kind: String,
    /// Its `PTTL` in ms (−1: no expiry).
    pub pttl_ms: i64,
}

/// Where `build.rs` put the clock library when this crate was compiled.
const BUILT_CLOCK_LIB: &str = env!("RP_CLOCK_LIB");

/// The clock library to preload: `$RP_CLOCK_LIB` at run time if set, else
/// the one `build.rs` compiled. An error (saying how to fix it) if missing.
pub fn clock_library() -> Result<PathBuf, SetupError> {
    let path = match std::env::var_os("RP_CLOCK_LIB") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(BUILT_CLOCK_LIB),
    };
    check_clock_library(path)
}

/// `path` if it is a file, else [`SetupError::ClockLibraryMissing`].
pub fn check_clock_library(path: PathBuf) -> Result<PathBuf, SetupError> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(SetupError::ClockLibraryMissing { path })
    }
}

// ---------------------------------------------------------------------------
// Registry for Ctrl-C.

const SLOTS: usize = 256;

/// Process-group ids of live servers. A fixed array of atomics (no lock, no
/// allocation) so that [`shutdown_all`] is async-signal-safe.
static LIVE: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

fn register(pid: Option<u32>) -> Option<usize> {
    let pid = i32::try_from(pid?).ok()?;
    LIVE.iter().position(|slot| slot.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire).is_ok())
}

fn unregister(slot: Option<usize>) {
    if let Some(i) = slot {
        LIVE[i].store(0, Ordering::Release);
    }
}

/// Kills (SIGKILL, whole process group) every redis-server this process
/// started through this module and has not stopped yet.
///
/// Safe to call from a signal handler: it only performs atomic swaps and
/// `kill(2)`. Meant for the binary's Ctrl-C handler; normal shutdown happens
/// when [`Servers`] / [`ServerNode`] are dropped.
pub(crate) fn shutdown_all() {
    for slot in &LIVE {
        let pid = slot.swap(0, Ordering::AcqRel);
        if pid > 0 {
            // SAFETY: kill(2) has no memory-safety preconditions and is
            // async-signal-safe.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

// ---------------------------------------------------------------------------

/// One Redis node: a redis-server (the primary) with the clock library
/// preloaded and its control file, and its replicas, if any.
#[derive(Debug)]
pub struct ServerNode {
    server: RedisServer,
    clock: Arc<ServerClock>,
    slot: Option<usize>,
    config: ServerConfig,
    replicas: Vec<Replica>,
}

/// A replica of a node's primary.
#[derive(Debug)]
struct Replica {
    server: RedisServer,
    slot: Option<usize>,
    /// Whether its link is cut ([`ServerNode::cut_replication`]).
    cut: bool,
}

impl ServerNode {
    /// Starts a server with its own clock control file and checks that the
    /// clock library governs its wall clock.
    ///
    /// `PR_SET_PDEATHSIG` (testkit) ties the server to the *thread* that
    /// starts it: start servers from a thread that outlives their use.
    pub fn start() -> Result<ServerNode, SetupError> {
        let lib = clock_library()?;
        let clock = Arc::new(ServerClock::create()?);
        // hz 100: a full sync's end is noticed on the server's timer, so a
        // failover's rejoining replica is online in ~20 ms instead of ~150.
        let args = ["--hz", "100", "--jemalloc-bg-thread", "no"].map(String::from).to_vec();
        let config = ServerConfig { preload: Some(lib), env: vec![clock.env()], args, ..ServerConfig::default() };
        let server = RedisServer::start_with(config.clone())?;
        let slot = register(server.pid());
        let node = ServerNode { server, clock, slot, config, replicas: Vec::new() };
        check_clock(&node.clock, &node.server)?;
        Ok(node)
    }

    /// Starts or stops replicas until the node has `n`, every one linked
    /// and caught up. Replicas share the primary's clock file.
    pub fn set_replicas(&mut self, n: usize) -> Result<(), SetupError> {
        while self.replicas.len() > n {
            if let Some(mut r) = self.replicas.pop() {
                unregister(r.slot.take());
                r.server.stop();
            }
        }
        while self.replicas.len() < n {
            let server = RedisServer::start_replica_of(&self.server, self.config.clone())?;
            let slot = register(server.pid());
            // The replica's clock is the node's: check that it obeys.
            let checked = check_clock(&self.clock, &server);
            self.replicas.push(Replica { server, slot, cut: false });
            checked?;
        }
        Ok(())
    }

    /// How many replicas the node has.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// How many replicas receive the primary's writes now (linked, not cut).
    pub fn linked_replicas(&self) -> usize {
        if !self.server.is_running() {
            return 0;
        }
        self.replicas.iter().filter(|r| !r.cut).count()
    }

    /// Cuts every replica's link: they keep their data and role and receive
    /// nothing more until [`ServerNode::restore_replication`].
    pub fn cut_replication(&mut self) -> Result<(), SetupError> {
        for r in self.replicas.iter_mut().filter(|r| !r.cut) {
            r.server.cut_replication()?;
            r.cut = true;
        }
        Ok(())
    }

    /// Relinks every cut replica and waits until each has caught up with
    /// the primary. A no-op for linked replicas.
    pub fn restore_replication(&mut self) -> Result<(), SetupError> {
        if !self.server.is_running() {
            // The primary is down (a failover in progress): the replicas
            // are relinked when one of them is promoted.
            return Ok(());
        }
        for r in self.replicas.iter_mut().filter(|r| r.cut) {
            r.server.restore_replication(&self.server)?;
            r.cut = false;
        }
        Ok(())
    }

    /// The first half of a failover: the primary crashes (SIGKILL). Its
    /// replicas keep what they had received.
    pub fn fail_primary(&mut self) {
        self.stop();
    }

    /// The second half: the first replica becomes the primary with what it
    /// had, the other replicas follow it, and the old primary comes back as
    /// its replica (a new process, empty, then fully synced). The node's
    /// address ([`ServerNode::addr`]) is the new primary's from now on.
    pub fn promote(&mut self) -> Result<(), SetupError> {
        if self.replicas.is_empty() {
            return Err(SetupError::InvalidPlan { reason: "a failover needs a node with replicas".into() });
        }
        let next = self.replicas.remove(0);
        next.server.promote()?;
        unregister(self.slot.take());
        let old = core::mem::replace(&mut self.server, next.server);
        self.slot = next.slot;
        let mut old = Replica { server: old, slot: None, cut: false };
        old.server.restart()?;
        old.slot = register(old.server.pid());
        self.replicas.push(old);
        for r in &mut self.replicas {
            r.server.restore_replication(&self.server)?;
            r.cut = false;
        }
        Ok(())
    }

    /// The server's real address (127.0.0.1:port).
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// A `redis://` URL for direct (non-simulated) access in tests.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The clock control handle.
    pub fn clock(&self) -> &Arc<ServerClock> {
        &self.clock
    }

    /// The underlying process handle.
    pub fn server(&self) -> &RedisServer {
        &self.server
    }

    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        self.server.is_running()
    }

    /// Forgets every key and every cached script: what a restart without
    /// persistence loses, without the cost of a new process.
    pub fn flush(&self) -> Result<(), SetupError> {
        for cmd in [&["FLUSHALL"][..], &["SCRIPT", "FLUSH"][..]] {
            let reply = self.server.command(cmd)?;
            if !reply.starts_with("+OK") {
                return Err(SetupError::Server(ServerError::NotReady {
                    port: self.server.port(),
                    log: format!("{} answered {reply:?}", cmd.join(" ")),
                }));
            }
        }
        Ok(())
    }

    /// Every key on the server with its type and `PTTL` (ms; −1 = no
    /// expiry), sorted by name: what a run left behind. Read directly, not
    /// through the simulation, while the clock is still pinned at the run's
    /// last instant, so the expiries are those of that instant.
    pub fn keys(&self) -> Result<Vec<KeyAtEnd>, SetupError> {
        let io = |source: redis::RedisError| SetupError::KeySnapshot { url: self.url(), source };
        let mut conn = redis::Client::open(self.url()).map_err(io)?.get_connection().map_err(io)?;
        // Raw bytes: a key name need not be UTF-8 (a job id a probe planted
        // with arbitrary bytes), and reading it as a `String` would fail the
        // whole snapshot. Each key is asked about by its exact bytes and
        // named lossily.
        let mut names: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut conn).map_err(io)?;
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for raw in names {
            let (kind, pttl_ms): (String, i64) =
                redis::pipe().cmd("TYPE").arg(&raw).cmd("PTTL").arg(&raw).query(&mut conn).map_err(io)?;
            out.push(KeyAtEnd { key: String::from_utf8_lossy(&raw).into_owned(), kind, pttl_ms });
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Kills the process and starts a new one on the same port (same clock
    /// file), with no data: a real crash and restart.
    pub fn restart(&mut self) -> Result<(), SetupError> {
        unregister(self.slot.take());
        let result = self.server.restart();
        self.slot = register(self.server.pid());
        result?;
        Ok(())
    }

    /// Stops the primary's process (`SIGSTOP`): a live server pause. It
    /// keeps its connections and its clock runs on; [`ServerNode::thaw`]
    /// continues it.
    pub(crate) fn freeze(&self) -> std::io::Result<()> {
        self.signal(libc::SIGSTOP)
    }

    /// Continues a process [`ServerNode::freeze`] stopped (`SIGCONT`).
    pub(crate) fn thaw(&self) -> std::io::Result<()> {
        self.signal(libc::SIGCONT)
    }

    fn signal(&self, signal: libc::c_int) -> std::io::Result<()> {
        let Some(pid) = self.server.pid().and_then(|p| libc::pid_t::try_from(p).ok()) else {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "the server is not running"));
        };
        // SAFETY: `kill` has no memory-safety preconditions; the pid is our
        // own child's, which the pool reaps only when it stops it.
        if unsafe { libc::kill(pid, signal) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Kills the process (SIGKILL). [`ServerNode::restart`] brings it back.
    pub fn stop(&mut self) {
        unregister(self.slot.take());
        self.server.stop();
    }

    /// Clock released, data and scripts flushed; restarted first if stopped.
    /// A server that refuses the flush (still `BUSY` in a script a previous
    /// run left looping, say) is restarted: every run starts clean.
    ///
    /// A replicated node keeps its clock pinned (see the module docs); a
    /// failover left half-done is completed, cut links are restored, the
    /// flush reaches the replicas through replication (and `SCRIPT FLUSH`
    /// is sent to each, as a promoted replica's script cache must start
    /// empty too), and the reset waits until every replica has caught up.
    pub fn reset(&mut self) -> Result<(), SetupError> {
        if self.replicas.is_empty() {
            self.clock.release();
            if !self.server.is_running() {
                self.restart()?;
            }
            if self.flush().is_err() {
                self.restart()?;
                self.flush()?;
            }
            return Ok(());
        }
        if let Err(first) = self.reset_replicated() {
            // Start the node over: a fresh primary and fresh replicas. If
            // that fails too, both reasons are reported.
            let n = self.replicas.len();
            let again = (|| {
                self.set_replicas(0)?;
                self.restart()?;
                self.flush()?;
                self.set_replicas(n)
            })();
            if let Err(second) = again {
                return Err(SetupError::Server(ServerError::NotReady {
                    port: self.server.port(),
                    log: format!("resetting a replicated node failed ({first}), and starting it over too ({second})"),
                }));
            }
        }
        Ok(())
    }

    fn reset_replicated(&mut self) -> Result<(), SetupError> {
        if !self.server.is_running() {
            self.promote()?;
        }
        self.restore_replication()?;
        self.flush()?;
        for r in &self.replicas {
            let reply = r.server.command(&["SCRIPT", "FLUSH"])?;
            if !reply.starts_with("+OK") {
                return Err(SetupError::Server(ServerError::NotReady {
                    port: r.server.port(),
                    log: format!("SCRIPT FLUSH answered {reply:?}"),
                }));
            }
        }
        self.server.await_replicas(self.replicas.len())?;
        Ok(())
    }
}

/// Pins `clock` to a known instant and reads `TIME` back from `server`
/// (which must run with that clock's file), then puts the clock back as it
/// was (pinned where it was, or released): a released clock would jump a
/// replicated node's clock forward (see the module docs).
fn check_clock(clock: &ServerClock, server: &RedisServer) -> Result<(), SetupError> {
    let before = clock.pinned_ns();
    // 2001-09-09T01:46:40Z: ten digits that appear in no real reply today.
    clock.pin(1_000_000_000_000);
    let reply = server.command(&["TIME"]);
    match before {
        Some(ns) => clock.pin_at(core::time::Duration::from_nanos(ns.max(0) as u64)),
        None => clock.release(),
    }
    let reply = reply?;
    if reply.contains("\r\n1000000000\r\n") {
        Ok(())
    } else {
        Err(SetupError::ClockNotEffective { port: server.port(), reply })
    }
}

impl Drop for ServerNode {
    fn drop(&mut self) {
        unregister(self.slot.take());
        for r in &mut self.replicas {
            unregister(r.slot.take());
        }
        // `RedisServer`'s own Drop kills each process group.
    }
}

/// A pool of [`ServerNode`]s, reused across the runs of an exploration.
///
/// By default ([`Placement::SharedCore`]) the thread that prepares the pool
/// and every server it starts share one CPU while the pool lives: the
/// simulation and its servers take turns, and a turn on one core costs a
/// context switch instead of two cross-core wake-ups (`placement.rs` says
/// why, with the measured gain).
#[derive(Debug, Default)]
pub struct Servers {
    nodes: Vec<ServerNode>,
    placement: Placement,
    pinning: Pinning,
    tier: crate::live::Tier,
}

impl Servers {
    /// An empty pool; servers start on demand ([`Servers::ensure`]).
    pub fn new() -> Servers {
        Servers::default()
    }

    /// An empty pool placed as `placement` says.
    pub fn with_placement(placement: Placement) -> Servers {
        Servers { placement, ..Servers::default() }
    }

    /// An empty pool for the live tier (`crate::live`): a world built on
    /// it runs in real time against these servers on their real clocks,
    /// with real faults. Placement is left to the operating system: a live
    /// run wants the servers to run beside the clients, as in production.
    pub fn live() -> Servers {
        Servers { placement: Placement::Anywhere, tier: crate::live::Tier::Live, ..Servers::default() }
    }

    /// Which tier a world built on this pool runs in.
    pub fn tier(&self) -> crate::live::Tier {
        self.tier
    }

    /// Where this pool runs (another pool for a parallel job is placed alike).
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// What a thread spawned by this pool's thread must be given back before
    /// it builds a pool of its own (`crate::jobs`).
    pub(crate) fn unpinned(&self) -> crate::placement::Unpinned {
        self.pinning.unpinned()
    }

    /// The CPU this pool's thread and servers are pinned to, if any.
    pub fn cpu(&self) -> Option<usize> {
        self.pinning.cpu()
    }

    /// A pool with `n` running servers.
    pub fn start(n: usize) -> Result<Servers, SetupError> {
        let mut s = Servers::new();
        s.ensure(n)?;
        Ok(s)
    }

    /// Starts servers until the pool holds at least `n`.
    pub fn ensure(&mut self, n: usize) -> Result<(), SetupError> {
        // Before the first server starts: it inherits the thread's CPU.
        self.pinning.enter(self.placement);
        while self.nodes.len() < n {
            self.nodes.push(ServerNode::start()?);
        }
        Ok(())
    }

    /// Resets the first `n` servers (see [`ServerNode::reset`]), starting
    /// more if needed: the state every simulation run begins from.
    pub fn prepare(&mut self, n: usize) -> Result<(), SetupError> {
        self.prepare_with(&vec![0; n])
    }

    /// As [`Servers::prepare`] for `replicas.len()` nodes, node `i` with
    /// `replicas[i]` replicas (started or stopped as needed).
    pub fn prepare_with(&mut self, replicas: &[usize]) -> Result<(), SetupError> {
        self.ensure(replicas.len())?;
        for (node, &n) in self.nodes.iter_mut().zip(replicas) {
            // Reset first: a failover a run left half-done is completed
            // before replicas are added to (or taken from) the primary.
            node.reset()?;
            node.set_replicas(n)?;
        }
        Ok(())
    }

    /// Number of servers in the pool.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Server `i`.
    pub fn node(&self, i: usize) -> Option<&ServerNode> {
        self.nodes.get(i)
    }

    /// Server `i`, mutably (restart, stop).
    pub fn node_mut(&mut self, i: usize) -> Option<&mut ServerNode> {
        self.nodes.get_mut(i)
    }

    /// All servers.
    pub fn nodes(&self) -> &[ServerNode] {
        &self.nodes
    }
}
