//! A node actor: one election node's life in a run. It campaigns (the
//! election's own `run()`), writes the resource while it believes it leads,
//! and observes itself every simulated millisecond, recording its role,
//! its views and its demotions, and injecting the faults that must hit
//! whoever leads (a stall, held or taken-away renewals, a `stop()`).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use core::time::Duration;
use rand::Rng;
use redis_primitives::election::Leadership;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::sleep;

use super::aimed::{take_lease_key, timed_out_span, Aimed, TIMED_OUT_HOLD_MS};
use super::markers::Marker;
use super::node::{build_node, check_subscriber, lease_key, Node};
use super::op::{ElectionOp, Published, Role};
use super::plan::{ElectionPlan, LeaderStall, SLOW_RENEWALS_MS};
use super::situations::{CAMPAIGN_HELD_AT_STOP, HAND_BACK_HELD, RENEWAL_TIMED_OUT};
use super::{ElectionVariant, ELECTION_NAME};
use crate::history::{FaultRecord, Millis};
use crate::outcome::SituationName;
use crate::world::Actor;

/// Freezes the leader `actor` for `duration` ms (a GC pause), recorded as
/// a fault and a marker.
fn stall_leader(actor: &Actor, markers: &Mutex<Vec<Marker>>, duration: u64, when: &str) {
    let process = actor.name().to_string();
    let moment = (!when.is_empty()).then(|| when.to_string());
    actor.history().fault(FaultRecord::LeaderStall { process, ms: duration, when: moment });
    if let Ok(mut m) = markers.lock() {
        m.push(Marker::Stall { node: actor.name().to_string(), at: actor.now(), duration });
    }
    let when = if when.is_empty() { String::new() } else { format!(" {when}") };
    actor.stall(duration, &format!("(the leader){when}"));
}

/// The body of one node actor.
pub(super) async fn node_actor(
    actor: Actor,
    variant: ElectionVariant,
    plan: ElectionPlan,
    aimed: Aimed,
    markers: Arc<Mutex<Vec<Marker>>>,
) -> crate::world::ActorResult {
    let node = Arc::new(start(&actor, variant, &plan).await?);
    let runner = {
        let node = Arc::clone(&node);
        let actor = actor.clone();
        actor.clone().spawn(async move { node.run(&actor).await })
    };
    if plan.slow_first_campaign {
        freeze_after_first_campaign(&actor, &plan).await;
    }
    // A stall the observer hands to the writer, to land between its check
    // and its write (`stall_mid_write`).
    let pending_stall: Rc<Cell<Option<u64>>> = Rc::new(Cell::new(None));
    let writer = spawn_writer(&actor, &node, plan.length_ms, &pending_stall, &markers);
    // The observer, which also injects the leader-targeted faults, and
    // reads a `subscribe()` receiver beside the accessors.
    let mut observer = Observer::new(&actor, &node, variant, &plan, &markers, &pending_stall, aimed);
    loop {
        let now = actor.now();
        let leading = observer.record_role();
        observer.record_view();
        observer.record_demotion();
        if now >= plan.length_ms {
            break;
        }
        observer.inject(now, leading);
        sleep(Duration::from_millis(1)).await;
    }
    observer.finish(writer, runner).await;
    Ok(())
}

/// Waits for the node's turn (node i starts at `i * stagger_ms`), builds it
/// and records its configuration; presets the fence counter when the plan
/// asks for epochs from a base.
async fn start(actor: &Actor, variant: ElectionVariant, plan: &ElectionPlan) -> turmoil::Result<Node> {
    let start_at = actor.index() as u64 * plan.stagger_ms;
    if start_at > 0 {
        sleep(Duration::from_millis(start_at)).await;
    }
    let node = build_node(variant, actor.connection(0), actor, (plan.lease_ms, plan.renew_ms, plan.campaign_ms))?;
    if let Node::Fenced { election, .. } = &node {
        actor.observe(ElectionOp::ElectionConfig {
            name: election.name().to_string(),
            lease_ms: election.lease_ttl().as_millis(),
            renew_ms: election.renew_interval().as_millis() as u64,
            campaign_ms: election.campaign_interval().as_millis() as u64,
            demotion: format!("{:?}", election.demotion()),
        });
    }
    if let (Some(base), Node::Fenced { election, .. }) = (plan.epoch_base, &node) {
        // Every node presets the counter if nobody has yet (NX), before its
        // own first campaign: no acquire can precede the preset.
        let key = election.lock().fence_key(ELECTION_NAME)?;
        let mut conn = actor.connection(0);
        let set: redis::RedisResult<Option<String>> =
            redis::cmd("SET").arg(&key).arg(base).arg("NX").query_async(&mut conn).await;
        if let Ok(Some(_)) = set {
            actor.note(format!("fence counter {key} preset to {base}"));
        }
    }
    Ok(node)
}

/// Every node freezes right after its first campaign is sent, for longer
/// than a lease: the one whose acquire won sees the reply only after its
/// own deadline, and must hand the key back rather than lead on a lease it
/// can no longer trust.
async fn freeze_after_first_campaign(actor: &Actor, plan: &ElectionPlan) {
    sleep(Duration::from_millis(1)).await;
    actor.stall(plan.lease_ms + 10 + 17 * actor.index() as u64, "right after its first campaign was sent");
    actor.reached(SituationName::new("campaign-answered-past-its-deadline"));
}

/// The writer: every 30–70 ms (seeded), if the node may act as leader, one
/// write carrying the epoch it checked; a stall handed over by the observer
/// lands between the check and the write.
fn spawn_writer(
    actor: &Actor,
    node: &Arc<Node>,
    end: Millis,
    pending_stall: &Rc<Cell<Option<u64>>>,
    markers: &Arc<Mutex<Vec<Marker>>>,
) -> JoinHandle<()> {
    let node = Arc::clone(node);
    let actor = actor.clone();
    let pending_stall = Rc::clone(pending_stall);
    let markers = Arc::clone(markers);
    actor.clone().spawn(async move {
        let mut rng = actor.rng_for("writes");
        while actor.now() < end {
            sleep(Duration::from_millis(rng.random_range(30..=70))).await;
            if actor.now() >= end {
                break;
            }
            let checked = node.may_write();
            if matches!(*node, Node::Fenced { .. }) {
                actor.observe(ElectionOp::EpochCheck { epoch: checked.flatten().map(|e| e.get()) });
            }
            let Some(believed) = checked else { continue };
            if let Some(duration) = pending_stall.take() {
                // Checked, then frozen before the write goes out: it
                // leaves with the epoch of a term that ended meanwhile.
                stall_leader(&actor, &markers, duration, "between its leadership check and its write");
                // The pause takes hold at this task's next await: yield
                // here, so the write is sent after the stall (with a
                // fresh response timeout) rather than queued before it.
                tokio::task::yield_now().await;
            }
            let value = format!("{}@{}", actor.name(), actor.now());
            node.write(&actor, value, believed).await;
        }
    })
}

/// The node's observer: what it last recorded, and which of the once-per-run
/// leader faults it has injected.
struct Observer<'a> {
    actor: &'a Actor,
    node: &'a Arc<Node>,
    variant: ElectionVariant,
    plan: &'a ElectionPlan,
    markers: &'a Arc<Mutex<Vec<Marker>>>,
    pending_stall: &'a Rc<Cell<Option<u64>>>,
    aimed: Aimed,
    subscriber: Option<watch::Receiver<Leadership>>,
    subscriber_seen: Option<Published>,
    last_view: Option<ElectionOp>,
    /// The last belief recorded: `(epoch, deadline ms)` while leading.
    last: Option<(Option<u64>, Option<u64>)>,
    last_demotion: Option<(u64, &'static str, SituationName)>,
    stalled: bool,
    slowed: bool,
    timed_out: bool,
    taken: bool,
    stopped: bool,
    /// The `stop()` running beside the loop, once called.
    stopping: Option<JoinHandle<()>>,
}

impl<'a> Observer<'a> {
    fn new(
        actor: &'a Actor,
        node: &'a Arc<Node>,
        variant: ElectionVariant,
        plan: &'a ElectionPlan,
        markers: &'a Arc<Mutex<Vec<Marker>>>,
        pending_stall: &'a Rc<Cell<Option<u64>>>,
        aimed: Aimed,
    ) -> Observer<'a> {
        let subscriber = match node.as_ref() {
            Node::Fenced { election, .. } => Some(election.subscribe()),
            Node::Naive(_) => None,
        };
        Observer {
            actor,
            node,
            variant,
            plan,
            markers,
            pending_stall,
            aimed,
            subscriber,
            subscriber_seen: None,
            last_view: None,
            last: None,
            last_demotion: None,
            stalled: false,
            slowed: false,
            timed_out: false,
            taken: false,
            stopped: false,
            stopping: None,
        }
    }

    /// Records a `Role` event when the node's belief changed; whether it
    /// leads now.
    fn record_role(&mut self) -> bool {
        let actor = self.actor;
        let belief = self.node.belief().map(|(epoch, deadline)| (epoch, deadline.map(|d| actor.millis_of(d))));
        match (self.last, belief) {
            (None, Some((epoch, deadline))) => {
                actor.observe(ElectionOp::Role { election: ELECTION_NAME.into(), role: Role::Leader, epoch, deadline });
            }
            (Some(old), Some((epoch, deadline))) if old != (epoch, deadline) => {
                // A new epoch, or the same one renewed (a later deadline).
                actor.observe(ElectionOp::Role { election: ELECTION_NAME.into(), role: Role::Leader, epoch, deadline });
            }
            (Some((epoch, _)), None) => {
                // After `stop()` was called the node stops believing when the
                // library demotes it, which this loop sees within 1 ms.
                let role = if self.stopped { Role::Resigned } else { Role::Follower };
                actor.observe(ElectionOp::Role { election: ELECTION_NAME.into(), role, epoch, deadline: None });
            }
            _ => {}
        }
        self.last = belief;
        belief.is_some()
    }

    /// Records the accessors' view when it changed, and checks the
    /// `subscribe()` receiver against it.
    fn record_view(&mut self) {
        let Some(view) = self.node.view(self.actor) else { return };
        if let (Some(rx), ElectionOp::ElectionView { published, .. }) = (self.subscriber.as_mut(), &view) {
            check_subscriber(self.actor, rx, &mut self.subscriber_seen, *published);
        }
        if self.last_view.as_ref() != Some(&view) {
            self.actor.observe(view.clone());
            self.last_view = Some(view);
        }
    }

    /// Reaches `demoted-<reason>` when the node's last demotion changed.
    fn record_demotion(&mut self) {
        let demotion = self.node.last_demotion();
        if demotion != self.last_demotion {
            if let Some((_, _, situation)) = demotion {
                self.actor.reached(situation);
            }
            self.last_demotion = demotion;
        }
    }

    /// Injects, in this order, each leader fault whose moment has come.
    fn inject(&mut self, now: Millis, leading: bool) {
        self.stall(now, leading);
        self.slow_renewals(now, leading);
        self.time_out_renewal(now, leading);
        self.take_lease_key(now, leading);
        self.stop(now, leading);
    }

    /// The plan's stall: the node leading at its instant freezes (at once,
    /// or handed to the writer to land between its check and its write).
    fn stall(&mut self, now: Millis, leading: bool) {
        let Some(LeaderStall { at, ms: duration }) = self.plan.stall else { return };
        if !self.stalled && now >= at {
            self.stalled = true;
            if leading && self.plan.stall_mid_write {
                self.pending_stall.set(Some(duration));
            } else if leading {
                stall_leader(self.actor, self.markers, duration, "");
            }
        }
    }

    /// The plan's slow renewals, once per run: the first leader to reach
    /// their instant has its next two lease-key requests held at the server.
    fn slow_renewals(&mut self, now: Millis, leading: bool) {
        let Some(at) = self.plan.slow_renewals else { return };
        let first = !self.slowed
            && now >= at
            && leading
            && self.markers.lock().map(|m| !m.iter().any(|x| matches!(x, Marker::Slowed { .. }))).unwrap_or(false);
        if first {
            self.slowed = true;
            if let Ok(mut m) = self.markers.lock() {
                m.push(Marker::Slowed { at: now, until: u64::MAX });
            }
            // Aimed at the renewals (the lease key), not the writes.
            for ms in SLOW_RENEWALS_MS {
                self.actor.delay_next_request_mentioning(0, ms, &lease_key(self.actor));
            }
            self.actor.reached(SituationName::new("renewals-held-at-the-server"));
        }
    }

    /// The aimed timed-out renewal, once per run: the node leading at its
    /// instant (or within a renewal interval of it; later would leave the
    /// quiet span it was placed in) has its next renewal held past the
    /// response timeout.
    fn time_out_renewal(&mut self, now: Millis, leading: bool) {
        let Some(at) = self.aimed.timed_out_at else { return };
        if self.timed_out || now < at {
            return;
        }
        self.timed_out = true;
        let first =
            self.markers.lock().map(|m| !m.iter().any(|x| matches!(x, Marker::TimedOut { .. }))).unwrap_or(false);
        if leading && first && now <= at + self.plan.renew_ms {
            let actor = self.actor;
            let until = now + timed_out_span(self.plan, actor.net().response_timeout.as_millis() as u64);
            if let Ok(mut m) = self.markers.lock() {
                m.push(Marker::TimedOut { node: actor.name().to_string(), at: now, until });
            }
            actor.delay_next_request_mentioning(0, TIMED_OUT_HOLD_MS, &lease_key(actor));
            actor.reached(RENEWAL_TIMED_OUT.name);
        }
    }

    /// The aimed taken-away key, once per run: the node leading at its
    /// instant (or within a renewal interval of it) finds its key
    /// overwritten with another owner.
    fn take_lease_key(&mut self, now: Millis, leading: bool) {
        let Some(at) = self.aimed.taken_at else { return };
        if !self.taken && now >= at {
            self.taken = true;
            if leading && now <= at + self.plan.renew_ms {
                let actor = self.actor;
                actor.spawn(take_lease_key(actor.clone(), self.plan.clone(), Arc::clone(self.markers)));
            }
        }
    }

    /// The plan's clean hand-over, once per run: the first leader to reach
    /// `stop_at` calls `stop()`, beside this loop.
    fn stop(&mut self, now: Millis, leading: bool) {
        let Some(at) = self.plan.stop_at else { return };
        let someone_stopped =
            self.markers.lock().map(|m| m.iter().any(|x| matches!(x, Marker::Stop { .. }))).unwrap_or(true);
        if self.stopped || now < at || !leading || someone_stopped {
            return;
        }
        self.stopped = true;
        let actor = self.actor;
        let held_ms = self.hand_back_held_ms();
        if held_ms > 0 {
            actor.delay_next_reply_mentioning(0, held_ms, &lease_key(actor));
            actor.reached(HAND_BACK_HELD.name);
        }
        if let Ok(mut m) = self.markers.lock() {
            m.push(Marker::Stop { node: actor.name().to_string(), at: now, held_ms });
        }
        // Stopping runs beside this loop, which keeps sampling the
        // node's belief: the reign ends when the library demotes
        // (before it deletes the key), not when `stop()` returns,
        // which is a round trip later and after the next leader may
        // already have been elected.
        let node = Arc::clone(self.node);
        let stopper = actor.clone();
        self.stopping = Some(actor.spawn(async move { node.stop(&stopper).await }));
    }

    /// On `election`, half the stops get the reply to their hand-back held
    /// at the server (the delete runs at once): the node must stop
    /// believing before it sends the release, not when the reply comes
    /// back, and a held reply leaves the followers (campaigning every
    /// 25 ms) time to win while a node that got the order wrong still says
    /// leader. How long, ms (0: not held).
    fn hand_back_held_ms(&self) -> u64 {
        if self.variant != ElectionVariant::Election {
            return 0;
        }
        let mut rng = self.actor.rng_for("hand-back-held");
        if rng.random_bool(0.5) {
            rng.random_range(30..=150)
        } else {
            0
        }
    }

    /// The end of the run: stops the node (unless its `stop()` already
    /// runs), waits for its tasks, and records what it says once stopped
    /// (judged: `Stopped`, no lease) and what its subscriber was told of it.
    async fn finish(mut self, writer: JoinHandle<()>, runner: JoinHandle<()>) {
        let (actor, node) = (self.actor, self.node);
        match self.stopping.take() {
            Some(task) => {
                let _ = task.await;
            }
            None => {
                if self.variant == ElectionVariant::Election && self.last.is_none() {
                    stop_mid_campaign(actor, self.plan).await;
                }
                node.stop(actor).await
            }
        }
        let _ = writer.await;
        let _ = runner.await;
        if let Some(view) = node.view(actor) {
            if let (Some(rx), ElectionOp::ElectionView { published, .. }) = (self.subscriber.as_mut(), &view) {
                check_subscriber(actor, rx, &mut self.subscriber_seen, *published);
            }
            actor.observe(view);
        }
    }
}

/// On `election`, half the followers end their run with a campaign in
/// flight when they call `stop()`: the reply to their next campaign is held
/// at the server (the `SET` runs at once) for longer than the wait before
/// `stop()`. The leader stopped when the run ended, so that campaign may
/// well win the free key. A node told to stop while its campaign is in
/// flight must hand a won lease back and never lead on it (the
/// `election-views` rule "no `on_elected` after `stop()`"); every other stop
/// in a run comes from a leader, so without this nothing reaches that path.
async fn stop_mid_campaign(actor: &Actor, plan: &ElectionPlan) {
    if !actor.rng_for("campaign-held-at-stop").random_bool(0.5) {
        return;
    }
    // Long enough for the leader's hand-back (sent when the run ended) to
    // have run at the server, so the held campaign can win.
    sleep(Duration::from_millis(END_SETTLE_MS)).await;
    // The next campaign is sent within one campaign interval; its reply is
    // held past the `stop()` below, which comes at least 20 ms after it.
    actor.delay_next_reply_mentioning(0, plan.campaign_ms + 40, &lease_key(actor));
    sleep(Duration::from_millis(plan.campaign_ms + 20)).await;
    actor.reached(CAMPAIGN_HELD_AT_STOP.name);
}

/// How long a follower waits after the run's end before it holds its next
/// campaign's reply (`stop_mid_campaign`), ms.
const END_SETTLE_MS: u64 = 10;
