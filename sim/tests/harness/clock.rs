//! The clock library against a real redis-server: `TIME`, `PTTL` and key
//! expiry follow the control file, in both its modes (pin and offset).
//!
//! Each test starts its own server (through `ServerNode`, which preloads the
//! library and gives the server its own control file). Tests that run in
//! real time (offsets) use generous margins: they assert what the mechanism
//! implies (a 10 s step moves time by 10 s), not scheduling precision.
//!
//! The `valkey_*` tests run on Valkey 9 whatever `REDIS_SERVER` says (they
//! need `VALKEY_SERVER` or `valkey-server` on `PATH`, and fail with the
//! install hint without one): Valkey's wall clock is exact under the
//! library only because the library hides `/proc/cpuinfo` from it (ADR 0018).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis_primitives_sim::{check_clock_library, clock_library, ServerClock, ServerNode, SetupError, CLOCK_FILE_ENV};
use redis_primitives_testkit::{valkey_server_binary, RedisServer, ServerConfig};

/// 2030-01-01T00:00:00.123Z in ms.
const T: u64 = 1_893_456_000_123;

fn start() -> (ServerNode, redis::Connection) {
    let node = ServerNode::start().expect("start redis-server with the clock library");
    let conn = redis::Client::open(node.url()).unwrap().get_connection().unwrap();
    (node, conn)
}

fn time(conn: &mut redis::Connection) -> (u64, u64) {
    redis::cmd("TIME").query(conn).unwrap()
}

fn real_unix_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn pttl(conn: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).unwrap()
}

#[test]
fn time_follows_the_pin_and_the_offset() {
    let (node, mut c) = start();
    let clock = node.clock();

    clock.pin(T);
    assert_eq!(time(&mut c), (1_893_456_000, 123_000), "TIME while pinned");
    // Lua sees the same clock (redis.call('TIME') inside a script).
    let lua: Vec<String> = redis::Script::new("return redis.call('TIME')").invoke(&mut c).unwrap();
    assert_eq!(lua, vec!["1893456000".to_string(), "123000".to_string()], "Lua TIME while pinned");
    // Frozen: a pinned clock does not move with real time.
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(time(&mut c), (1_893_456_000, 123_000), "pinned clock moved");

    clock.offset(3_600_000);
    let (s, _) = time(&mut c);
    let ahead = s as i64 - real_unix_secs() as i64;
    println!("offset +1h: server is {ahead} s ahead of real time");
    assert!((3_590..=3_610).contains(&ahead), "offset +1h gave {ahead} s");

    clock.offset(-86_400_000);
    let (s, _) = time(&mut c);
    let behind = real_unix_secs() as i64 - s as i64;
    assert!((86_390..=86_410).contains(&behind), "offset -1d gave {behind} s behind");

    clock.release();
    let (s, _) = time(&mut c);
    let diff = s as i64 - real_unix_secs() as i64;
    assert!(diff.abs() <= 5, "released clock is {diff} s off real time");
}

#[test]
fn pttl_follows_the_pinned_clock() {
    let (node, mut c) = start();
    let clock = node.clock();
    clock.pin(T);
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(5000).query(&mut c).unwrap();
    assert_eq!(pttl(&mut c, "k"), 5000);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(pttl(&mut c, "k"), 5000, "PTTL moved while the clock was pinned");

    clock.pin(T + 1234);
    assert_eq!(pttl(&mut c, "k"), 3766);

    // Redis treats a key as live while now <= expiry: still there exactly
    // at its PX instant, gone one millisecond later.
    clock.pin(T + 5000);
    assert_eq!(pttl(&mut c, "k"), 0);
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(&mut c).unwrap();
    assert_eq!(exists, 1, "key gone at its expiry instant");
    clock.pin(T + 5001);
    assert_eq!(pttl(&mut c, "k"), -2, "key still there after its expiry instant");
}

#[test]
fn a_forward_step_expires_keys_early() {
    let (node, mut c) = start();
    let clock = node.clock();
    clock.release();
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(5000).query(&mut c).unwrap();
    let before = pttl(&mut c, "k");
    assert!(before > 4000, "fresh PX 5000 key has PTTL {before}");

    // No real time passes to speak of; the server's clock jumps 10 s.
    clock.offset(10_000);
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, None, "a +10 s step should expire a PX 5000 key at once");

    // Pinned form of the same fact, exact to the millisecond.
    clock.pin(T);
    let _: () = redis::cmd("SET").arg("p").arg("v").arg("PX").arg(5000).query(&mut c).unwrap();
    clock.pin(T + 10_000);
    assert_eq!(pttl(&mut c, "p"), -2);
}

#[test]
fn a_backward_step_extends_keys() {
    let (node, mut c) = start();
    let clock = node.clock();
    clock.release();
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(300).query(&mut c).unwrap();
    clock.offset(-10_000);
    // Twice the key's TTL of real time passes; the server's clock is 10 s
    // behind, so the key is far from expiry.
    std::thread::sleep(Duration::from_millis(600));
    let left = pttl(&mut c, "k");
    println!("PX 300 key after a -10 s step and 600 ms of real time: PTTL {left} ms");
    assert!(left > 9_000 && left <= 9_700, "PTTL {left}");

    // Undo the step: the key's deadline is long past.
    clock.release();
    assert_eq!(pttl(&mut c, "k"), -2);

    // Pinned form, exact.
    clock.pin(T);
    let _: () = redis::cmd("SET").arg("p").arg("v").arg("PX").arg(1000).query(&mut c).unwrap();
    clock.pin(T - 5000);
    assert_eq!(pttl(&mut c, "p"), 6000);
}

#[test]
fn the_library_governs_any_process_and_only_the_wall_clock() {
    // `date` reads the wall clock; with the library and a pinned control
    // file it prints the pinned instant. This checks the library on its own,
    // without Redis.
    let lib = clock_library().unwrap();
    let clock = ServerClock::create().unwrap();
    clock.pin(T);
    let out = Command::new("date")
        .args(["-u", "+%s"])
        .env("LD_PRELOAD", &lib)
        .env(CLOCK_FILE_ENV, clock.path())
        .output()
        .expect("run date");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1893456000");
    // Monotonic time is untouched: `sleep` (CLOCK_MONOTONIC / nanosleep)
    // still sleeps for real, it does not hang or return at once.
    let started = std::time::Instant::now();
    let status =
        Command::new("sleep").arg("0.2").env("LD_PRELOAD", &lib).env(CLOCK_FILE_ENV, clock.path()).status().unwrap();
    assert!(status.success());
    let slept = started.elapsed();
    assert!(slept >= Duration::from_millis(190), "sleep 0.2 took {slept:?}");
}

#[test]
fn a_missing_library_is_a_clear_error() {
    let err = check_clock_library(PathBuf::from("/nonexistent/librp_clock.so")).unwrap_err();
    assert!(matches!(err, SetupError::ClockLibraryMissing { .. }));
    let msg = err.to_string();
    assert!(msg.contains("RP_CLOCK_LIB") && msg.contains("cargo build -p redis-primitives-sim"), "{msg}");
}

/// A valkey-server with the clock library and its own control file, or the
/// test fails with the install hint.
fn start_valkey() -> (RedisServer, ServerClock, redis::Connection) {
    let binary = valkey_server_binary().unwrap_or_else(|e| panic!("{e}"));
    let clock = ServerClock::create().unwrap();
    let config = ServerConfig {
        preload: Some(clock_library().unwrap()),
        env: vec![clock.env()],
        binary: Some(binary),
        ..ServerConfig::default()
    };
    let server = RedisServer::start_with(config).unwrap_or_else(|e| panic!("{e}"));
    let conn = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    (server, clock, conn)
}

/// The `monotonic_clock` line of `INFO server`, for failure messages.
fn monotonic_clock(conn: &mut redis::Connection) -> String {
    let info: String = redis::cmd("INFO").arg("server").query(conn).unwrap();
    info.lines().find(|l| l.starts_with("monotonic_clock:")).unwrap_or("monotonic_clock: <absent>").to_string()
}

/// Valkey 9.1 picks the x86 TSC as its monotonic clock when /proc/cpuinfo
/// says `constant_tsc`, and its `ustime()` then reads `gettimeofday()` once
/// a millisecond and adds TSC time in between. Measured without the hiding
/// (ADR 0018): every read below after a new pin answered an earlier pin (up
/// to 117 simulated seconds behind) plus 1–997 µs, or the real time, and a
/// pin held 3 ms answered the pin plus 4–28 µs. With the file hidden Valkey
/// runs on its POSIX clock and every read is the pin. Pins here change
/// faster than once a millisecond, so any cache shows.
#[test]
fn valkey_time_is_the_pin_exactly() {
    let (_server, clock, mut c) = start_valkey();
    // 2030-01-01T00:00:00.123456789Z, then steps of 1.000003007 s: every
    // pin has another second, another µs, and a sub-µs part TIME drops.
    let base = Duration::from_nanos(1_893_456_000_123_456_789);
    let mut wrong = Vec::new();
    for i in 0..200u64 {
        let pin = base + Duration::from_nanos(i * 1_000_003_007);
        clock.pin_at(pin);
        let want = (pin.as_secs(), u64::from(pin.subsec_micros()));
        let got = time(&mut c);
        if got != want {
            wrong.push(format!("pin {want:?}: TIME {got:?}"));
        }
    }
    // Back and forth within one second, and Lua's TIME.
    for us in [999_999u64, 0, 500_000, 1, 123_456] {
        let pin = Duration::from_micros(1_893_456_000 * 1_000_000 + us);
        clock.pin_at(pin);
        let lua: Vec<u64> = redis::Script::new("return redis.call('TIME')").invoke(&mut c).unwrap();
        if lua != [1_893_456_000, us] {
            wrong.push(format!("pin (1893456000, {us}): Lua TIME {lua:?}"));
        }
    }
    // Frozen: real time passes (past any 1 ms cache), the pin does not move.
    let pin = base + Duration::from_micros(7);
    clock.pin_at(pin);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(3));
        let got = time(&mut c);
        if got != (pin.as_secs(), u64::from(pin.subsec_micros())) {
            wrong.push(format!("pin held 3 ms: TIME {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 210 reads off the pin ({}):\n  {}",
        wrong.len(),
        monotonic_clock(&mut c),
        wrong.join("\n  ")
    );
}

/// Key expiry on Valkey follows fast re-pins to the millisecond (the
/// expiry check reads the command's time snapshot, taken from `ustime()`).
#[test]
fn valkey_pttl_follows_fast_pins() {
    let (_server, clock, mut c) = start_valkey();
    clock.pin(T);
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(5000).query(&mut c).unwrap();
    for step in (0..=5000).step_by(250) {
        clock.pin(T + step);
        assert_eq!(pttl(&mut c, "k"), 5000 - step as i64, "{step} ms after SET ({})", monotonic_clock(&mut c));
    }
    clock.pin(T + 5001);
    assert_eq!(pttl(&mut c, "k"), -2, "key still there after its expiry instant");
}

/// One seed of a scenario whose histories carry the server's µs (time-floored
/// tokens are `max(counter + 1, TIME in µs)`), run on Valkey in two rp-sim
/// processes: one digest, no violation. A Valkey with its cached TSC clock
/// failed the servers' start-up clock check here.
#[test]
fn valkey_a_seed_gives_the_same_digest_twice() {
    let valkey = valkey_server_binary().unwrap_or_else(|e| panic!("{e}"));
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_rp-sim"))
            .args(["replay", "--scenario", "lock-floored", "--seed", "3"])
            .env("REDIS_SERVER", &valkey)
            .output()
            .expect("run rp-sim");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "lock-floored seed 3 on Valkey:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.lines().last().unwrap_or_default().to_string()
    };
    let (a, b) = (run(), run());
    assert!(a.starts_with("digest: "), "no digest: {a}");
    assert_eq!(a, b, "two rp-sim processes on Valkey disagree on lock-floored seed 3");
}
