//! The module experiment of ADR 0014 (`examples/fence_acquire_module.c`),
//! kept honest: built with the system C compiler, loaded into the server
//! under test, it must keep the acquire script's contract, on the same keys
//! as this crate's `Lock`, or the ADR's figures measure something else.

use crate::support::connect;

use std::path::PathBuf;
use std::process::Command;

use redis::aio::MultiplexedConnection;
use redis_primitives::{FencingToken, Lock};
use redis_primitives_testkit::{RedisServer, ServerConfig};

/// Builds the module into the test's scratch directory.
fn build_module() -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fence_acquire_module.c");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fence_acquire.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("could not run {cc} ({e}): install gcc (Debian: apt-get install -y gcc) or set CC"));
    assert!(status.success(), "{cc} failed on {}", source.display());
    out
}

async fn acquire(conn: &mut MultiplexedConnection, key: &str, owner: &str) -> redis::RedisResult<Option<u64>> {
    redis::cmd("FENCE.ACQUIRE").arg(key).arg(format!("{key}:fence")).arg(owner).arg(60_000).query_async(conn).await
}

#[tokio::test]
async fn the_module_keeps_the_acquire_scripts_contract_on_the_locks_keys() {
    let module = build_module();
    let server = RedisServer::start_with(ServerConfig {
        args: vec!["--loadmodule".into(), module.display().to_string()],
        ..ServerConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut conn = connect(&server).await;
    let lock = Lock::new(conn.clone());
    let key = lock.key("m").unwrap();

    // Tokens continue the lock's counter, one per winning acquire, none
    // for a refused one.
    let lease = lock.acquire("m", crate::support::ms(60_000)).await.unwrap().unwrap();
    assert_eq!(lease.token(), FencingToken::new(1));
    assert_eq!(acquire(&mut conn, &key, "other").await.unwrap(), None, "held: refused");
    assert_eq!(lock.current_token("m").await.unwrap(), Some(FencingToken::new(1)), "a refusal takes no token");
    assert!(lock.release(&lease).await.unwrap());
    assert_eq!(acquire(&mut conn, &key, "module-owner").await.unwrap(), Some(2));
    let held: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(held.as_deref(), Some("module-owner"));
    let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!((1..=60_000).contains(&pttl), "the key expires with the TTL asked: {pttl}");
    let _: () = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
    let next = lock.acquire("m", crate::support::ms(60_000)).await.unwrap().unwrap();
    assert_eq!(next.token(), FencingToken::new(3), "the lock goes on from the module's token");

    // A corrupt counter or a key of another type: an error, nothing written.
    for (counter, what) in [("007", "not canonical"), ("-1", "negative"), ("9223372036854775807", "at 2^63 - 1")] {
        let name = format!("corrupt-{what}");
        let key = lock.key(&name).unwrap();
        let _: () = redis::cmd("SET").arg(format!("{key}:fence")).arg(counter).query_async(&mut conn).await.unwrap();
        let err = acquire(&mut conn, &key, "o").await.unwrap_err();
        assert_eq!(err.code(), Some("CORRUPT"), "{what}: {err}");
        let exists: i64 = redis::cmd("EXISTS").arg(&key).query_async(&mut conn).await.unwrap();
        assert_eq!(exists, 0, "{what}: the lock was not taken");
        let left: String = redis::cmd("GET").arg(format!("{key}:fence")).query_async(&mut conn).await.unwrap();
        assert_eq!(left, counter, "{what}: the counter is unchanged");
    }
    let key = lock.key("hash").unwrap();
    let _: () = redis::cmd("HSET").arg(&key).arg("f").arg("v").query_async(&mut conn).await.unwrap();
    let err = acquire(&mut conn, &key, "o").await.unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
    let counter: Option<String> = redis::cmd("GET").arg(format!("{key}:fence")).query_async(&mut conn).await.unwrap();
    assert_eq!(counter, None, "a refused acquire takes no token");
}
