//! Client connections inside the simulation: redis-rs over simulated TCP,
//! with a connect timeout, an explicit response timeout and reconnection.
//!
//! [`SimConnection`] is what an actor hands to the production primitives. It
//! implements `redis::aio::ConnectionLike` and is `Clone + Send + Sync`, so
//! it satisfies `redis_primitives::Connection` like any real connection.
//! Underneath, it is a `MultiplexedConnection` built with
//! `new_with_config` over a `turmoil::net::TcpStream` (the only
//! constructor that hands back the driver instead of spawning it), and:
//!
//! - the **driver** is spawned through the actor's [`PauseHandle`], so a
//!   frozen actor does not read replies during its pause;
//! - the **whole connect** is wrapped in `tokio::time::timeout`: the
//!   handshake has none of its own and hangs forever on a held or
//!   partitioned link (design §4);
//! - the **response timeout** is implemented here rather than by redis-rs,
//!   so that what happens when a reply and the timeout are both due at the
//!   same poll (typically right after a resume) is a setting,
//!   [`TimeoutRace`], not an accident of timer registration order;
//! - the **reconnect layer**: after a timeout or any I/O failure the
//!   connection is discarded and the next request opens a new one. A
//!   timed-out request is never retried here: it may still execute (the
//!   bridge may be holding it), so its outcome is the caller's "unknown".
//!   Discarding after a timeout is not optional: turmoil drops data on a
//!   partitioned link without retransmission, so a request lost in a
//!   partition leaves redis-rs waiting for a reply that will never come, and
//!   every later reply on that connection would be matched to the wrong
//!   request.
//!
//! Server error replies (`-ERR`, `NOSCRIPT`, ...) keep the connection.
//! Every one of them except `NOSCRIPT` (which the library recovers from by
//! loading the script) is also written into the history as an
//! [`Op::ErrorReply`] when the connection belongs to an actor
//! ([`SimConnection::record_errors`]): a correct primitive whose keys
//! nobody corrupted never gets one, and the `unexpected-errors` checker says so.
//! Recording it here, where every reply passes, rather than at each call
//! site means a script that fails (a nil argument, a `CORRUPT` refusal of
//! a value the library itself wrote) cannot hide behind a scenario that
//! files the error as "outcome unknown".

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use core::time::Duration;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisConnectionInfo, RedisError, RedisFuture, RedisResult, Value};
use serde::{Deserialize, Serialize};
use tokio::time::{sleep_until, Instant};

use crate::bridge::BridgeNode;
use crate::history::{History, Op};
use crate::pause::PauseHandle;

/// Who wins when a reply and the response timeout are both due.
///
/// After a client pause both are typically due at once: the timer is
/// overdue and the reply has been waiting in the socket. Real systems go
/// either way, so the harness makes it a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TimeoutRace {
    /// The reply wins: when the timer fires, the (just resumed) connection
    /// driver gets a turn to deliver a reply that has already arrived before
    /// the timeout is declared. The adversarial default: the caller sees
    /// late successes and must judge them by its own deadlines.
    #[default]
    ReplyFirst,
    /// The timeout wins whenever its deadline has passed, even if the reply
    /// is already there: the caller sees "outcome unknown".
    TimeoutFirst,
}

/// Timeouts of one simulated client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetConfig {
    /// Limit on the whole connect (TCP handshake and redis-rs set-up).
    pub connect_timeout: Duration,
    /// Limit on each request's round trip.
    pub response_timeout: Duration,
    /// Reply versus timeout when both are due.
    pub race: TimeoutRace,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            connect_timeout: Duration::from_millis(500),
            response_timeout: Duration::from_millis(250),
            race: TimeoutRace::ReplyFirst,
        }
    }
}

/// Counters for one [`SimConnection`] (all its clones).
#[derive(Debug, Default)]
pub struct NetStats {
    /// Connections opened.
    pub connects: AtomicU64,
    /// Connect attempts that failed or timed out.
    pub connect_failures: AtomicU64,
    /// Requests (single commands or pipelines) sent.
    pub requests: AtomicU64,
    /// Requests that hit the response timeout.
    pub timeouts: AtomicU64,
    /// Connections discarded after a failure.
    pub discards: AtomicU64,
}

impl NetStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

struct Live {
    conn: MultiplexedConnection,
    generation: u64,
}

struct Shared {
    host: String,
    port: u16,
    config: NetConfig,
    pause: PauseHandle,
    current: tokio::sync::Mutex<Option<Live>>,
    generation: AtomicU64,
    stats: NetStats,
    /// Where error replies are recorded, and as which process.
    errors: std::sync::OnceLock<(History, String)>,
    /// The bridge told which process each new connection speaks for.
    attribution: std::sync::OnceLock<(Arc<BridgeNode>, Arc<str>)>,
    /// The client host the connection is from, where a live run's link
    /// faults aim (`crate::live`); the simulation knows it from turmoil.
    client_host: std::sync::OnceLock<Arc<str>>,
}

/// A reconnecting redis-rs connection over the simulated network. Clones
/// share one underlying connection (like a `MultiplexedConnection`).
#[derive(Clone)]
pub struct SimConnection {
    shared: Arc<Shared>,
}

impl core::fmt::Debug for SimConnection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimConnection")
            .field("host", &self.shared.host)
            .field("port", &self.shared.port)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

fn timed_out(what: &str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::TimedOut, what.to_string()))
}

/// Whether a failure leaves the connection unusable (see the module docs).
fn poisons_connection(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}

impl SimConnection {
    /// A connection to `host:port` (a turmoil host name), opened lazily by
    /// the first request, whose driver runs under `pause`.
    pub fn new(host: impl Into<String>, port: u16, config: NetConfig, pause: PauseHandle) -> SimConnection {
        SimConnection {
            shared: Arc::new(Shared {
                host: host.into(),
                port,
                config,
                pause,
                current: tokio::sync::Mutex::new(None),
                generation: AtomicU64::new(0),
                stats: NetStats::default(),
                errors: std::sync::OnceLock::new(),
                attribution: std::sync::OnceLock::new(),
                client_host: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Records every error reply this connection (and its clones) receives
    /// into `history` as an [`Op::ErrorReply`] of `process`. Set once; later
    /// calls are ignored.
    pub fn record_errors(&self, history: History, process: impl Into<String>) {
        let _ = self.shared.errors.set((history, process.into()));
    }

    /// Tells `bridge` (the node this connection talks to) that every
    /// connection it opens speaks for `process`, so that the bridge logs
    /// its executions and matches its held requests under that name
    /// (`BridgeNode::attribute`); without it they go under the host's
    /// name. Set once; later calls are ignored.
    pub fn attribute_to(&self, bridge: Arc<BridgeNode>, process: impl Into<Arc<str>>) {
        let _ = self.shared.attribution.set((bridge, process.into()));
    }

    /// Names the client host this connection is from (an actor's, which
    /// its aliases share): what a live run's link faults aim at. Set once.
    pub(crate) fn name_client_host(&self, host: Arc<str>) {
        let _ = self.shared.client_host.set(host);
    }

    /// The simulated host this connection talks to.
    pub fn host(&self) -> &str {
        &self.shared.host
    }

    /// Counters shared by all clones.
    pub fn stats(&self) -> &NetStats {
        &self.shared.stats
    }

    /// The timeouts in force.
    pub fn config(&self) -> NetConfig {
        self.shared.config
    }

    /// Opens the connection now if it is not open (otherwise the first
    /// request does). Fails like a request would on a dead link.
    pub async fn connect(&self) -> RedisResult<()> {
        self.live().await.map(|_| ())
    }

    /// Drops the current connection (if any); the next request reconnects.
    pub async fn disconnect(&self) {
        if self.shared.current.lock().await.take().is_some() {
            NetStats::bump(&self.shared.stats.discards);
        }
    }

    async fn live(&self) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut current = self.shared.current.lock().await;
        if let Some(live) = current.as_ref() {
            return Ok((live.conn.clone(), live.generation));
        }
        let conn = match self.open().await {
            Ok(c) => c,
            Err(e) => {
                NetStats::bump(&self.shared.stats.connect_failures);
                return Err(e);
            }
        };
        NetStats::bump(&self.shared.stats.connects);
        let generation = self.shared.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *current = Some(Live { conn: conn.clone(), generation });
        Ok((conn, generation))
    }

    async fn open(&self) -> RedisResult<MultiplexedConnection> {
        let s = &self.shared;
        let attempt = async {
            if crate::live::is_live() {
                let from = s.client_host.get().cloned().unwrap_or_else(|| Arc::from(s.host.as_str()));
                let Some(stream) = crate::live::connect(&s.host, &from).await else {
                    let what = format!("no node {} in this live run", s.host);
                    return Err(RedisError::from(io::Error::new(io::ErrorKind::NotFound, what)));
                };
                let stream = stream?;
                let at = stream.local_addr();
                return self.handshake(stream, at).await;
            }
            let stream = turmoil::net::TcpStream::connect((s.host.as_str(), s.port)).await?;
            let at = stream.local_addr();
            self.handshake(stream, at).await
        };
        match tokio::time::timeout(s.config.connect_timeout, attempt).await {
            Ok(r) => r,
            // Nothing was sent, so this is a refusal, not an unknown outcome.
            Err(_) => Err(RedisError::from(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("connect to {}:{} timed out after {:?}", s.host, s.port, s.config.connect_timeout),
            ))),
        }
    }

    /// redis-rs's set-up over an open `stream` whose local end is `at`
    /// (simulated or, live, real), its driver spawned under the pause.
    async fn handshake<S>(&self, stream: S, at: io::Result<std::net::SocketAddr>) -> RedisResult<MultiplexedConnection>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let s = &self.shared;
        if let (Some((bridge, process)), Ok(at)) = (s.attribution.get(), at) {
            bridge.attribute(at, Arc::clone(process));
        }
        // No CLIENT SETINFO: one less round trip to hang on, nothing lost.
        let info = RedisConnectionInfo::default().set_skip_set_lib_name();
        // No redis-rs response timeout: ours is explicit (TimeoutRace).
        let config = AsyncConnectionConfig::new().set_response_timeout(None).set_connection_timeout(None);
        let (conn, driver) = MultiplexedConnection::new_with_config(&info, stream, config).await?;
        s.pause.spawn_local(driver);
        Ok(conn)
    }

    async fn discard(&self, generation: u64) {
        let mut current = self.shared.current.lock().await;
        if current.as_ref().is_some_and(|l| l.generation == generation) {
            *current = None;
            NetStats::bump(&self.shared.stats.discards);
        }
    }

    /// Runs one request on the live connection under the response timeout,
    /// discarding the connection if the request poisoned it.
    async fn request<T, F, Fut>(&self, send: F) -> RedisResult<T>
    where
        T: ErrorReplies,
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let (conn, generation) = self.live().await?;
        NetStats::bump(&self.shared.stats.requests);
        let result = race(send(conn), self.shared.config.response_timeout, self.shared.config.race).await;
        match &result {
            Err(e) => {
                if e.is_timeout() {
                    NetStats::bump(&self.shared.stats.timeouts);
                }
                if poisons_connection(e) {
                    self.discard(generation).await;
                } else {
                    self.record_error(e.code(), &e.to_string());
                }
            }
            // redis-rs hands a server's error reply to the connection layer
            // as a value (`Value::ServerError`); the caller's conversion turns
            // it into an `Err` later. Both shapes are error replies.
            Ok(value) => value.for_each_error(&mut |e| self.record_error(Some(e.code()), &e.to_string())),
        }
        result
    }

    /// Writes an error reply into the history (see the module docs), unless
    /// it is the `NOSCRIPT` the library recovers from.
    fn record_error(&self, code: Option<&str>, message: &str) {
        if code == Some("NOSCRIPT") {
            return;
        }
        if let Some((history, process)) = self.shared.errors.get() {
            history.observe(process, Op::ErrorReply { message: message.to_string() });
        }
    }
}

/// The error replies inside a reply: one value, or a pipeline's values.
trait ErrorReplies {
    fn for_each_error(&self, f: &mut dyn FnMut(&redis::ServerError));
}

impl ErrorReplies for Value {
    fn for_each_error(&self, f: &mut dyn FnMut(&redis::ServerError)) {
        if let Value::ServerError(e) = self {
            f(e);
        }
    }
}

impl ErrorReplies for Vec<Value> {
    fn for_each_error(&self, f: &mut dyn FnMut(&redis::ServerError)) {
        self.iter().for_each(|v| v.for_each_error(f));
    }
}

/// How many times the caller yields, after its timer fired, to let a resumed
/// driver deliver a reply that already arrived ([`TimeoutRace::ReplyFirst`]).
const REPLY_TURNS: usize = 3;

async fn race<T>(fut: impl Future<Output = RedisResult<T>>, timeout: Duration, order: TimeoutRace) -> RedisResult<T> {
    let mut fut = pin!(fut);
    let mut timer = pin!(sleep_until(Instant::now() + timeout));
    match order {
        TimeoutRace::TimeoutFirst => {
            tokio::select! {
                biased;
                _ = &mut timer => Err(timed_out("response timeout")),
                r = &mut fut => r,
            }
        }
        TimeoutRace::ReplyFirst => {
            tokio::select! {
                biased;
                r = &mut fut => return r,
                _ = &mut timer => {}
            }
            for _ in 0..REPLY_TURNS {
                tokio::task::yield_now().await;
                let polled = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
                if let Poll::Ready(r) = polled {
                    return r;
                }
            }
            Err(timed_out("response timeout"))
        }
    }
}

impl ConnectionLike for SimConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move { self.request(|mut conn| async move { conn.req_packed_command(cmd).await }).await })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.request(|mut conn| async move { conn.req_packed_commands(pipeline, offset, count).await }).await
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
