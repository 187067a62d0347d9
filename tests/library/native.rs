//! Native compare-and-delete and compare-and-set (`DELIFEQ`, `DELEX … IFEQ`,
//! `SET … IFEQ … PX`) against the Lua scripts they replace: every test runs
//! on a Valkey 9 server (which has them) and on the Redis one (which, at 7,
//! does not), with detection on and off, and asserts the same answers.

use crate::support;

use core::time::Duration;
use redis::aio::ConnectionLike as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis_primitives::{CompareCommands, Error, Lock};
use support::{connect, ms, server, RedisServer};
use tokio::time::sleep;

/// Starts a valkey-server, or fails the test with install instructions.
fn valkey() -> RedisServer {
    RedisServer::start_valkey().unwrap_or_else(|e| panic!("{e}"))
}

/// What the server's `INFO server` says it should have: Valkey >= 9 has
/// `DELIFEQ`; Redis >= 8.4 has `DELEX` (and no `DELIFEQ`).
async fn expected(conn: &mut MultiplexedConnection) -> CompareCommands {
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await.unwrap();
    let version = |field: &str| {
        info.lines().find_map(|l| l.strip_prefix(field)).map(|v| {
            let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
        })
    };
    match (version("valkey_version:"), version("redis_version:")) {
        (Some(v), _) if v >= (9, 0) => CompareCommands::DelIfEq,
        (Some(_), _) => CompareCommands::Scripts,
        (None, Some(v)) if v >= (8, 4) => CompareCommands::DelEx,
        _ => CompareCommands::Scripts,
    }
}

/// Two locks on `server`'s one connection: detecting, and scripts only.
async fn both_locks(server: &RedisServer) -> [Lock<MultiplexedConnection>; 2] {
    let conn = connect(server).await;
    [Lock::new(conn.clone()), Lock::builder(conn).native_commands(false).build().unwrap()]
}

#[tokio::test]
async fn detection_finds_the_native_commands_the_server_has() {
    let valkey = valkey();
    let redis = server();
    for s in [&valkey, &redis] {
        let mut conn = connect(s).await;
        let want = expected(&mut conn).await;
        let [native, scripts] = both_locks(s).await;
        assert_eq!(native.compare_commands().await, want);
        assert_eq!(scripts.compare_commands().await, CompareCommands::Scripts);
        // Remembered: clones share what was learnt, asked once.
        assert_eq!(native.clone().compare_commands().await, want);
    }
    // The Valkey binary under test is one that has them: otherwise this
    // test would compare the scripts with themselves.
    assert_eq!(expected(&mut connect(&valkey).await).await, CompareCommands::DelIfEq);
}

#[tokio::test]
async fn release_and_extend_answer_the_same_natively_and_by_script() {
    let valkey = valkey();
    let redis = server();
    for s in [&valkey, &redis] {
        for (i, lock) in both_locks(s).await.into_iter().enumerate() {
            let name = format!("n{i}");
            let how = lock.compare_commands().await;
            // Our own lease: extended (TTL raised), then released.
            let mut mine = lock.acquire(&name, ms(300)).await.unwrap().unwrap();
            assert!(lock.extend(&mut mine, ms(5000)).await.unwrap(), "{how:?}: extend own lease");
            assert_eq!(mine.ttl(), ms(5000));
            assert!(lock.remaining_ttl(&name).await.unwrap().unwrap() > Duration::from_millis(1000), "{how:?}");
            assert!(lock.release(&mine).await.unwrap(), "{how:?}: release own lease");
            assert!(!lock.release(&mine).await.unwrap(), "{how:?}: a second release finds nothing");
            // Gone: an extend does not recreate it.
            assert!(!lock.extend(&mut mine, ms(5000)).await.unwrap(), "{how:?}: extend after release");
            assert_eq!(lock.remaining_ttl(&name).await.unwrap(), None, "{how:?}: no resurrection");
            // Someone else's: neither extended nor deleted.
            let mut old = lock.acquire(&name, ms(50)).await.unwrap().unwrap();
            sleep(Duration::from_millis(120)).await;
            let theirs = lock.acquire(&name, ms(400)).await.unwrap().unwrap();
            assert!(!lock.extend(&mut old, ms(10_000)).await.unwrap(), "{how:?}: extend a stolen lease");
            assert!(!lock.release(&old).await.unwrap(), "{how:?}: release a stolen lease");
            let left = lock.remaining_ttl(&name).await.unwrap().unwrap();
            assert!(left <= Duration::from_millis(400), "{how:?}: their TTL untouched: {left:?}");
            assert!(lock.release(&theirs).await.unwrap(), "{how:?}: theirs is still there");
        }
    }
}

#[tokio::test]
async fn a_key_of_another_type_is_wrong_type_natively_and_by_script() {
    let valkey = valkey();
    let redis = server();
    for s in [&valkey, &redis] {
        let mut raw = connect(s).await;
        for (i, lock) in both_locks(s).await.into_iter().enumerate() {
            let name = format!("t{i}");
            let how = lock.compare_commands().await;
            let mut lease = lock.acquire(&name, ms(5000)).await.unwrap().unwrap();
            let key = lock.key(&name).unwrap();
            let _: () = redis::pipe().del(&key).hset(&key, "f", "v").query_async(&mut raw).await.unwrap();
            assert!(matches!(lock.release(&lease).await, Err(Error::WrongType { .. })), "{how:?}: release");
            assert!(matches!(lock.extend(&mut lease, ms(5000)).await, Err(Error::WrongType { .. })), "{how:?}");
            let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut raw).await.unwrap();
            assert_eq!(kind, "hash", "{how:?}: the other type's key is left alone");
        }
    }
}

/// A connection to a real Valkey that, once `downgraded` is set, sends
/// `DELIFEQ` under a name no server has: the server answers `ERR unknown
/// command` and runs nothing, as an older server reached by a reconnect
/// would. `COMMAND INFO` is renamed the same way, so a new detection finds
/// nothing native.
#[derive(Clone)]
struct Downgradable {
    downgraded: Arc<AtomicBool>,
}

impl Downgradable {
    fn rename(&self, cmd: &redis::Cmd) -> redis::Cmd {
        let mut out = redis::Cmd::new();
        for arg in cmd.args_iter() {
            match arg {
                redis::Arg::Simple(a) if a.eq_ignore_ascii_case(b"DELIFEQ") => out.arg("NOSUCHDELIFEQ"),
                redis::Arg::Simple(a) => out.arg(a),
                _ => panic!("the lock sends no cursor arguments"),
            };
        }
        out
    }
}

impl support::Hook for Downgradable {
    fn command<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(async move {
            if self.downgraded.load(Ordering::SeqCst) {
                let renamed = self.rename(cmd);
                conn.req_packed_command(&renamed).await
            } else {
                conn.req_packed_command(cmd).await
            }
        })
    }
}

#[tokio::test]
async fn a_server_that_no_longer_knows_the_native_command_gets_the_script() {
    let valkey = valkey();
    let downgraded = Arc::new(AtomicBool::new(false));
    let conn = support::Hooked(connect(&valkey).await, Downgradable { downgraded: Arc::clone(&downgraded) });
    let lock = Lock::new(conn);
    assert_eq!(lock.compare_commands().await, CompareCommands::DelIfEq);
    let lease = lock.acquire("f", ms(5000)).await.unwrap().unwrap();
    downgraded.store(true, Ordering::SeqCst);
    // Unknown command, nothing run: the script releases instead.
    assert!(lock.release(&lease).await.unwrap(), "released by the script after the unknown command");
    assert_eq!(lock.remaining_ttl("f").await.unwrap(), None);
    // And the lock asked again: the "older server" has nothing native.
    assert_eq!(lock.compare_commands().await, CompareCommands::Scripts);
    let again = lock.acquire("f", ms(5000)).await.unwrap().unwrap();
    assert!(lock.release(&again).await.unwrap());
}

/// The server swapped in, and how it refuses the native commands: Redis 7
/// where one is installed (`redis-server` on `PATH`, or `REDIS_SERVER` when
/// it names one): `SET … IFEQ` is a syntax error there and `DELIFEQ` an
/// unknown command. On a machine with Valkey only, a Valkey whose ACL
/// refuses `SET` and `DELIFEQ` (`NOPERM`): another wording of the same
/// refusal, which runs nothing either. Its scripts run `GET`, `PEXPIRE` and
/// `DEL`, which the ACL allows.
fn older_server_config() -> redis_primitives_testkit::ServerConfig {
    use redis_primitives_testkit::ServerConfig;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path).map(|dir| dir.join("redis-server")).find(|p| p.is_file());
    let named = std::env::var_os("REDIS_SERVER")
        .map(std::path::PathBuf::from)
        .filter(|p| p.file_name().is_some_and(|n| n == "redis-server") && p.is_file());
    match on_path.or(named) {
        Some(redis) => ServerConfig { binary: Some(redis), ..ServerConfig::default() },
        None => ServerConfig {
            binary: Some(redis_primitives_testkit::valkey_server_binary().unwrap_or_else(|e| panic!("{e}"))),
            args: ["--user", "default", "on", "nopass", "~*", "&*", "+@all", "-set", "-delifeq"]
                .map(String::from)
                .to_vec(),
            ..ServerConfig::default()
        },
    }
}

/// Until the reconnecting connection reaches the server now on its port.
async fn reconnected(conn: &mut redis::aio::ConnectionManager) {
    for _ in 0..500 {
        if redis::cmd("PING").query_async::<String>(conn).await.is_ok() {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("the connection manager did not reconnect within 5 s");
}

/// Valkey 9 serves an address, a lock and a Redlock on a reconnecting
/// connection learn its native commands, then Redis 7 serves the same port
/// (a rolling downgrade, a failover to an older replica), holding the same
/// lease keys. Redis 7 answers `SET … IFEQ` with `ERR syntax error` and
/// `DELIFEQ` with `ERR unknown command`: whatever the wording, the refusal
/// ran nothing, so the script runs instead and the detection is learnt
/// again. Before, every extend was `Err(syntax error)` until a release
/// reset the detection, and a Redlock extend lost its lease. (Where no
/// Redis 7 is installed the second server is a Valkey whose ACL refuses
/// the native commands: see [`older_server_config`].)
#[tokio::test]
async fn a_server_swapped_for_an_older_one_on_the_same_port_gets_the_scripts() {
    use redis_primitives::redlock::{Redlock, RedlockConfig};

    let mut first = valkey();
    let port = first.port();
    let client = redis::Client::open(first.url()).unwrap();
    let mut manager = redis::aio::ConnectionManager::new(client).await.unwrap();
    let lock = Lock::new(manager.clone());
    let redlock = Redlock::connect(vec![manager.clone()], RedlockConfig::new(ms(60_000))).await.unwrap();
    assert_eq!(lock.compare_commands().await, CompareCommands::DelIfEq);
    assert_eq!(redlock.compare_commands().await, [CompareCommands::DelIfEq]);
    let mut lease = lock.acquire("swap", ms(60_000)).await.unwrap().unwrap();
    let mut red = redlock.acquire("red").await.unwrap().into_lease().expect("a lone master says yes");

    first.stop();
    let older = RedisServer::start_on(port, older_server_config()).unwrap_or_else(|e| panic!("{e}"));
    let mut raw = connect(&older).await;
    let has = expected(&mut raw).await;
    // The older server holds what the first held (as a replica would);
    // PSETEX, since the ACL variant refuses SET.
    for (key, owner) in [(lease.key(), lease.owner().as_str()), (red.key(), red.owner().as_str())] {
        let _: () = redis::cmd("PSETEX").arg(key).arg(60_000).arg(owner).query_async(&mut raw).await.unwrap();
    }
    reconnected(&mut manager).await;

    assert!(lock.extend(&mut lease, ms(30_000)).await.unwrap(), "extended by the script after the syntax error");
    let left = lock.remaining_ttl("swap").await.unwrap().unwrap();
    assert!(left <= Duration::from_millis(30_000) && left > Duration::from_millis(20_000), "{left:?}");
    assert_eq!(lock.compare_commands().await, has, "learnt again, from the server now on the port");
    assert!(lock.release(&lease).await.unwrap(), "released by the script");
    assert_eq!(lock.remaining_ttl("swap").await.unwrap(), None);

    let extension = redlock.extend(&mut red).await;
    assert!(extension.is_extended(), "the Redlock extend runs the script: {extension:?}");
    assert_eq!(redlock.compare_commands().await, [has]);
    assert_eq!(redlock.release(&red).await.deleted, 1, "released by the script");
}
