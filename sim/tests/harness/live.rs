//! The live tier: the same world API in real time, the faults made for
//! real (`rp-sim live`).
//!
//! Each test builds a world on [`Servers::live`] and asserts what a fault
//! did to the data in the real server, or in which order things happened
//! around it: never how fast anything was. Times here are real, so the
//! assertions leave room on the side a loaded machine pushes them.

use std::sync::{Arc, Mutex};

use core::time::Duration;
use redis::AsyncCommands;
use redis_primitives_sim::{
    Direction, ExploreOptions, Fault, FaultKind, NetConfig, Schedule, Servers, Target, World, WorldConfig,
};

use crate::support::{log, sleep_until_ms, Log};

fn config(seed: u64) -> WorldConfig {
    WorldConfig::new(seed).latency(Duration::from_millis(1), Duration::from_millis(1))
}

/// One client: sets `k` to `before`, then, at 200 ms (inside a fault that
/// starts at 100 ms and lasts 400 ms), sets it to `during` with a short
/// timeout, then reads it back at 900 ms (after the fault). Returns what it
/// logged: the write's outcome and the value read.
fn write_through(kind: FaultKind) -> Vec<String> {
    let mut servers = Servers::live();
    let seen = Log::default();
    let mut world = World::new(&mut servers, config(1)).unwrap();
    let target = if matches!(kind, FaultKind::ServerPause) { Target::Node(0) } else { Target::Client(0) };
    world.nemesis(Schedule::of([Fault { at: 100, duration: 400, kind, target }]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let quick = NetConfig { response_timeout: Duration::from_millis(150), ..NetConfig::default() };
        let mut conn = actor.connection_with(0, quick);
        let _: () = conn.set("k", "before").await?;
        sleep_until_ms(&actor, 200).await;
        let r: redis::RedisResult<()> = conn.set("k", "during").await;
        log(&l, if r.is_err() { "write unanswered" } else { "write answered" });
        sleep_until_ms(&actor, 900).await;
        let v: String = actor.connection(0).get("k").await?;
        log(&l, v);
        Ok(())
    });
    let outcome = world.run().unwrap();
    assert!(outcome.history.events().iter().any(|e| e.process == "nemesis"), "the fault is in the history");
    let seen = seen.lock().unwrap().clone();
    seen
}

#[test]
fn a_partition_drops_the_request() {
    assert_eq!(write_through(FaultKind::Partition), ["write unanswered", "before"]);
}

#[test]
fn a_one_way_cut_towards_the_server_drops_the_request() {
    let kind = FaultKind::PartitionOneWay { direction: Direction::ToServer };
    assert_eq!(write_through(kind), ["write unanswered", "before"]);
}

#[test]
fn a_one_way_cut_towards_the_client_drops_only_the_reply() {
    let kind = FaultKind::PartitionOneWay { direction: Direction::ToClient };
    assert_eq!(write_through(kind), ["write unanswered", "during"]);
}

#[test]
fn a_hold_delivers_the_request_after_its_release() {
    // The request waits in the proxy and is written once the hold ends:
    // the caller has given up, the server still executes it.
    assert_eq!(write_through(FaultKind::Hold), ["write unanswered", "during"]);
}

#[test]
fn a_server_pause_is_a_stopped_process_that_runs_the_request_late() {
    assert_eq!(write_through(FaultKind::ServerPause), ["write unanswered", "during"]);
}

#[test]
fn a_restart_loses_what_the_server_held() {
    let mut servers = Servers::live();
    servers.ensure(1).unwrap();
    let before = servers.node(0).unwrap().server().pid();
    let seen = Log::default();
    let mut world = World::new(&mut servers, config(2)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 100,
        duration: 200,
        kind: FaultKind::ServerRestart,
        target: Target::Node(0),
    }]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        let _: () = conn.set("k", "before").await?;
        sleep_until_ms(&actor, 200).await;
        let down: redis::RedisResult<Option<String>> = conn.get("k").await;
        log(&l, if down.is_err() { "down" } else { "up" });
        sleep_until_ms(&actor, 600).await;
        let v: Option<String> = actor.connection(0).get("k").await?;
        log(&l, format!("{v:?}"));
        Ok(())
    });
    world.run().unwrap();
    assert_eq!(*seen.lock().unwrap(), ["down", "None"]);
    assert_ne!(servers.node(0).unwrap().server().pid(), before, "a restart is a new process");
}

#[test]
fn a_pause_that_outlasts_the_run_is_ended_before_the_run_returns() {
    let mut servers = Servers::live();
    let mut world = World::new(&mut servers, config(3)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 50,
        duration: 60_000,
        kind: FaultKind::ServerPause,
        target: Target::Node(0),
    }]));
    world.actor("client-0", |actor| async move {
        sleep_until_ms(&actor, 200).await;
        Ok(())
    });
    world.run().unwrap();
    // The server answers: it was continued, not left stopped for the next run.
    let mut direct = redis::Client::open(servers.node(0).unwrap().url()).unwrap().get_connection().unwrap();
    let pong: String = redis::cmd("PING").query(&mut direct).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_clock_step_moves_the_server_clock_and_the_run_starts_at_the_epoch() {
    let mut servers = Servers::live();
    let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let mut world = World::new(&mut servers, config(4)).unwrap();
    world.nemesis(Schedule::of([Fault {
        at: 100,
        duration: 200,
        kind: FaultKind::ClockStep { offset_ms: 10_000 },
        target: Target::Node(0),
    }]));
    let s = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        for t in [0u64, 200, 500] {
            sleep_until_ms(&actor, t).await;
            let sent = actor.now();
            let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
            let server = secs * 1000 + micros / 1000 - redis_primitives_sim::DEFAULT_EPOCH_UNIX_MS;
            s.lock().unwrap().push((sent, server));
        }
        Ok(())
    });
    world.run().unwrap();
    let seen = seen.lock().unwrap().clone();
    // Before and after the step the server reads the run's time (it runs
    // from the epoch, on the real clock); during it, ten seconds ahead.
    let (sent, server) = seen[0];
    assert!(server >= sent && server < sent + 1000, "{seen:?}");
    let (sent, server) = seen[1];
    assert!(server >= sent + 10_000 && server < sent + 11_000, "{seen:?}");
    let (sent, server) = seen[2];
    assert!(server >= sent && server < sent + 1000, "{seen:?}");
}

#[test]
fn a_broken_variant_is_caught_live() {
    // counter-loss restarts its server without persistence: the fence
    // counter is lost and tokens are handed out again. Live, the restart
    // is a killed process and a new one.
    let scenario = redis_primitives_sim::scenarios::find("counter-loss").unwrap();
    let mut servers = Servers::live();
    let ex = redis_primitives_sim::explore_with(scenario, &mut servers, ExploreOptions::new(0, 2)).unwrap();
    let invariant = redis_primitives_sim::Invariant::new("fencing-tokens-increase");
    assert!(ex.count_of(&invariant) > 0, "{:?}", ex.violating);
}
