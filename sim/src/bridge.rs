//! The bridge: one turmoil host per Redis node, forwarding every simulated
//! request to a real redis-server.
//!
//! A simulated client connects to `redis-N:6379` on the simulated network.
//! The bridge accepts the connection and opens **one real TCP connection**
//! to its redis-server for it (so per-connection state such as `MULTI` and
//! `WATCH` behaves as it would against Redis itself). Then, for each request
//! frame it receives:
//!
//! 1. it waits while the node is paused (simulated time keeps running);
//! 2. it **pins the server's wall clock** to simulated time (plus the node's
//!    clock step, if any) through the clock library;
//! 3. it writes the request's raw bytes to the real socket and reads
//!    exactly one reply frame back, **synchronously**: the bridge host does
//!    not yield while the real server works, so the simulation cannot
//!    advance and the order of events is decided by the seed alone. This
//!    blocking exchange is the one real-world step in the simulation; it
//!    influences no ordering, only the reply's content;
//! 4. it sends the real reply bytes back over the simulated connection.
//!
//! Framing uses redis-rs's own parser (`redis::parse_redis_value`, public
//! in 1.8): a request is complete when the buffered bytes parse as an array
//! of bulk strings, and its length is that array's canonical encoding (which
//! is checked against the bytes, so nothing is forwarded that was not
//! received). A reply is complete when the bytes read so far parse; with
//! one request in flight per real connection, the server has nothing else
//! to send, so those bytes are exactly one frame. Blocking commands
//! (`BLPOP`) would stall the whole simulation and are not supported;
//! `WAIT` is, below.
//!
//! **Replication.** A node whose server has replicas ([`BridgeNode::set_linked_replicas`])
//! makes replication instant unless a fault says otherwise: after every
//! command it forwards (outside `MULTI`), the bridge sends `WAIT n 1000` on
//! the same real connection (`WAIT` counts that connection's writes) and
//! holds the reply until the `n` linked replicas have acknowledged it. So
//! what a replica holds at any simulated instant is exactly every write
//! made while its link was up: the seed decides, not the real scheduler.
//! A client's own `WAIT numreplicas timeout` is sent as `WAIT 0 1`, which
//! answers at once how many replicas have acknowledged the connection's
//! writes (every linked replica already has, an unlinked one never will;
//! and the real timeout could not elapse: the server measures it on its
//! pinned wall clock). If fewer than `numreplicas` answered, the reply is
//! held for `timeout` of simulated time, as the real server would hold it. (A
//! restore of the link during that wait does not end it early: a
//! simplification, on the side of the more pessimistic answer.)
//!
//! Every forwarded command is also written to the node's **execution log**
//! ([`Execution`]: which client sent it, its command name, and the server
//! clock it ran under). The client-side history says when a request was
//! sent and answered; only the bridge knows the instant Redis executed it,
//! so checkers that judge a reply derived from the server's clock (a
//! limiter's `now`) read it here.
//!
//! Server-side faults live here too:
//! - **pause** ([`BridgeNode::pause_until`]): requests are held, in order,
//!   while simulated time (and with it the server's pinned clock) advances,
//!   as under `SIGSTOP`: on resume, keys have expired, and requests whose
//!   clients gave up long ago are executed late;
//! - **clock step** ([`BridgeNode::step_clock`]): the pin becomes simulated
//!   time plus an offset;
//! - **restart** is the world's job (crash this host, flush or restart the
//!   server, bounce the host), which drops every simulated connection.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use core::time::Duration;
use redis::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::clock::ServerClock;
use crate::pause::sim_now;
use crate::reply::{logged_argument, Reply, MAX_LOGGED_ARGS};

/// The port every bridge listens on inside the simulated network.
pub(crate) const REDIS_PORT: u16 = 6379;

/// How long the bridge waits for a real reply before giving up on the
/// connection (a hung server must not hang the simulation forever).
const REAL_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Default, Clone, Copy)]
struct NodeState {
    paused_until: Option<Duration>,
    clock_offset_ms: i64,
}

/// Counters of one bridge.
#[derive(Debug, Default)]
pub struct BridgeStats {
    /// Simulated connections accepted.
    pub connections: AtomicU64,
    /// Commands forwarded to the real server.
    pub commands: AtomicU64,
    /// Connections closed because of an error (real socket, framing).
    pub errors: AtomicU64,
}

/// The replication barrier's `WAIT` timeout. The server measures it on its
/// wall clock, which the bridge has pinned, so it never elapses: a replica
/// that does not acknowledge fails the run after [`REAL_REPLY_TIMEOUT`].
const BARRIER_WAIT_MS: u64 = 1000;

/// One command as the real server executed it (the bridge's execution log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// The process that sent it: an actor's name, or an alias's
    /// ([`crate::Actor::alias`]).
    pub client: Arc<str>,
    /// The command name as sent (`EVALSHA`, `GET`, ...).
    pub command: String,
    /// The first key it names: a script's first key (`EVAL`/`EVALSHA`/
    /// `FCALL` and their `_RO` forms; `None` when it declares none), else
    /// the first argument (not always a key: `WAIT 1 100` gives `"1"`).
    pub key: Option<String>,
    /// The arguments after the command name, in order, bounded in memory:
    /// at most 16 of them, each kept whole up to 64 bytes, a longer one as
    /// its first 32 bytes, `…` and a hash of the whole: enough to tell which
    /// value a write wrote, never a script's whole body.
    pub args: Vec<String>,
    /// The server's wall clock it ran under, in unix ms (what `TIME` read,
    /// truncated to the millisecond): simulated time plus the node's step.
    pub server_unix_ms: u64,
    /// Simulated time when it ran (ms since the start).
    pub sim_ms: u64,
    /// Simulated time when the bridge took it up, before any hold
    /// (`held_ms`) and any pause of the server: from here to `sim_ms` the
    /// request waited at the server's end of the link.
    pub taken_ms: u64,
    /// How long the bridge held it first
    /// (the bridge's `delay_next_request`; 0 for all others), ms.
    pub held_ms: u64,
    /// The server's reply, typed and bounded like the arguments: whether
    /// a conditional write landed or was refused is the server's answer.
    pub reply: Reply,
}

/// A one-shot delay queued by [`BridgeNode::delay_next_request`] or
/// [`BridgeNode::delay_next_reply`].
#[derive(Debug)]
pub(crate) struct Delay {
    client: String,
    pub(crate) by: Duration,
    mentioning: Option<Vec<u8>>,
    /// Where the request waits: before it runs, or after (its reply held).
    pub(crate) phase: Phase,
}

/// Which side of the execution a [`Delay`] holds a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The request waits, then runs: its effect is late.
    Before,
    /// The request runs at once, and its reply waits: its effect is on
    /// time, the caller learns of it late.
    Reply,
}

/// One Redis node of the simulation: the bridge's configuration and its
/// fault switches, shared between the bridge host and the world.
#[derive(Debug)]
pub struct BridgeNode {
    name: String,
    real: Mutex<SocketAddr>,
    /// Linked replicas every forwarded command waits for (0: none).
    linked: AtomicU64,
    /// Why the bridge could not keep its promise (a replica that did not
    /// acknowledge): the run fails with it (see [`BridgeNode::failure`]).
    failure: Mutex<Option<String>>,
    clock: Arc<ServerClock>,
    state: Mutex<NodeState>,
    stats: BridgeStats,
    log: Mutex<Vec<Execution>>,
    /// One-shot delays: the next request from this client (that mentions
    /// the bytes, if any) waits this long.
    delays: Mutex<Vec<Delay>>,
    /// The process each simulated connection speaks for, by its client-side
    /// address ([`BridgeNode::attribute`]); a connection missing here is
    /// named after its host.
    processes: Mutex<BTreeMap<SocketAddr, Arc<str>>>,
}

impl BridgeNode {
    /// A bridge named `name` (its turmoil host name) for the real server at
    /// `real`, whose clock is controlled through `clock`.
    pub fn new(name: impl Into<String>, real: SocketAddr, clock: Arc<ServerClock>) -> Arc<BridgeNode> {
        Arc::new(BridgeNode {
            name: name.into(),
            real: Mutex::new(real),
            linked: AtomicU64::new(0),
            failure: Mutex::new(None),
            clock,
            state: Mutex::new(NodeState::default()),
            stats: BridgeStats::default(),
            log: Mutex::new(Vec::new()),
            delays: Mutex::new(Vec::new()),
            processes: Mutex::new(BTreeMap::new()),
        })
    }

    /// Names the simulated connection whose client end is `peer` after
    /// `process`: its executions are logged, and its held requests matched,
    /// as that process's rather than its host's. Several processes may
    /// share a host ([`crate::Actor::alias`]); each opens its own
    /// connections, and says which are its own here as soon as one is open,
    /// before its first request is sent. A later connection from the same
    /// address (a reused ephemeral port) replaces the name.
    pub fn attribute(&self, peer: SocketAddr, process: Arc<str>) {
        lock_or_inner(&self.processes).insert(peer, process);
    }

    /// Who a connection from `peer` (on host `host`) speaks for.
    pub(crate) fn process_of(&self, peer: SocketAddr, host: &Arc<str>) -> Arc<str> {
        lock_or_inner(&self.processes).get(&peer).cloned().unwrap_or_else(|| Arc::clone(host))
    }

    /// Delays the next request `client` sends to this node by `by` of
    /// simulated time before it runs (a targeted fault: one slow reply, the
    /// rest of the link untouched). Its undo is the request itself: the
    /// delay is spent by the first request that arrives.
    ///
    /// With `mentioning`, only a request whose bytes contain it (a key name)
    /// spends the delay: the one aimed at, not whichever else the client
    /// sends first. Delays queued for one client are spent in order.
    pub fn delay_next_request(&self, client: &str, by: Duration, mentioning: Option<&str>) {
        self.queue_delay(client, by, mentioning, Phase::Before);
    }

    /// Like [`BridgeNode::delay_next_request`], but the request runs at
    /// once and its reply waits `by` (a slow way back: the server has
    /// acted, the caller does not know yet). Replies behind it on the same
    /// connection wait with it. A request answered with an error (a
    /// `NOSCRIPT`, say) did nothing: its reply passes and the delay waits
    /// for the next matching request.
    pub fn delay_next_reply(&self, client: &str, by: Duration, mentioning: Option<&str>) {
        self.queue_delay(client, by, mentioning, Phase::Reply);
    }

    fn queue_delay(&self, client: &str, by: Duration, mentioning: Option<&str>, phase: Phase) {
        self.requeue(Delay {
            client: client.to_string(),
            by,
            mentioning: mentioning.map(|m| m.as_bytes().to_vec()),
            phase,
        });
    }

    pub(crate) fn requeue(&self, delay: Delay) {
        match self.delays.lock() {
            Ok(mut d) => d.push(delay),
            Err(p) => p.into_inner().push(delay),
        }
    }

    pub(crate) fn take_delay(&self, client: &str, request: &[u8]) -> Option<Delay> {
        let mut d = match self.delays.lock() {
            Ok(d) => d,
            Err(p) => p.into_inner(),
        };
        let i = d.iter().position(|x| {
            x.client == client
                && x.mentioning.as_ref().is_none_or(|m| request.windows(m.len()).any(|w| w == m.as_slice()))
        })?;
        Some(d.remove(i))
    }

    /// Every command executed so far, in execution order.
    pub fn executions(&self) -> Vec<Execution> {
        match self.log.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The turmoil host name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The real server's address.
    pub fn real_addr(&self) -> SocketAddr {
        *lock_or_inner(&self.real)
    }

    /// Sends new connections to `addr` (a failover promoted another
    /// server); existing connections keep theirs (the world bounces the host).
    pub fn repoint(&self, addr: SocketAddr) {
        *lock_or_inner(&self.real) = addr;
    }

    /// How many replicas are linked: every forwarded command waits until
    /// that many have acknowledged it (see the module docs). 0: no barrier.
    pub fn set_linked_replicas(&self, n: usize) {
        self.linked.store(n as u64, Ordering::Relaxed);
    }

    /// Why the bridge failed the run, if it did: a linked replica that did
    /// not acknowledge a write (a harness fault, never a finding).
    pub fn failure(&self) -> Option<String> {
        lock_or_inner(&self.failure).clone()
    }

    fn fail(&self, why: String) -> io::Error {
        let mut f = lock_or_inner(&self.failure);
        if f.is_none() {
            *f = Some(why.clone());
        }
        io::Error::other(why)
    }

    /// The replication barrier: `WAIT n 1000` on the connection that just
    /// wrote, which must answer `n`.
    fn replicate(&self, real: &mut std::net::TcpStream, scratch: &mut Vec<u8>, chunk: &mut [u8]) -> io::Result<()> {
        let n = self.linked.load(Ordering::Relaxed);
        if n == 0 {
            return Ok(());
        }
        let wait = wait_request(n, BARRIER_WAIT_MS);
        let answer = exchange(real, &wait, scratch, chunk).map(|()| redis::parse_redis_value(scratch));
        match answer {
            Ok(Ok(Value::Int(acked))) if acked >= n as i64 => Ok(()),
            other => Err(self.fail(format!(
                "{}: {n} linked replica(s) did not acknowledge a write (WAIT answered {other:?})",
                self.name
            ))),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &BridgeStats {
        &self.stats
    }

    fn lock(&self) -> MutexGuard<'_, NodeState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Holds every request until simulated time `at` (since the start).
    pub fn pause_until(&self, at: Duration) {
        self.lock().paused_until = Some(at);
    }

    /// Ends a pause (held requests run at their next wake-up, at the latest
    /// at the time given to `pause_until`).
    pub fn resume(&self) {
        self.lock().paused_until = None;
    }

    /// Runs this node's clock `offset_ms` ahead of simulated time (negative:
    /// behind), from the next command on.
    pub fn step_clock(&self, offset_ms: i64) {
        self.lock().clock_offset_ms = offset_ms;
    }

    /// Back to simulated time.
    pub fn unstep_clock(&self) {
        self.step_clock(0);
    }

    /// The current clock step.
    pub fn clock_offset_ms(&self) -> i64 {
        self.lock().clock_offset_ms
    }

    /// The bridge host's software: accept simulated connections forever.
    pub async fn serve(self: Arc<Self>) -> turmoil::Result {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", REDIS_PORT)).await?;
        loop {
            let (stream, peer) = listener.accept().await?;
            self.stats.connections.fetch_add(1, Ordering::Relaxed);
            let host: Arc<str> = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string()).into();
            let node = Arc::clone(&self);
            tokio::task::spawn_local(async move {
                if node.serve_connection(stream, peer, host).await.is_err() {
                    node.stats.errors.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    }

    async fn wait_while_paused(&self) {
        loop {
            let until = self.lock().paused_until;
            match until {
                Some(t) => {
                    let now = sim_now();
                    if now >= t {
                        return;
                    }
                    tokio::time::sleep(t - now).await;
                }
                None => return,
            }
        }
    }

    /// Pins the real server's clock to simulated time plus the node's step;
    /// returns the pinned instant (since the Unix epoch).
    fn pin_clock(&self) -> Duration {
        let offset = self.lock().clock_offset_ms;
        let now = turmoil::since_epoch().unwrap_or_default();
        let step = Duration::from_millis(offset.unsigned_abs());
        let at = if offset >= 0 { now + step } else { now.saturating_sub(step) };
        self.clock.pin_at(at);
        at
    }

    /// Logs `request` with the server's `reply` (no simulated time passes
    /// between the two: the exchange with the real server is synchronous).
    pub(crate) fn record(
        &self,
        client: &Arc<str>,
        request: &[u8],
        reply: &[u8],
        at: Duration,
        taken: Duration,
        held: Duration,
    ) {
        let entry = Execution {
            client: Arc::clone(client),
            command: command_name(request),
            key: first_key(request),
            args: arguments(request).skip(1).take(MAX_LOGGED_ARGS).map(logged_argument).collect(),
            server_unix_ms: at.as_millis() as u64,
            sim_ms: sim_now().as_millis() as u64,
            taken_ms: taken.as_millis() as u64,
            held_ms: held.as_millis() as u64,
            reply: Reply::parse(reply),
        };
        lock_or_inner(&self.log).push(entry);
    }

    async fn serve_connection(
        &self,
        stream: turmoil::net::TcpStream,
        peer: SocketAddr,
        host: Arc<str>,
    ) -> io::Result<()> {
        let mut real = std::net::TcpStream::connect(self.real_addr())?;
        real.set_nodelay(true)?;
        real.set_read_timeout(Some(REAL_REPLY_TIMEOUT))?;
        let (mut rd, mut wr) = stream.into_split();
        let mut inbox: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        let mut reply = Vec::new();
        let mut scratch = Vec::new();
        // Inside MULTI the barrier's WAIT would be queued: it runs after EXEC.
        let mut in_multi = false;
        // Named at the first request, not at accept: the client says which
        // process it is once its connect has returned, before it sends.
        let mut client: Option<Arc<str>> = None;
        loop {
            while let Some(len) = next_request(&inbox)? {
                let client = client.get_or_insert_with(|| self.process_of(peer, &host));
                let (held, reply_held) = match self.take_delay(client, &inbox[..len]) {
                    Some(d) if d.phase == Phase::Before => (d.by, None),
                    Some(d) => (Duration::ZERO, Some(d)),
                    None => (Duration::ZERO, None),
                };
                let taken = sim_now();
                if !held.is_zero() {
                    tokio::time::sleep(held).await;
                }
                self.wait_while_paused().await;
                let at = self.pin_clock();
                let command = command_name(&inbox[..len]);
                let wait = if command == "WAIT" { client_wait(&inbox[..len]) } else { None };
                match &wait {
                    Some(_) => exchange(&mut real, &wait_request(0, 1), &mut reply, &mut chunk)?,
                    None => exchange(&mut real, &inbox[..len], &mut reply, &mut chunk)?,
                }
                self.record(client, &inbox[..len], &reply, at, taken, held);
                self.stats.commands.fetch_add(1, Ordering::Relaxed);
                inbox.drain(..len);
                match command.as_str() {
                    "MULTI" => in_multi = true,
                    "EXEC" | "DISCARD" => in_multi = false,
                    _ => {}
                }
                if !in_multi {
                    self.replicate(&mut real, &mut scratch, &mut chunk)?;
                }
                if let Some(w) = wait {
                    let short =
                        !matches!(redis::parse_redis_value(&reply), Ok(Value::Int(n)) if n >= w.replicas as i64);
                    if short {
                        // `WAIT n 0` blocks for ever: longer than any run may last.
                        let ms = if w.timeout_ms == 0 { u64::MAX / 4 } else { w.timeout_ms };
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                }
                if let Some(d) = reply_held {
                    if reply.first() == Some(&b'-') {
                        // An error reply (a NOSCRIPT before the library
                        // loads its script, say): the request did nothing,
                        // so the delay waits for the one that acts.
                        self.requeue(d);
                    } else {
                        tokio::time::sleep(d.by).await;
                    }
                }
                wr.write_all(&reply).await?;
            }
            let n = rd.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            inbox.extend_from_slice(&chunk[..n]);
        }
    }
}

/// `WAIT numreplicas timeout` as a client sent it.
struct ClientWait {
    replicas: u64,
    timeout_ms: u64,
}

/// The arguments of a `WAIT` request; `None` when they are not two
/// non-negative integers (then the request goes to the server as it is,
/// which answers the error).
fn client_wait(request: &[u8]) -> Option<ClientWait> {
    let Ok(Value::Array(items)) = redis::parse_redis_value(request) else { return None };
    let number = |v: &Value| match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse::<u64>().ok(),
        _ => None,
    };
    match items.as_slice() {
        [_, n, t] => Some(ClientWait { replicas: number(n)?, timeout_ms: number(t)? }),
        _ => None,
    }
}

/// `WAIT n ms`, encoded.
fn wait_request(n: u64, ms: u64) -> Vec<u8> {
    let (n, ms) = (n.to_string(), ms.to_string());
    format!("*3\r\n$4\r\nWAIT\r\n${}\r\n{n}\r\n${}\r\n{ms}\r\n", n.len(), ms.len()).into_bytes()
}

fn lock_or_inner<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The length of the first complete request in `buf`, if there is one.
pub(crate) fn next_request(buf: &[u8]) -> io::Result<Option<usize>> {
    if buf.is_empty() {
        return Ok(None);
    }
    match redis::parse_redis_value(buf) {
        Ok(Value::Array(items)) => {
            let encoded = encode_request(&items).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "request array holds something other than bulk strings")
            })?;
            if buf.starts_with(&encoded) {
                Ok(Some(encoded.len()))
            } else {
                Err(io::Error::new(io::ErrorKind::InvalidData, "request is not canonically encoded RESP"))
            }
        }
        Ok(other) => Err(io::Error::new(io::ErrorKind::InvalidData, format!("request is not a RESP array: {other:?}"))),
        // Parsing a byte slice can only fail with I/O when the slice ends
        // mid-frame: wait for more bytes.
        Err(e) if e.is_io_error() => Ok(None),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
    }
}

/// The command name of a complete, canonical request (`*N\r\n$L\r\nNAME…`),
/// upper-cased; empty if it has none.
pub(crate) fn command_name(request: &[u8]) -> String {
    arguments(request).next().map(|name| String::from_utf8_lossy(name).to_ascii_uppercase()).unwrap_or_default()
}

/// The bulk strings of a request (`*n\r\n$len\r\nbytes\r\n…`), in order;
/// stops at the first malformed one.
fn arguments(request: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = request.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default();
    core::iter::from_fn(move || {
        let eol = rest.iter().position(|&b| b == b'\n')?;
        let len: usize = core::str::from_utf8(rest.get(1..eol.checked_sub(1)?)?).ok()?.parse().ok()?;
        let item = rest.get(eol + 1..eol + 1 + len)?;
        rest = rest.get(eol + 1 + len + 2..).unwrap_or_default();
        Some(item)
    })
}

/// [`Execution::key`] of a request.
fn first_key(request: &[u8]) -> Option<String> {
    let mut args = arguments(request);
    let command = args.next()?;
    let scripted = ["EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"];
    if scripted.iter().any(|c| command.eq_ignore_ascii_case(c.as_bytes())) {
        let _script = args.next()?;
        let keys: usize = core::str::from_utf8(args.next()?).ok()?.parse().ok()?;
        if keys == 0 {
            return None;
        }
    }
    args.next().map(|k| String::from_utf8_lossy(k).into_owned())
}

/// The canonical RESP encoding of a command: an array of bulk strings.
pub(crate) fn encode_request(items: &[Value]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(16 + items.len() * 16);
    out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
    for item in items {
        let Value::BulkString(bytes) = item else { return None };
        out.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
    }
    Some(out)
}

/// Sends `request` and reads exactly one reply frame into `reply`.
fn exchange(real: &mut std::net::TcpStream, request: &[u8], reply: &mut Vec<u8>, chunk: &mut [u8]) -> io::Result<()> {
    real.write_all(request)?;
    reply.clear();
    loop {
        let n = real.read(chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "redis-server closed the connection"));
        }
        reply.extend_from_slice(&chunk[..n]);
        match redis::parse_redis_value(reply) {
            Ok(_) => return Ok(()),
            Err(e) if e.is_io_error() => continue,
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_first_key() {
        let encode = |items: &[&str]| {
            encode_request(&items.iter().map(|i| Value::BulkString(i.as_bytes().to_vec())).collect::<Vec<_>>())
                .expect("bulk strings")
        };
        assert_eq!(first_key(&encode(&["GET", "lock:{a}"])), Some("lock:{a}".into()));
        assert_eq!(
            first_key(&encode(&["EVALSHA", "abc", "2", "lock:{a}", "lock:{a}:fence", "x"])),
            Some("lock:{a}".into())
        );
        assert_eq!(first_key(&encode(&["evalsha", "abc", "0", "x"])), None);
        assert_eq!(first_key(&encode(&["PING"])), None);
        assert_eq!(first_key(b"*2\r\n$3\r\nGET\r\n$9\r\nk"), None);
    }

    #[test]
    fn logs_arguments_bounded_and_long_ones_hashed() {
        let long = "x".repeat(100);
        let mut items = vec!["RPUSH", "ledger", "a", long.as_str()];
        let many: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        items.extend(many.iter().map(String::as_str));
        let request =
            encode_request(&items.iter().map(|i| Value::BulkString(i.as_bytes().to_vec())).collect::<Vec<_>>())
                .expect("bulk strings");
        let args: Vec<String> = arguments(&request).skip(1).take(MAX_LOGGED_ARGS).map(logged_argument).collect();
        assert_eq!(args.len(), MAX_LOGGED_ARGS);
        assert_eq!(&args[..2], ["ledger", "a"]);
        assert!(args[2].starts_with(&"x".repeat(32)) && args[2].ends_with("(100 bytes)"), "{}", args[2]);
        assert_ne!(args[2], logged_argument(&[b'x'; 101]), "a different long value logs differently");
        assert_eq!(args[2], logged_argument(long.as_bytes()), "the same value logs the same");
    }

    #[test]
    fn frames_requests_exactly() {
        let one = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(next_request(one).unwrap(), Some(one.len()));
        let mut two = one.to_vec();
        two.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(next_request(&two).unwrap(), Some(one.len()));
        assert_eq!(next_request(&one[..one.len() - 3]).unwrap(), None);
        assert_eq!(next_request(b"*2\r\n$3\r\nGE").unwrap(), None);
        assert!(next_request(b"+OK\r\n").is_err());
    }

    #[test]
    fn names_the_command_of_a_request() {
        assert_eq!(command_name(b"*2\r\n$7\r\nevalsha\r\n$1\r\nk\r\n"), "EVALSHA");
        assert_eq!(command_name(b"*1\r\n$4\r\nPING\r\n"), "PING");
        assert_eq!(command_name(b""), "");
    }
}
