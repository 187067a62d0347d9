//! The bridge: simulated clients talking to a real redis-server.
//!
//! Every assertion here is about simulated time, which is exact: the bridge
//! pins the server's clock to it before each command, so what Redis reports
//! (TIME, PTTL, expiry) is a function of the seed, not of the machine's load.

use std::sync::{Arc, Mutex};

use core::time::Duration;
use redis::AsyncCommands;
use redis_primitives_sim::{
    Actor, Fault, FaultKind, NetConfig, RestartMode, Schedule, Servers, Target, TimeoutRace, World, WorldConfig,
    DEFAULT_EPOCH_UNIX_MS,
};

use crate::support::{log, sleep_until_ms, Log};

fn config(seed: u64) -> WorldConfig {
    WorldConfig::new(seed).latency(Duration::from_millis(2), Duration::from_millis(2))
}

#[test]
fn a_simulated_client_talks_to_real_redis() {
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    {
        let mut world = World::new(&mut servers, config(1)).unwrap();
        let l = seen.clone();
        world.actor("client-0", move |actor| async move {
            let mut conn = actor.connection(0);
            let _: () = conn.set("greeting", "hello from the simulation").await?;
            let v: String = conn.get("greeting").await?;
            log(&l, v);
            let n: i64 = conn.incr("counter", 5).await?;
            log(&l, n.to_string());
            // A pipeline (MULTI/EXEC) goes through as several frames.
            let (a, b): (i64, i64) =
                redis::pipe().atomic().incr("counter", 1).incr("counter", 1).query_async(&mut conn).await?;
            log(&l, format!("{a},{b}"));
            Ok(())
        });
        let outcome = world.run().unwrap();
        println!("commands forwarded: {}, wall {:?}", outcome.commands, outcome.wall);
        assert!(outcome.commands >= 5);
    }
    assert_eq!(*seen.lock().unwrap(), vec!["hello from the simulation", "5", "6,7"]);
    // The data is in the real server, not in a model of it.
    let mut direct = redis::Client::open(servers.node(0).unwrap().url()).unwrap().get_connection().unwrap();
    let v: String = redis::cmd("GET").arg("greeting").query(&mut direct).unwrap();
    assert_eq!(v, "hello from the simulation");
}

#[test]
fn the_server_clock_is_pinned_to_simulated_time() {
    let mut servers = Servers::new();
    let seen: Arc<Mutex<Vec<(u64, u64, u64)>>> = Arc::default();
    let expiry: Log = Log::default();
    let mut world = World::new(&mut servers, config(2)).unwrap();
    let s = seen.clone();
    let e = expiry.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        for t in [0u64, 1234, 5000, 9999] {
            sleep_until_ms(&actor, t).await;
            let sent = actor.now();
            let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
            let received = actor.now();
            let server_ms = secs * 1000 + micros / 1000 - DEFAULT_EPOCH_UNIX_MS;
            s.lock().unwrap().push((sent, server_ms, received));
        }
        // TTLs run on simulated time: 10 simulated seconds take a few real
        // milliseconds here, and the key still expires on time.
        let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(1000).query_async(&mut conn).await?;
        let set_at = actor.now();
        tokio::time::sleep(Duration::from_millis(400)).await;
        let left: i64 = conn.pttl("k").await?;
        log(&e, format!("pttl {left} after {} ms", actor.now() - set_at));
        tokio::time::sleep(Duration::from_millis(700)).await;
        let gone: Option<String> = conn.get("k").await?;
        log(&e, format!("{gone:?}"));
        Ok(())
    });
    let outcome = world.run().unwrap();
    println!("10 simulated seconds in {:?} of wall time", outcome.wall);
    for &(sent, server, received) in seen.lock().unwrap().iter() {
        println!("sent {sent} ms, server TIME {server} ms, reply {received} ms");
        assert!(sent <= server && server <= received, "server time {server} outside [{sent}, {received}]");
    }
    let e = expiry.lock().unwrap();
    let left: i64 = e[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((590..=600).contains(&left), "{}", e[0]);
    assert_eq!(e[1], "None", "a PX 1000 key must be gone 1100 simulated ms later");
}

#[test]
fn a_server_pause_holds_requests_and_runs_them_late() {
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    let mut world = World::new(&mut servers, config(3)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 500,
        duration: 1000,
        kind: FaultKind::ServerPause,
        target: Target::Node(0),
    }]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        // A short timeout: the INCR sent during the pause times out...
        let mut quick = actor.connection(0);
        let _: () = quick.set("n", 0).await?;
        sleep_until_ms(&actor, 600).await;
        let r: redis::RedisResult<i64> = quick.incr("n", 1).await;
        log(&l, format!("incr at 600: timeout={}", r.as_ref().is_err_and(|e| e.is_timeout())));
        // ...a patient client's request is held, not lost: its reply comes
        // once the pause ends.
        let mut patient =
            actor.connection_with(0, NetConfig { response_timeout: Duration::from_secs(3), ..NetConfig::default() });
        let sent = actor.now();
        let v: i64 = patient.incr("n", 10).await?;
        log(&l, format!("patient incr sent {sent} answered at {} value {v}", actor.now()));
        Ok(())
    });
    world.run().unwrap();
    let seen = seen.lock().unwrap();
    println!("{seen:#?}");
    assert_eq!(seen[0], "incr at 600: timeout=true");
    let parts: Vec<&str> = seen[1].split_whitespace().collect();
    let answered: u64 = parts[6].parse().unwrap();
    let value: i64 = parts[8].parse().unwrap();
    assert!(answered >= 1500, "reply at {answered} ms, before the pause ended at 1500");
    // The timed-out INCR was not cancelled: it ran when the server resumed,
    // before the patient one. "Timed out" never means "did not happen".
    assert_eq!(value, 11);
}

#[test]
fn a_server_restart_loses_keys_and_scripts() {
    restart_loses_keys_and_scripts(RestartMode::Flush);
}

#[test]
fn a_real_process_restart_loses_keys_and_scripts() {
    restart_loses_keys_and_scripts(RestartMode::Process);
}

fn restart_loses_keys_and_scripts(mode: RestartMode) {
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    let pid_before = {
        servers.prepare(1).unwrap();
        servers.node(0).unwrap().server().pid()
    };
    let mut world = World::new(&mut servers, config(4).restart(mode)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 300,
        duration: 200,
        kind: FaultKind::ServerRestart,
        target: Target::Node(0),
    }]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        let _: () = conn.set("k", "v").await?;
        let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg("return 1").query_async(&mut conn).await?;
        sleep_until_ms(&actor, 400).await;
        let down: redis::RedisResult<Option<String>> = conn.get("k").await;
        log(&l, format!("during restart: error={}", down.is_err()));
        sleep_until_ms(&actor, 600).await;
        let k: Option<String> = conn.get("k").await?;
        let exists: Vec<i64> = redis::cmd("SCRIPT").arg("EXISTS").arg(&sha).query_async(&mut conn).await?;
        log(&l, format!("after restart: k={k:?} script={exists:?}"));
        Ok(())
    });
    let outcome = world.run().unwrap();
    println!("{}", outcome.history.timeline());
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], "during restart: error=true");
    assert_eq!(seen[1], "after restart: k=None script=[0]");
    let pid_after = servers.node(0).unwrap().server().pid();
    match mode {
        RestartMode::Flush => assert_eq!(pid_before, pid_after),
        RestartMode::Process => assert_ne!(pid_before, pid_after, "the process was not restarted"),
    }
}

/// A client frozen while its reply is in flight: the reply waits in the
/// socket until the resume. Whether it or the (overdue) response timeout
/// wins is the `TimeoutRace` setting, not an accident.
fn paused_client(race: TimeoutRace) -> (String, u64) {
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    let net = NetConfig { response_timeout: Duration::from_millis(250), race, ..NetConfig::default() };
    let mut world = World::new(&mut servers, config(5).net(net)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 501,
        duration: 1000,
        kind: FaultKind::ClientPause,
        target: Target::Client(0),
    }]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        conn.connect().await?;
        sleep_until_ms(&actor, 500).await;
        let r: redis::RedisResult<i64> = conn.incr("n", 1).await;
        let outcome = match r {
            Ok(v) => format!("ok {v}"),
            Err(e) if e.is_timeout() => "timeout".to_string(),
            Err(e) => format!("error {e}"),
        };
        log(&l, format!("{outcome} {}", actor.now()));
        Ok(())
    });
    // An unpaused client keeps working meanwhile.
    let l2 = seen.clone();
    world.actor("client-1", move |actor| async move {
        let mut conn = actor.connection(0);
        sleep_until_ms(&actor, 1000).await;
        let _: i64 = conn.incr("other", 1).await?;
        log(&l2, format!("other {}", actor.now()));
        Ok(())
    });
    world.run().unwrap();
    let seen = seen.lock().unwrap();
    let mine = seen.iter().find(|s| !s.starts_with("other")).unwrap().clone();
    let other = seen.iter().find(|s| s.starts_with("other")).unwrap();
    let other_at: u64 = other.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(other_at < 1100, "the unpaused client was held up: {other}");
    let (what, at) = mine.rsplit_once(' ').unwrap();
    (what.to_string(), at.parse().unwrap())
}

#[test]
fn a_client_pause_freezes_the_actor_and_the_race_is_explicit() {
    let (reply_first, at1) = paused_client(TimeoutRace::ReplyFirst);
    let (timeout_first, at2) = paused_client(TimeoutRace::TimeoutFirst);
    println!("ReplyFirst: {reply_first} at {at1} ms; TimeoutFirst: {timeout_first} at {at2} ms");
    // Frozen from 501 to 1501: nothing completes in between.
    assert!(at1 >= 1501 && at2 >= 1501, "{at1} {at2}");
    assert_eq!(reply_first, "ok 1");
    assert_eq!(timeout_first, "timeout");
}

#[test]
fn partitions_time_out_and_the_connection_recovers_after_repair() {
    use redis_primitives_sim::Direction;
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    let mut world = World::new(&mut servers, config(6)).unwrap();
    world.nemesis(Schedule::of([
        Fault {
            at: 200,
            duration: 300,
            kind: FaultKind::PartitionOneWay { direction: Direction::ToClient },
            target: Target::Client(0),
        },
        Fault { at: 1000, duration: 300, kind: FaultKind::Partition, target: Target::Client(0) },
    ]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        for t in [250u64, 600, 1050, 1400] {
            sleep_until_ms(&actor, t).await;
            let r: redis::RedisResult<i64> = conn.incr("n", 1).await;
            log(
                &l,
                match r {
                    Ok(v) => format!("{t}: {v}"),
                    Err(e) if e.is_timeout() => format!("{t}: timeout"),
                    Err(e) => format!("{t}: error {e}"),
                },
            );
        }
        let stats = conn.stats();
        log(&l, format!("connects {}", stats.connects.load(std::sync::atomic::Ordering::Relaxed)));
        Ok(())
    });
    let outcome = world.run().unwrap();
    println!("{}", outcome.history.timeline());
    let seen = seen.lock().unwrap();
    println!("{seen:#?}");
    // Replies dropped: the INCR ran, the client cannot know.
    assert_eq!(seen[0], "250: timeout");
    // A new connection after the repair; the count shows the first one ran.
    assert_eq!(seen[1], "600: 2");
    // Requests dropped: this one never ran.
    assert_eq!(seen[2], "1050: timeout");
    assert_eq!(seen[3], "1400: 3");
    assert_eq!(seen[4], "connects 3");
}

/// Per process: its name, its seed, when it sent, when it heard back.
type Heard = Arc<Mutex<Vec<(String, u64, u64, u64)>>>;

#[test]
fn aliases_share_a_host_and_keep_their_own_names() {
    let mut servers = Servers::new();
    let seen: Heard = Arc::default();
    let mut world = World::new(&mut servers, config(7)).unwrap();
    let s = seen.clone();
    world.actor("side", move |actor| {
        let one = |alias: Actor, hold: Option<u64>, s: Heard| async move {
            let mut conn = alias.connection(0);
            let key = format!("key-of-{}", alias.name());
            if let Some(ms) = hold {
                alias.delay_next_request_mentioning(0, ms, &key);
            }
            let sent = alias.now();
            let _: () = conn.set(&key, 1).await?;
            s.lock().unwrap().push((alias.name().to_string(), alias.seed(), sent, alias.now()));
            Ok(())
        };
        redis_primitives_sim::together(vec![
            Box::pin(one(actor.alias("a"), None, s.clone())),
            Box::pin(one(actor.alias("b"), Some(50), s.clone())),
        ])
    });
    let outcome = world.run().unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    // Each has the seed an actor of its own name would have had.
    assert_eq!(seen[0].1, redis_primitives_sim::derive_seed(7, "a"));
    assert_eq!(seen[1].1, redis_primitives_sim::derive_seed(7, "b"));
    // Only b's request was held: the bridge knew whose it was (links are
    // 2 ms each way here, so both connect and ask in the same time but for
    // the hold).
    assert_eq!(seen[0].3 - seen[0].2, 6, "{seen:?}");
    assert_eq!(seen[1].3 - seen[1].2, 6 + 50, "{seen:?}");
    // The execution log names the process, not the host.
    let names: Vec<(&str, Option<&str>)> = outcome.executions[0]
        .iter()
        .map(|x| (&*x.client, x.key.as_deref()))
        .filter(|(_, k)| k.is_some_and(|k| k.starts_with("key-of-")))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    for (client, key) in names {
        assert_eq!(key, Some(format!("key-of-{client}").as_str()));
    }
    // And the history too.
    let processes: Vec<String> = outcome.history.events().iter().map(|e| e.process.clone()).collect();
    assert!(!processes.iter().any(|p| p == "side"), "{processes:?}");
}

/// A fault aimed at an actor by name reaches that actor, whatever its
/// registration order; a name no actor has is a typed error naming the
/// registered ones.
#[test]
fn a_fault_aimed_by_name_reaches_that_actor() {
    use redis_primitives_sim::SimError;
    let mut servers = Servers::new();
    let seen: Log = Log::default();
    let mut world = World::new(&mut servers, config(7)).unwrap();
    for name in ["alice", "bob"] {
        let l = seen.clone();
        world.actor(name, move |actor| async move {
            let mut conn = actor.connection(0);
            sleep_until_ms(&actor, 500).await;
            let _: i64 = conn.incr(actor.name(), 1).await?;
            log(&l, format!("{} {}", actor.name(), actor.now()));
            Ok(())
        });
    }
    let bob = world.client("bob").unwrap();
    assert_eq!(bob, Target::Client(1));
    match world.client("carol") {
        Err(SimError::UnknownActor { name, known }) => {
            assert_eq!(name, "carol");
            assert_eq!(known, ["alice", "bob"]);
        }
        other => panic!("an unknown actor: {other:?}"),
    }
    world.nemesis(Schedule::of([Fault { at: 400, duration: 600, kind: FaultKind::ClientPause, target: bob }]));
    world.run().unwrap();
    let seen = seen.lock().unwrap();
    let at = |who: &str| -> u64 {
        let line = seen.iter().find(|s| s.starts_with(who)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(at("alice") < 1000, "alice was not paused: {seen:?}");
    assert!(at("bob") >= 1000, "bob was paused until 1000 ms: {seen:?}");
}

/// Code under test that opens its own connection (a client built from a
/// URL, as a URL-only crate does) is stopped with the rule it broke, not
/// with tokio's panic about a runtime the user does not own.
#[test]
fn a_connection_of_its_own_is_a_broken_rule() {
    use redis_primitives_sim::{Rule, SimError};
    let mut servers = Servers::new();
    let mut world = World::new(&mut servers, config(8)).unwrap();
    world.actor("well-behaved", |actor| async move {
        let mut conn = actor.connection(0);
        let _: i64 = conn.incr("n", 1).await?;
        Ok(())
    });
    world.actor("url-only", |_actor| async move {
        let client = redis::Client::open("redis://127.0.0.1:6379/")?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let _: i64 = conn.incr("n", 1).await?;
        Ok(())
    });
    match world.run() {
        Err(SimError::RuleBroken { actor, rule, .. }) => {
            assert_eq!(actor, "url-only");
            assert_eq!(rule, Rule::OwnSocket);
        }
        other => panic!("a socket of its own must be refused: {other:?}"),
    }
}
