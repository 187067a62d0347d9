//! How a world runs in the live tier (`crate::live` says what that is and
//! what differs): the same actors on a real tokio runtime, each node behind
//! its [`LiveBridge`], and the schedule's faults made for real on its
//! wall-clock timetable.
//!
//! **The servers are worked on another thread.** Starting a server, or
//! promoting a replica and resyncing the old primary, takes tens to
//! hundreds of milliseconds of blocking work. Done on the runtime's own
//! thread it would freeze every actor meanwhile: a pause no real client
//! sees. So for the length of the run the pool is lent to an operator
//! thread, and the runtime awaits each server fault's completion while the
//! actors keep running. A server the operator (re)started is tied to that
//! thread (`PR_SET_PDEATHSIG`), so it ends with the run; the next world's
//! reset starts it again.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use core::time::Duration;
use tokio::sync::oneshot;

use super::{ActorEntry, ActorResult, RunOutcome, World, WorldConfig};
use crate::bridge::BridgeNode;
use crate::error::SimError;
use crate::history::{History, Millis};
use crate::nemesis::{Action, Direction, FaultKind, Schedule, Target};
use crate::proxy::{LinkState, LiveBridge};
use crate::servers::Servers;

/// An actor's future, as registered.
pub(super) type ActorFuture = Pin<Box<dyn Future<Output = ActorResult>>>;

/// A live world's parts until it runs.
#[derive(Default)]
pub(super) struct LiveEngine {
    /// Each actor's name and future, in registration order.
    pub(super) actors: Vec<(String, ActorFuture)>,
    /// Each node's proxy.
    pub(super) bridges: Vec<Arc<LiveBridge>>,
}

/// What a run's jitter adds to the lateness it measured: tokio's timers
/// have a resolution of one millisecond (a sleep ends on the tick after its
/// deadline), and a check compares two instants, each read to it.
const TIMER_RESOLUTION: Duration = Duration::from_millis(2);

/// Real Unix time in ms: where a live run's clocks are offset from. The
/// live tier's one read of the wall clock (the simulation never reads it).
fn unix_now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Work on the servers, done on the operator thread.
type Job = Box<dyn FnOnce(&mut Servers) -> Result<(), SimError> + Send>;

/// The runtime's handle on the operator thread (module docs).
struct Operator {
    jobs: mpsc::Sender<(Job, oneshot::Sender<Result<(), SimError>>)>,
    seed: u64,
}

impl Operator {
    /// Runs `job` on the servers; the runtime goes on meanwhile.
    async fn run(
        &self,
        job: impl FnOnce(&mut Servers) -> Result<(), SimError> + Send + 'static,
    ) -> Result<(), SimError> {
        let (done, answer) = oneshot::channel();
        let gone = || SimError::Run { seed: self.seed, message: "the server operator thread is gone".into() };
        self.jobs.send((Box::new(job), done)).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

/// Node `n` of `servers`, or why not.
fn node(servers: &mut Servers, n: u32) -> Result<&mut crate::servers::ServerNode, SimError> {
    servers.node_mut(n as usize).ok_or_else(|| SimError::InvalidSchedule(format!("server {n} missing from the pool")))
}

/// The world's parts a live run reads while its servers are lent out.
struct Stage<'w> {
    config: &'w WorldConfig,
    actors: &'w [ActorEntry],
    bridges: &'w [Arc<BridgeNode>],
    node_names: &'w [String],
    history: &'w History,
    schedule: &'w Schedule,
}

impl World<'_> {
    /// [`World::run`] of a live world: runs until every actor has returned
    /// (or the world's time limit passes), applying the schedule on the
    /// way; every server a fault stopped is continued before the end.
    pub(super) fn run_live(self, engine: LiveEngine) -> Result<RunOutcome, SimError> {
        let seed = self.config.seed;
        let failed = |message: String| SimError::Run { seed, message };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| failed(format!("cannot start the live runtime: {e}")))?;
        let started = std::time::Instant::now();
        // The run's clock and the servers' offset are read back to back: a
        // server then reads the epoch plus the run's time (to the clock
        // library's millisecond), as the execution log reckons it.
        let run = crate::live::Run::start(self.config.epoch_unix_ms);
        let base_offset_ms = self.config.epoch_unix_ms as i64 - unix_now_ms();
        for i in 0..engine.bridges.len() {
            if let Some(node) = self.servers.node(i) {
                node.clock().offset(base_offset_ms);
            }
        }
        let nodes = self.bridges.len();
        let stage = Stage {
            config: &self.config,
            actors: &self.actors,
            bridges: &self.bridges,
            node_names: &self.node_names,
            history: &self.history,
            schedule: &self.schedule,
        };
        let servers: &mut Servers = self.servers;
        let (driven, elapsed, keys) = std::thread::scope(|scope| {
            let (jobs, queue) = mpsc::channel::<(Job, oneshot::Sender<Result<(), SimError>>)>();
            let history = stage.history.clone();
            let operator_thread = scope.spawn(move || {
                for (job, done) in queue {
                    let _ = done.send(job(servers));
                }
                // The run is over: every stopped server continues (a
                // running one ignores SIGCONT), then the keys are read.
                for i in 0..nodes {
                    if let Some(node) = servers.node(i) {
                        let _ = node.thaw();
                    }
                }
                super::keys_at_end(servers, &history, nodes)
            });
            let operator = Operator { jobs, seed };
            let local = tokio::task::LocalSet::new();
            let driven = local.block_on(&runtime, drive(&stage, engine, &operator, &run, base_offset_ms));
            let elapsed = crate::live::elapsed().unwrap_or_default();
            drop(run);
            // The actors' tasks and the proxies end with the runtime.
            drop(local);
            drop(operator);
            let keys = operator_thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (driven, elapsed, keys)
        });
        drop(runtime);
        let lateness = driven?;
        Ok(self.finish(started.elapsed(), elapsed, keys, Some(lateness + TIMER_RESOLUTION)))
    }
}

/// Runs the actors and the schedule; returns how late, at most, the loop's
/// own one-millisecond sleeps woke: the run's timer lateness, which every
/// timer of the actors on this thread shared.
async fn drive(
    stage: &Stage<'_>,
    mut engine: LiveEngine,
    operator: &Operator,
    run: &crate::live::Run,
    base_offset_ms: i64,
) -> Result<Duration, SimError> {
    let seed = stage.config.seed;
    let failed = |message: String| SimError::Run { seed, message };
    for (i, bridge) in engine.bridges.iter().enumerate() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| failed(format!("cannot listen for node {i}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| failed(format!("node {i}'s listener: {e}")))?;
        run.listen(&stage.node_names[i], addr);
        tokio::task::spawn_local(Arc::clone(bridge).serve(listener));
    }
    let handles: Vec<_> = engine.actors.drain(..).map(|(name, fut)| (name, tokio::task::spawn_local(fut))).collect();
    let actions = stage.schedule.actions();
    let mut next = 0;
    let mut lateness = Duration::ZERO;
    loop {
        let now = crate::live::elapsed().unwrap_or_default();
        let now_ms = now.as_millis() as Millis;
        while let Some(action) = actions.get(next).filter(|a| a.time <= now_ms) {
            apply(stage, &engine, operator, action, base_offset_ms).await?;
            let at = crate::live::elapsed().unwrap_or_default().as_millis() as Millis;
            super::record_step(stage.history, stage.actors, stage.node_names, action, at);
            next += 1;
        }
        if handles.iter().all(|(_, h)| h.is_finished()) {
            break;
        }
        if now > stage.config.limit {
            return Err(failed(format!(
                "the run passed its limit of {:?} with actors still running",
                stage.config.limit
            )));
        }
        let asked = tokio::time::Instant::now() + Duration::from_millis(1);
        tokio::time::sleep_until(asked).await;
        lateness = lateness.max(tokio::time::Instant::now().saturating_duration_since(asked));
    }
    for (name, handle) in handles {
        match handle.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(failed(format!("actor {name} failed: {e}"))),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => return Err(failed(format!("actor {name} did not finish: {e}"))),
        }
    }
    Ok(lateness)
}

/// One step of the schedule, made for real (`crate::live`'s table).
async fn apply(
    stage: &Stage<'_>,
    engine: &LiveEngine,
    operator: &Operator,
    action: &Action,
    base_offset_ms: i64,
) -> Result<(), SimError> {
    let fault = action.fault;
    let undo = action.undo;
    let links = |change: &dyn Fn(&mut LinkState)| set_links(stage, engine, fault.target, change);
    let n = match fault.target {
        Target::Node(n) => n,
        Target::Client(_) | Target::Link { .. } => u32::MAX,
    };
    match fault.kind {
        FaultKind::Partition => links(&|l| {
            l.to_server_cut = !undo;
            l.to_client_cut = !undo;
        }),
        FaultKind::PartitionOneWay { direction: Direction::ToServer } => links(&|l| l.to_server_cut = !undo),
        FaultKind::PartitionOneWay { direction: Direction::ToClient } => links(&|l| l.to_client_cut = !undo),
        FaultKind::Hold => links(&|l| l.held = !undo),
        FaultKind::Latency { ms } => links(&|l| l.latency = (!undo).then(|| Duration::from_millis(ms))),
        FaultKind::ClientPause => {
            if let Target::Client(c) = fault.target {
                let pause = &stage.actors[c as usize].pause;
                if undo {
                    pause.resume();
                } else {
                    pause.pause_until(Duration::from_millis(fault.end()));
                }
            }
        }
        FaultKind::ServerPause if n != u32::MAX => {
            operator
                .run(move |s| {
                    let node = node(s, n)?;
                    let signalled = if undo { node.thaw() } else { node.freeze() };
                    signalled.map_err(|e| SimError::InvalidSchedule(format!("server pause of node {n}: {e}")))
                })
                .await?;
        }
        FaultKind::ServerRestart if n != u32::MAX => {
            let proxy = &engine.bridges[n as usize];
            if undo {
                operator.run(move |s| Ok(node(s, n)?.restart()?)).await?;
                proxy.bounce();
            } else {
                proxy.crash();
                operator
                    .run(move |s| {
                        node(s, n)?.stop();
                        Ok(())
                    })
                    .await?;
            }
        }
        FaultKind::ClockStep { offset_ms } if n != u32::MAX => {
            let step = if undo { 0 } else { offset_ms };
            if undo {
                stage.bridges[n as usize].unstep_clock();
            } else {
                stage.bridges[n as usize].step_clock(offset_ms);
            }
            operator
                .run(move |s| {
                    node(s, n)?.clock().offset(base_offset_ms + step);
                    Ok(())
                })
                .await?;
        }
        FaultKind::CutReplication if n != u32::MAX => {
            operator
                .run(move |s| {
                    let node = node(s, n)?;
                    if undo {
                        node.restore_replication()?;
                    } else {
                        node.cut_replication()?;
                    }
                    Ok(())
                })
                .await?;
        }
        FaultKind::Failover if n != u32::MAX => {
            let proxy = &engine.bridges[n as usize];
            if undo {
                let (addr_tx, addr_rx) = std::sync::mpsc::channel();
                operator
                    .run(move |s| {
                        let node = node(s, n)?;
                        node.promote()?;
                        let _ = addr_tx.send(node.addr());
                        Ok(())
                    })
                    .await?;
                if let Ok(addr) = addr_rx.try_recv() {
                    stage.bridges[n as usize].repoint(addr);
                }
                proxy.bounce();
            } else {
                proxy.crash();
                operator
                    .run(move |s| {
                        node(s, n)?.fail_primary();
                        Ok(())
                    })
                    .await?;
            }
        }
        // A server fault aimed at no node: the schedule's validation
        // refuses it before the run.
        FaultKind::ServerPause
        | FaultKind::ServerRestart
        | FaultKind::ClockStep { .. }
        | FaultKind::CutReplication
        | FaultKind::Failover => {}
    }
    Ok(())
}

/// Changes the links a network fault on `target` touches.
fn set_links(stage: &Stage<'_>, engine: &LiveEngine, target: Target, change: &dyn Fn(&mut LinkState)) {
    let (client, nodes) = match target {
        Target::Client(c) => (c, (0..engine.bridges.len()).collect::<Vec<_>>()),
        Target::Link { client, node } => (client, vec![node as usize]),
        Target::Node(_) => return,
    };
    let host = &stage.actors[client as usize].name;
    for n in nodes {
        if let Some(bridge) = engine.bridges.get(n) {
            bridge.set_link(host, change);
        }
    }
}
