//! Shared set-up for the library tests: a real redis-server per test.
//!
//! Each test starts its own server on an ephemeral port (see
//! `redis-primitives-testkit`), so tests run in parallel without sharing
//! state, and the server dies with the test.
#![allow(dead_code)]

pub mod proxy;

use core::time::Duration;
use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
pub use redis_primitives_testkit::RedisServer;

/// Starts a fresh redis-server, or fails the test with install instructions.
pub fn server() -> RedisServer {
    match RedisServer::start() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// A multiplexed connection to `server` (redis-rs defaults: 500 ms response timeout).
pub async fn connect(server: &RedisServer) -> MultiplexedConnection {
    let client = redis::Client::open(server.url()).expect("valid url");
    client.get_multiplexed_async_connection().await.expect("connect to test redis-server")
}

/// A multiplexed connection whose requests time out after `timeout`.
pub async fn connect_with_timeout(server: &RedisServer, timeout: Duration) -> MultiplexedConnection {
    connect_url(&server.url(), Some(timeout)).await
}

/// A multiplexed connection to `url` (a server or a proxy in front of one)
/// with the given response timeout; `None` means requests never time out.
pub async fn connect_url(url: &str, response_timeout: Option<Duration>) -> MultiplexedConnection {
    let client = redis::Client::open(url).expect("valid url");
    let config = AsyncConnectionConfig::new().set_response_timeout(response_timeout);
    client.get_multiplexed_async_connection_with_config(&config).await.expect("connect to test redis-server")
}

/// Shorthand for a millisecond TTL known to be valid.
pub fn ms(n: u64) -> redis_primitives::Ttl {
    redis_primitives::Ttl::from_millis(n).expect("valid ttl")
}

/// Whether `cmd` is the command `name` (case-insensitive): what a wrapping
/// test connection checks before it intercepts a request.
pub fn is_command(cmd: &redis::Cmd, name: &str) -> bool {
    matches!(cmd.args_iter().next(), Some(redis::Arg::Simple(first)) if first.eq_ignore_ascii_case(name.as_bytes()))
}

/// Every key of a server: its type, its `DUMP` (the value's exact bytes)
/// and whether it has an expiry. What "nothing was changed" is checked
/// against.
pub type Keyspace = BTreeMap<Vec<u8>, (String, Vec<u8>, bool)>;

/// The server's whole [`Keyspace`], read through `conn`.
pub async fn keyspace(conn: &MultiplexedConnection) -> Keyspace {
    let mut conn = conn.clone();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.expect("KEYS");
    let mut out = Keyspace::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut conn).await.expect("TYPE");
        let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await.expect("DUMP");
        let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.expect("PTTL");
        out.insert(key, (kind, dump, pttl >= 0));
    }
    out
}

/// Sends one raw command (a test's set-up, as another program would write).
pub async fn run(conn: &MultiplexedConnection, args: &[&str]) {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    let _: redis::Value = cmd.query_async(&mut conn.clone()).await.expect("set-up command");
}

/// What a [`Hooked`] connection does with each single command it sends on
/// the real connection: the tests' transport faults (a script cache flushed
/// first, a reply lost, a command renamed).
pub trait Hook: Clone + Send + Sync + 'static {
    /// Sends `cmd` on `conn`, with the fault around it.
    fn command<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value>;
}

/// A real connection to a real server whose single commands go through
/// `H`; pipelines pass untouched.
#[derive(Clone)]
pub struct Hooked<H>(pub MultiplexedConnection, pub H);

impl<H: Hook> redis::aio::ConnectionLike for Hooked<H> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        let Hooked(conn, hook) = self;
        hook.command(conn, cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        0
    }
}
