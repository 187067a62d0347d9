//! A real Redis Cluster: N primaries × R replicas, each a [`RedisServer`].
//!
//! [`RedisCluster::start`] starts 3 primaries with one replica each (any
//! shape through [`ClusterConfig`]), forms the cluster and returns once it is
//! usable: `cluster_state:ok` on every node, every node agreeing on who owns
//! which slot and who replicates whom, and every replica holding every write
//! its primary had (a write in one of the primary's own slots, then `WAIT`).
//! Every node, and the per-cluster temporary directory that holds their
//! `nodes.conf` files, is gone when the cluster is dropped.
//!
//! **How it is formed.** Not with `redis-cli --cluster create`, but with the
//! commands that tool sends, directly: `CLUSTER SET-CONFIG-EPOCH` (distinct
//! epochs, so no epoch collision has to be resolved first), `CLUSTER
//! ADDSLOTSRANGE` on each primary (16384 slots in N even ranges, primary `i`
//! owning range `i`), `CLUSTER MEET` from the first node to every other one
//! (with the bus port, which is not port + 10000 here), then, once every node
//! knows every other, `CLUSTER REPLICATE` on each replica. Why:
//!
//! - no second binary: Valkey ships `valkey-cli`, not `redis-cli`, and a
//!   cluster of valkey-servers must not need a Redis package installed;
//! - it is faster: redis-cli polls the join in 1 s steps, while this polls
//!   every 10 ms (the floor is the server's own: a primary stays
//!   `cluster_state:fail` for 2 s after it starts, `CLUSTER_WRITABLE_DELAY`);
//! - the layout is known rather than chosen by a tool (primary `i` is node
//!   `i`, its replicas follow the primaries), and readiness is checked by
//!   what the tests need (agreement of every node, synced replicas) rather
//!   than by a tool's "[OK] All 16384 slots covered".
//!
//! **Ports.** Each node gets two free ephemeral ports, one for clients and
//! one for the cluster bus (`--cluster-port`): the bus port defaults to
//! port + 10000, which is beyond 65535 for most ephemeral ports. If another
//! process takes either port before the server binds it, the server exits
//! and the node is started again on two fresh ports.
//!
//! **Configuration.** Besides the testkit's defaults (no persistence,
//! loopback only, own process group, a working directory of its own, where
//! a full sync writes its snapshot and which a restart empties):
//! `--cluster-enabled yes`, its own `--cluster-config-file` in the
//! cluster's directory (outside the working directory, so a restarted node
//! comes back as the same node, with no data), a short
//! `--cluster-node-timeout` (500 ms unless configured: a crashed primary is
//! failed over in about a second and a half) and
//! `--cluster-replica-validity-factor 0`, so that a replica whose link to its
//! primary was cut ([`RedisServer::cut_replication`], which works on cluster
//! replicas too) may still be promoted: that is the failover that hands a
//! token out again, which the tests need to show.
//!
//! **Faults and changes.** [`ClusterNode::stop`] is a crash (SIGKILL);
//! [`RedisCluster::await_ok`] waits until the surviving nodes agree again
//! (after a failover); [`RedisCluster::begin_migration`] moves a slot in the
//! three steps a resharding takes (`SETSLOT IMPORTING`/`MIGRATING`,
//! `MIGRATE`, `SETSLOT NODE` on every primary), so a test can run clients
//! between them; [`RedisCluster::migrate_slot`] does all three at once.
//!
//! All set-up uses blocking sockets and `std::time`, like the rest of the
//! testkit; call it from the thread that started the cluster (or any thread:
//! only starting has to happen on a thread that outlives the servers).

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::{redis_server_binary, spawn_on, RedisServer, ServerConfig, ServerError};

mod nodes;
mod session;
mod slots;

pub use nodes::info_field;
use nodes::{slot_owners, NodeLine};

pub use session::Reply;
use session::Session;
use slots::slot_range;
pub use slots::{key_in_slot, key_slot, SLOTS};

/// How long forming a cluster, a failover or a migration may take before it
/// is reported as not ready.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);

/// Why a cluster could not be started, formed or changed.
#[derive(Debug)]
pub enum ClusterError {
    /// Starting or reaching one of its servers failed.
    Server(ServerError),
    /// A command got an error reply, or a reply of a shape it never has.
    Command {
        /// The node's port.
        port: u16,
        /// The command sent.
        command: String,
        /// What came back.
        reply: String,
    },
    /// The cluster did not reach a state within the limit.
    NotReady {
        /// The state waited for.
        what: String,
        /// How long it was waited for.
        waited: Duration,
        /// What was seen last.
        last: String,
    },
    /// The request cannot be met: no running node, a slot nobody owns, a
    /// configuration with no primary.
    Invalid(String),
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Server(e) => write!(f, "cluster node: {e}"),
            ClusterError::Command { port, command, reply } => {
                write!(f, "cluster node 127.0.0.1:{port}: `{command}` answered {reply}")
            }
            ClusterError::NotReady { what, waited, last } => {
                write!(f, "cluster: no {what} within {waited:?}; last seen: {last}")
            }
            ClusterError::Invalid(why) => write!(f, "cluster: {why}"),
        }
    }
}

impl std::error::Error for ClusterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Server(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ServerError> for ClusterError {
    fn from(e: ServerError) -> Self {
        ClusterError::Server(e)
    }
}

impl From<std::io::Error> for ClusterError {
    fn from(e: std::io::Error) -> Self {
        ClusterError::Server(ServerError::Io(e))
    }
}

/// The shape and settings of a cluster. `Default` is 3 primaries × 1 replica.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Primaries (each owns an even share of the slots). At least 1; a
    /// failover needs a majority of the primaries alive, so at least 3.
    pub primaries: usize,
    /// Replicas per primary.
    pub replicas: usize,
    /// `--cluster-node-timeout`: how long a node may be silent before it is
    /// suspected. A failover takes about 1 to 4 times this.
    pub node_timeout: Duration,
    /// The server binary; `None` is [`redis_server_binary`] (`$REDIS_SERVER`).
    pub binary: Option<PathBuf>,
    /// Extra `--name value` arguments for every node.
    pub args: Vec<String>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            primaries: 3,
            replicas: 1,
            node_timeout: Duration::from_millis(500),
            binary: None,
            args: Vec::new(),
        }
    }
}

/// One node of a [`RedisCluster`]: its server, its cluster id, its bus port.
#[derive(Debug)]
pub struct ClusterNode {
    server: RedisServer,
    index: usize,
    id: String,
    bus_port: u16,
}

impl ClusterNode {
    /// Its position in [`RedisCluster::nodes`] (primary `i` of the formed
    /// cluster is node `i`; roles change with failovers).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its cluster node id (`CLUSTER MYID`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The cluster bus port (`--cluster-port`).
    pub fn bus_port(&self) -> u16 {
        self.bus_port
    }

    /// A `redis://` URL for this node.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The server, for its process controls ([`RedisServer::freeze`],
    /// [`RedisServer::cut_replication`], ...).
    pub fn server(&self) -> &RedisServer {
        &self.server
    }

    /// Whether its process is running.
    pub fn is_running(&self) -> bool {
        self.server.is_running()
    }

    /// Kills the node (SIGKILL, like a crash). Idempotent. The other nodes
    /// see it fail after the node timeout; a replica of it is then promoted.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Sends one command on a fresh connection and returns the parsed reply
    /// (an error reply is `Ok(Reply::Error)`).
    pub fn call(&self, args: &[&str]) -> Result<Reply, ClusterError> {
        Session::open(self.port())?.call(args)
    }

    /// On a replica cut by [`RedisServer::cut_replication`]: gives it its
    /// credentials back and waits until its link to the primary is up again
    /// (`REPLICAOF`, which [`RedisServer::restore_replication`] uses, is
    /// refused in cluster mode; a refused replica retries once a second).
    /// Follow with [`RedisCluster::await_replicas_synced`] to wait until it
    /// has caught up.
    pub fn restore_replication(&self) -> Result<(), ClusterError> {
        self.expect_ok(&["CONFIG", "SET", "masteruser", ""])?;
        self.expect_ok(&["CONFIG", "SET", "masterauth", ""])?;
        wait_until("replication link up", || {
            let info = self.info("replication")?;
            let up = info_field(&info, "master_link_status") == Some("up");
            Ok((up, info_field(&info, "master_link_status").unwrap_or("?").to_string()))
        })
    }

    /// `INFO section` as text.
    pub fn info(&self, section: &str) -> Result<String, ClusterError> {
        match self.call(&["INFO", section])? {
            Reply::Bulk(Some(text)) => Ok(text),
            other => Err(self.unexpected(&["INFO", section], &other)),
        }
    }

    fn expect_ok(&self, args: &[&str]) -> Result<(), ClusterError> {
        match self.call(args)? {
            Reply::Status(s) if s == "OK" => Ok(()),
            other => Err(self.unexpected(args, &other)),
        }
    }

    fn unexpected(&self, args: &[&str], reply: &Reply) -> ClusterError {
        ClusterError::Command { port: self.port(), command: args.join(" "), reply: format!("{reply:?}") }
    }

    /// This node's view of the cluster (`CLUSTER NODES`).
    fn view(&self) -> Result<Vec<NodeLine>, ClusterError> {
        match self.call(&["CLUSTER", "NODES"])? {
            Reply::Bulk(Some(text)) => Ok(text.lines().filter_map(NodeLine::parse).collect()),
            other => Err(self.unexpected(&["CLUSTER", "NODES"], &other)),
        }
    }
}

/// A primary, the slots it owns and its replicas, as the cluster sees them now.
#[derive(Debug)]
pub struct Shard<'a> {
    /// The primary.
    pub primary: &'a ClusterNode,
    /// Its replicas (a stopped one included: it is still configured).
    pub replicas: Vec<&'a ClusterNode>,
    /// The slot ranges it owns.
    pub slots: Vec<RangeInclusive<u16>>,
}

impl Shard<'_> {
    /// Whether this shard owns `slot`.
    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|r| r.contains(&slot))
    }
}

/// N primaries × R replicas, formed and ready; every node stopped, and the
/// cluster's directory removed, on drop.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<ClusterNode>,
    dir: PathBuf,
    config: ClusterConfig,
}

impl RedisCluster {
    /// Starts 3 primaries × 1 replica with `$REDIS_SERVER` (or `redis-server`).
    pub fn start() -> Result<RedisCluster, ClusterError> {
        RedisCluster::start_with(ClusterConfig::default())
    }

    /// Starts and forms a cluster of the given shape.
    pub fn start_with(config: ClusterConfig) -> Result<RedisCluster, ClusterError> {
        if config.primaries == 0 || config.primaries > usize::from(SLOTS) {
            return Err(ClusterError::Invalid(format!("{} primaries: need 1..=16384", config.primaries)));
        }
        let binary = match &config.binary {
            Some(b) => b.clone(),
            None => redis_server_binary()?,
        };
        let dir = cluster_dir()?;
        // From here on, a failure drops `cluster`: its nodes stop, its directory goes.
        let mut cluster = RedisCluster { nodes: Vec::new(), dir, config };
        let total = cluster.config.primaries * (1 + cluster.config.replicas);
        for index in 0..total {
            let node = start_node(&binary, &cluster.dir, index, &cluster.config)?;
            cluster.nodes.push(node);
        }
        cluster.form()?;
        Ok(cluster)
    }

    /// Every node, primaries of the formed cluster first (node `i` was given
    /// slot range `i`), then the replicas of primary 0, of primary 1, ...
    pub fn nodes(&self) -> &[ClusterNode] {
        &self.nodes
    }

    /// Node `index` (see [`RedisCluster::nodes`]).
    pub fn node(&self, index: usize) -> &ClusterNode {
        &self.nodes[index]
    }

    /// Node `index`, to [`ClusterNode::stop`] it.
    pub fn node_mut(&mut self, index: usize) -> &mut ClusterNode {
        &mut self.nodes[index]
    }

    /// The node with cluster id `id`.
    pub fn node_by_id(&self, id: &str) -> Option<&ClusterNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The URL of every running node: the seed list of a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().filter(|n| n.is_running()).map(ClusterNode::url).collect()
    }

    /// The directory holding the nodes' `nodes.conf` files (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The shards as the first running node sees them now, in slot order.
    pub fn shards(&self) -> Result<Vec<Shard<'_>>, ClusterError> {
        let view = self.running().next().ok_or_else(no_running_node)?.view()?;
        let mut shards: Vec<Shard<'_>> = view
            .iter()
            .filter(|l| l.is_primary() && !l.slots.is_empty())
            .filter_map(|l| {
                let primary = self.node_by_id(&l.id)?;
                let replicas = view
                    .iter()
                    .filter(|r| r.master.as_deref() == Some(l.id.as_str()))
                    .filter_map(|r| self.node_by_id(&r.id))
                    .collect();
                Some(Shard { primary, replicas, slots: l.slots.clone() })
            })
            .collect();
        shards.sort_by_key(|s| s.slots.first().map(|r| *r.start()));
        Ok(shards)
    }

    /// The primary that owns `slot` now.
    pub fn primary_for_slot(&self, slot: u16) -> Result<&ClusterNode, ClusterError> {
        self.shards()?
            .into_iter()
            .find(|s| s.owns(slot))
            .map(|s| s.primary)
            .ok_or_else(|| ClusterError::Invalid(format!("no primary owns slot {slot}")))
    }

    /// The primary that owns `key`'s slot now.
    pub fn primary_for_key(&self, key: &str) -> Result<&ClusterNode, ClusterError> {
        self.primary_for_slot(key_slot(key.as_bytes()))
    }

    /// The replicas of `primary` now.
    pub fn replicas_of(&self, primary: &ClusterNode) -> Result<Vec<&ClusterNode>, ClusterError> {
        Ok(self.shards()?.into_iter().find(|s| s.primary.id == primary.id).map(|s| s.replicas).unwrap_or_default())
    }

    /// Waits until every running node says `cluster_state:ok`, all of them
    /// agree on which node owns each slot, and every owner is running (after
    /// a crash: until a replica has been promoted in its place).
    pub fn await_ok(&self) -> Result<(), ClusterError> {
        wait_until("cluster_state:ok and one slot map on every running node", || {
            let mut maps = Vec::new();
            for node in self.running() {
                let info = match node.call(&["CLUSTER", "INFO"])? {
                    Reply::Bulk(Some(text)) => text,
                    other => return Ok((false, format!("{}: CLUSTER INFO {other:?}", node.port()))),
                };
                if info_field(&info, "cluster_state") != Some("ok") {
                    return Ok((false, format!("{}: {}", node.port(), info.lines().next().unwrap_or(""))));
                }
                maps.push((node.port(), slot_owners(&node.view()?)));
            }
            let agreed = maps.windows(2).all(|w| w[0].1 == w[1].1);
            // A crashed primary owns its slots until a replica is promoted.
            let live_owners = maps.first().is_some_and(|(_, owners)| {
                owners.iter().all(|(_, id)| self.node_by_id(id).is_some_and(ClusterNode::is_running))
            });
            Ok((agreed && live_owners, format!("slot owners per node: {maps:?}")))
        })
    }

    /// Waits until every running replica of every primary has every write
    /// that primary had acknowledged and receives the stream of new ones (a
    /// write in one of its slots, then `WAIT` on the same connection, until
    /// enough answer twice in a row: after a full sync the first answer can
    /// come from the snapshot, before the stream flows; see
    /// `RedisServer::await_replicas`). A cut replica never catches up:
    /// restore it first.
    pub fn await_replicas_synced(&self) -> Result<(), ClusterError> {
        for shard in self.shards()? {
            let replicas = shard.replicas.iter().filter(|r| r.is_running()).count();
            let Some(slot) = shard.slots.first().map(|r| *r.start()) else { continue };
            let key = key_in_slot("rp-testkit:barrier", slot);
            let mut session = Session::open(shard.primary.port())?;
            let wanted = replicas.to_string();
            let mut in_a_row = 0;
            wait_until(&format!("{replicas} replica(s) of 127.0.0.1:{} synced", shard.primary.port()), || {
                session.call(&["SET", &key, "1"])?;
                session.call(&["DEL", &key])?;
                match session.call(&["WAIT", &wanted, "100"])? {
                    Reply::Integer(n) if usize::try_from(n).is_ok_and(|n| n >= replicas) => {
                        in_a_row += 1;
                        Ok((in_a_row == 2, format!("WAIT {n}")))
                    }
                    other => {
                        in_a_row = 0;
                        Ok((false, format!("WAIT {other:?}")))
                    }
                }
            })?;
        }
        Ok(())
    }

    /// Starts a stopped node again on its ports, with its `nodes.conf`, and
    /// waits until every running node sees it healthy, the cluster is ok
    /// and every replica (it too, if it is one now) is synced. A primary that
    /// was failed over comes back as a replica of the node promoted in its
    /// place: it learns from the others that its slots moved on.
    pub fn restart_node(&mut self, index: usize) -> Result<(), ClusterError> {
        let node = self.nodes.get_mut(index).ok_or_else(|| ClusterError::Invalid(format!("no node {index}")))?;
        node.server.restart()?;
        let id = node.id.clone();
        wait_until(&format!("node {index} seen healthy by every node"), || {
            for node in self.running() {
                let view = node.view()?;
                let healthy = view.iter().any(|l| l.id == id && l.is_settled() && !l.has("fail") && !l.has("fail?"));
                if !healthy {
                    return Ok((false, format!("127.0.0.1:{} does not see node {index} healthy", node.port())));
                }
            }
            Ok((true, String::new()))
        })?;
        self.await_ok()?;
        wait_until(&format!("node {index} with a role every node agrees on"), || {
            let roles: Vec<_> = self
                .running()
                .map(|n| n.view().map(|v| v.into_iter().find(|l| l.id == id).map(|l| l.master)))
                .collect::<Result<_, _>>()?;
            Ok((roles.windows(2).all(|w| w[0] == w[1]), format!("{roles:?}")))
        })?;
        self.await_replicas_synced()
    }

    /// Starts moving `slot` from its owner to the primary `to`: `SETSLOT
    /// IMPORTING` on `to`, `SETSLOT MIGRATING` on the owner. Clients are
    /// redirected with `ASK` (or told `TRYAGAIN`) until
    /// [`SlotMigration::finish`].
    pub fn begin_migration(&self, slot: u16, to: &ClusterNode) -> Result<SlotMigration<'_>, ClusterError> {
        if slot >= SLOTS {
            return Err(ClusterError::Invalid(format!("slot {slot} is not below {SLOTS}")));
        }
        let from = self.primary_for_slot(slot)?;
        if from.id == to.id {
            return Err(ClusterError::Invalid(format!("slot {slot} is already on 127.0.0.1:{}", to.port())));
        }
        let s = slot.to_string();
        to.expect_ok(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &from.id])?;
        from.expect_ok(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &to.id])?;
        Ok(SlotMigration { cluster: self, slot, from: from.index, to: to.index })
    }

    /// Moves `slot` to the primary `to` in one go (see
    /// [`RedisCluster::begin_migration`]); returns how many keys moved.
    pub fn migrate_slot(&self, slot: u16, to: &ClusterNode) -> Result<usize, ClusterError> {
        let migration = self.begin_migration(slot, to)?;
        let moved = migration.move_keys()?;
        migration.finish()?;
        Ok(moved)
    }

    fn running(&self) -> impl Iterator<Item = &ClusterNode> {
        self.nodes.iter().filter(|n| n.is_running())
    }

    fn form(&self) -> Result<(), ClusterError> {
        let primaries = &self.nodes[..self.config.primaries];
        // Distinct epochs before anyone meets anyone, as redis-cli does.
        for (epoch, node) in (1..).zip(&self.nodes) {
            node.expect_ok(&["CLUSTER", "SET-CONFIG-EPOCH", &epoch.to_string()])?;
        }
        for (i, node) in primaries.iter().enumerate() {
            let range = slot_range(i, primaries.len());
            node.expect_ok(&["CLUSTER", "ADDSLOTSRANGE", &range.start().to_string(), &range.end().to_string()])?;
        }
        let first = &self.nodes[0];
        for node in &self.nodes[1..] {
            let (port, bus) = (node.port().to_string(), node.bus_port.to_string());
            first.expect_ok(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus])?;
        }
        let total = self.nodes.len();
        wait_until("every node knowing every other", || {
            for node in &self.nodes {
                let view = node.view()?;
                let known = view.iter().filter(|l| l.is_settled()).count();
                if known < total {
                    return Ok((false, format!("127.0.0.1:{} knows {known} of {total}", node.port())));
                }
            }
            Ok((true, String::new()))
        })?;
        for (i, replica) in self.nodes[primaries.len()..].iter().enumerate() {
            let primary = &primaries[i / self.config.replicas.max(1)];
            replica.expect_ok(&["CLUSTER", "REPLICATE", &primary.id])?;
        }
        // Every node must see the same roles (a client may ask any of them).
        wait_until("every node seeing every replica's primary", || {
            for node in &self.nodes {
                let view = node.view()?;
                for (i, replica) in self.nodes[primaries.len()..].iter().enumerate() {
                    let primary = &primaries[i / self.config.replicas.max(1)];
                    let sees = view.iter().any(|l| l.id == replica.id && l.master.as_deref() == Some(&primary.id));
                    if !sees {
                        return Ok((
                            false,
                            format!("127.0.0.1:{} does not see {} under its primary", node.port(), replica.port()),
                        ));
                    }
                }
            }
            Ok((true, String::new()))
        })?;
        self.await_ok()?;
        self.await_replicas_synced()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A slot on its way from one primary to another (see
/// [`RedisCluster::begin_migration`]).
#[derive(Debug)]
pub struct SlotMigration<'a> {
    cluster: &'a RedisCluster,
    slot: u16,
    from: usize,
    to: usize,
}

impl SlotMigration<'_> {
    /// The slot being moved.
    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// Moves every key of the slot (`CLUSTER GETKEYSINSLOT`, then `MIGRATE
    /// … KEYS`, 100 at a time, each batch atomically, TTLs kept) until none
    /// is left on the old owner; returns how many moved.
    pub fn move_keys(&self) -> Result<usize, ClusterError> {
        let (from, to) = (self.cluster.node(self.from), self.cluster.node(self.to));
        let (slot, port) = (self.slot.to_string(), to.port().to_string());
        let mut moved = 0;
        loop {
            let keys = match from.call(&["CLUSTER", "GETKEYSINSLOT", &slot, "100"])? {
                Reply::Array(Some(keys)) => {
                    keys.into_iter().filter_map(|k| if let Reply::Bulk(Some(k)) = k { Some(k) } else { None }).collect()
                }
                other => return Err(from.unexpected(&["CLUSTER", "GETKEYSINSLOT", &slot], &other)),
            };
            let keys: Vec<String> = keys;
            if keys.is_empty() {
                return Ok(moved);
            }
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            match from.call(&args)? {
                Reply::Status(s) if s == "OK" || s == "NOKEY" => moved += keys.len(),
                other => return Err(from.unexpected(&args[..7], &other)),
            }
        }
    }

    /// Assigns the slot to its new owner on every running primary (the new
    /// owner first, then the old one, then the others, as the resharding
    /// procedure says) and waits until every running node agrees.
    pub fn finish(self) -> Result<(), ClusterError> {
        let (from, to) = (self.cluster.node(self.from), self.cluster.node(self.to));
        let slot = self.slot.to_string();
        let set = ["CLUSTER", "SETSLOT", &slot, "NODE", &to.id];
        to.expect_ok(&set)?;
        from.expect_ok(&set)?;
        for shard in self.cluster.shards()? {
            if shard.primary.id != to.id && shard.primary.id != from.id && shard.primary.is_running() {
                shard.primary.expect_ok(&set)?;
            }
        }
        let owner = to.id.clone();
        wait_until(&format!("slot {slot} owned by 127.0.0.1:{} on every node", to.port()), || {
            for node in self.cluster.running() {
                let owners = slot_owners(&node.view()?);
                let seen = owners.iter().find(|(r, _)| r.contains(&self.slot)).map(|(_, id)| id.as_str());
                if seen != Some(owner.as_str()) {
                    return Ok((false, format!("127.0.0.1:{} says {seen:?}", node.port())));
                }
            }
            Ok((true, String::new()))
        })
    }
}

/// A fresh directory for one cluster's `nodes.conf` files.
fn cluster_dir() -> Result<PathBuf, ClusterError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rp-testkit-cluster-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            // Left by an earlier process with our pid: take the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts one node on two free ports, again on fresh ones if a port was
/// taken before the server could bind it.
fn start_node(binary: &Path, dir: &Path, index: usize, config: &ClusterConfig) -> Result<ClusterNode, ClusterError> {
    let mut last = None;
    for _ in 0..8 {
        let (port, bus_port) = two_free_ports()?;
        let conf = dir.join(format!("nodes-{port}.conf"));
        let _ = std::fs::remove_file(&conf);
        let mut args: Vec<String> = [
            "--cluster-enabled",
            "yes",
            "--cluster-port",
            &bus_port.to_string(),
            "--cluster-node-timeout",
            &config.node_timeout.as_millis().to_string(),
            "--cluster-replica-validity-factor",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(["--cluster-config-file".to_string(), conf.display().to_string()]);
        args.extend(config.args.iter().cloned());
        let server_config = ServerConfig { args, binary: Some(binary.to_path_buf()), ..ServerConfig::default() };
        match spawn_on(binary, port, &server_config) {
            Ok(child) => {
                let server =
                    RedisServer { child: Some(child), port, config: server_config, binary: binary.to_path_buf() };
                let id = match Session::open(port)?.call(&["CLUSTER", "MYID"])? {
                    Reply::Bulk(Some(id)) => id,
                    other => {
                        return Err(ClusterError::Command {
                            port,
                            command: "CLUSTER MYID".into(),
                            reply: format!("{other:?} (is cluster mode supported?)"),
                        })
                    }
                };
                return Ok(ClusterNode { server, index, id, bus_port });
            }
            Err(e @ ServerError::NotReady { .. }) => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.unwrap_or(ServerError::NotReady { port: 0, log: "no attempt made".into() }).into())
}

/// Two distinct free ports (both held while the second is chosen).
fn two_free_ports() -> Result<(u16, u16), ClusterError> {
    let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

fn no_running_node() -> ClusterError {
    ClusterError::Invalid("no node is running".into())
}

/// Polls `check` every 10 ms until it says done (`Ok((true, _))`), for at
/// most [`SETTLE_LIMIT`]. A check that fails (a node not answering yet) is
/// looked at again, and reported if it is still failing at the end.
fn wait_until(what: &str, mut check: impl FnMut() -> Result<(bool, String), ClusterError>) -> Result<(), ClusterError> {
    let started = Instant::now();
    loop {
        let last = match check() {
            Ok((true, _)) => return Ok(()),
            Ok((false, seen)) => seen,
            Err(e) => e.to_string(),
        };
        if started.elapsed() >= SETTLE_LIMIT {
            return Err(ClusterError::NotReady { what: what.to_string(), waited: started.elapsed(), last });
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests;
