//! The election probe: the term endings the workload reaches too rarely
//! to judge, staged once per run on elections of the reader's own.
//!
//! The workload's nodes end terms all the time, but the endings whose
//! mistakes stay silent need a renewal or a campaign whose reply is late or
//! lost at the right moment: a leader whose renewal ran at the server but
//! whose reply came after its deadline, a leader whose renewal's reply never
//! came, a follower whose campaign's reply never came. Each leaves the key
//! alive at the server while the node has stopped leading (or never
//! started), and what the node does next is what decides how long everyone
//! else waits: a node that does not hand the lease back makes the next
//! leader wait out a whole TTL; one that leads on until a late reply comes
//! leads past the deadline it promised to stop at; one that gives up after
//! one lost campaign reply never leads again. In the workload these show up
//! as slower failovers at most, in a few runs of a hundred.
//!
//! So the reader (idle until its final read) runs one single-node election
//! per case, all nine at once, each on a name of its own (self-fencing, the
//! library's default, whatever the scenario's nodes use), with the request
//! or reply it aims at held at the server, and records what it reads back
//! as an [`Op::Configured`](crate::history::Op::Configured) read-back,
//! judged by `configuration`:
//!
//! 1. **deadline**: once a first renewal was confirmed (`leader_lease()`
//!    must show it), the next renewal's reply is held past the lease's
//!    local deadline, on a connection whose response timeout outlasts the
//!    hold. Just past the deadline the node must have published its
//!    demotion (the renewal races the deadline; demote, then hand back),
//!    and once the reply came the lease must be gone from the server
//!    (handed back).
//! 2. **error**: a renewal's reply held past the response timeout. The
//!    renewal errs; the node must hand the lease back (the extend ran, so
//!    the key would otherwise live a whole TTL more).
//! 3. **lost campaign**: the first campaign's reply held past the response
//!    timeout. The campaign errs (it won at the server); `run()` must
//!    campaign on and lead once that key has expired.
//! 4. **late campaign**: the first campaign's reply held past the lease's
//!    deadline (no timeout). The node must never lead on that lease.
//! 5. **stop**: a leader's `stop()` with its hand-back's reply held: the
//!    node must stop saying leader before the key goes, not after.
//! 6. **stop mid-campaign**: `stop()` while the first campaign is in
//!    flight (its reply held): the won lease is handed back, never led on.
//!
//! 7. **refused renewal**: the leader's key overwritten with another owner
//!    (an operator's `SET`, a peer that ignored the election): the next
//!    renewal is refused, and the node must be a follower a renewal
//!    interval and a round trip later, its term ended for `LeaseLost`.
//! 8. **renewed expiry**: a round trip after the first renewal, the
//!    leader's key still expires within a lease (a renewal that rewrote it
//!    without a TTL would hold the name for ever once the leader died).
//! 9. **epoch at the deadline**: `epoch()` read a millisecond before the
//!    lease's local deadline and exactly at it, with the node's `run()` not
//!    polled in between (its own deadline timer not yet served, as on a
//!    runtime where the reader's thread gets there first): `Some` before,
//!    `None` at the deadline. The workload's views, read every millisecond,
//!    come after the run loop has demoted at that instant, so they cannot
//!    tell `>=` from `>`.
//!
//! A case that met trouble of its own (not elected in time, a failed read)
//! gives no verdict. Every read-back depends on timing, so the probe runs
//! only when no fault of the schedule that can reach the reader (a node's
//! fault, or one aimed at the reader) overlaps its span.

use core::time::Duration;
use std::sync::{Arc, Mutex};

use redis_primitives::election::{DemotionReason, Election, ElectionBuilder, LeaderLease};
use redis_primitives::OwnerSource;
use tokio::time::sleep;

use crate::history::Millis;
use crate::net::{NetConfig, SimConnection};
use crate::world::{Actor, ActorResult};

/// The probe's elections' lease, renewal and campaign intervals (the
/// workload's, as in the reference).
const LEASE_MS: u64 = 400;
const RENEW_MS: u64 = 100;
const CAMPAIGN_MS: u64 = 25;
/// How long the deadline case holds a renewal's reply: from a renewal
/// sent [`RENEW_MS`] into the lease, past the lease's deadline.
const PAST_DEADLINE_HOLD_MS: u64 = 330;
/// When the deadline case reads the published role, after the renewed
/// lease was sent: past its deadline, before the held reply can arrive.
const ROLE_READ_AFTER_MS: u64 = LEASE_MS + 15;
/// When the deadline case reads the name, after the renewed lease was
/// sent: once the hand-back has run (at the latest right behind the held
/// reply), and before the key the held renewal extended expires (a
/// renewal's `LEASE_MS` from when it ran, [`RENEW_MS`] in).
const NAME_READ_AFTER_MS: u64 = RENEW_MS + PAST_DEADLINE_HOLD_MS + 40;
/// How long the stop cases hold a reply, and when the stop case reads the
/// role while its hand-back is held.
const STOP_HOLD_MS: u64 = 100;
const STOP_READ_AFTER_MS: u64 = 50;
/// The probe's whole span (all cases run at once), checked against the
/// faults, ms.
const SPAN_MS: u64 = 1_100;
/// How long a case waits for its node to lead before it gives up.
const ELECTED_WITHIN_MS: u64 = 200;

/// Runs the cases (see the module docs) on node `node`, unless one of
/// `faults` (the spans of the faults that can reach this actor) overlaps
/// the probe's span.
pub(crate) async fn probe(actor: &Actor, node: usize, faults: &[(Millis, Millis)]) -> ActorResult {
    let from = actor.now();
    if faults.iter().any(|&(a, b)| a <= from + SPAN_MS && b + 10 >= from) {
        return Ok(());
    }
    let (a, b, c, d, e, f, g, h, i) = tokio::join!(
        deadline(actor, node),
        renewal_error(actor, node),
        lost_campaign(actor, node),
        late_campaign(actor, node),
        stop_with_hand_back_held(actor, node),
        stop_mid_campaign(actor, node),
        refused_renewal(actor, node),
        renewed_expiry(actor, node),
        epoch_at_deadline(actor, node),
    );
    a.and(b).and(c).and(d).and(e).and(f).and(g).and(h).and(i)
}

/// Case 1: a renewal's reply held past the deadline.
async fn deadline(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-deadline";
    // The hold must not time the renewal out: this case is about the
    // deadline, not an error.
    let net = NetConfig { response_timeout: Duration::from_millis(4 * LEASE_MS), ..actor.net() };
    let probe = Node::start(actor, actor.connection_with(node, net), NAME)?;
    let Some((first, epoch)) = probe.elected(actor).await else {
        probe.end().await;
        return Ok(());
    };
    // The first renewal is sent `RENEW_MS` after the acquire was confirmed
    // and confirmed a round trip later: the published lease moves with it.
    // Two slow round trips can take it past any fixed margin, so wait for
    // the move, but no longer than until just before the second renewal
    // (the one whose reply is held below) could be sent.
    sleep_until(actor, first + RENEW_MS).await;
    let renewed = loop {
        let renewed = probe.election.leader_lease().map_or(first, |l| actor.millis_of(l.sent_at));
        if renewed > first || actor.now() >= first + 2 * RENEW_MS - 10 {
            break renewed;
        }
        sleep(Duration::from_millis(1)).await;
    };
    actor.delay_next_reply_mentioning(node, PAST_DEADLINE_HOLD_MS, &key(actor, NAME));
    sleep_until(actor, renewed + ROLE_READ_AFTER_MS).await;
    let role = role(probe.election.leadership().is_leader());
    sleep_until(actor, renewed + NAME_READ_AFTER_MS).await;
    let lease = old_lease(actor, node, NAME, epoch).await;
    probe.end().await;
    let moved = if renewed > first { "moved to the renewal's send" } else { "still the acquire's" };
    if let Some(lease) = lease {
        actor.configured(
            "Election whose renewal's reply came after the lease's deadline",
            &[
                ("leader_lease() after a confirmed renewal", moved.into(), "moved to the renewal's send".into()),
                ("published role just past the deadline", role, "follower".into()),
                ("the lease once the reply came", lease, "handed back".into()),
            ],
        );
    }
    Ok(())
}

/// Case 2: a renewal's reply held past the response timeout.
async fn renewal_error(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-error";
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    let Some((sent, epoch)) = probe.elected(actor).await else {
        probe.end().await;
        return Ok(());
    };
    let timeout = actor.net().response_timeout.as_millis() as u64;
    actor.delay_next_reply_mentioning(node, timeout + 10, &key(actor, NAME));
    // The renewal is sent `RENEW_MS` in and errs a response timeout later;
    // the hand-back follows on a new connection.
    sleep_until(actor, sent + RENEW_MS + timeout + 60).await;
    let lease = old_lease(actor, node, NAME, epoch).await;
    probe.end().await;
    if let Some(lease) = lease {
        actor.configured(
            "Election whose renewal's reply was lost (the renewal ran)",
            &[("the lease afterwards", lease, "handed back".into())],
        );
    }
    Ok(())
}

/// Case 3: the first campaign's reply held past the response timeout.
async fn lost_campaign(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-campaign";
    let timeout = actor.net().response_timeout.as_millis() as u64;
    actor.delay_next_reply_mentioning(node, timeout + 10, &key(actor, NAME));
    let started = actor.now();
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    // The lost campaign's key expires `LEASE_MS` after it ran; the next
    // campaigns win it within a campaign interval or two.
    sleep_until(actor, started + LEASE_MS + 6 * CAMPAIGN_MS).await;
    let campaigning = if probe.run.is_finished() { "returned" } else { "campaigning" };
    let leading = if probe.election.is_leader() { "leader" } else { "not leader" };
    probe.end().await;
    actor.configured(
        "Election whose first campaign's reply was lost (the campaign won at the server)",
        &[
            ("run() afterwards", campaigning.into(), "campaigning".into()),
            ("role once the lost campaign's key expired", leading.into(), "leader".into()),
        ],
    );
    Ok(())
}

/// Case 4: the first campaign's reply held past the lease's deadline.
async fn late_campaign(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-late";
    let Some(before) = counter(actor, node, NAME).await else { return Ok(()) };
    let net = NetConfig { response_timeout: Duration::from_millis(4 * LEASE_MS), ..actor.net() };
    actor.delay_next_reply_mentioning(node, LEASE_MS + 30, &key(actor, NAME));
    let started = actor.now();
    let probe = Node::start(actor, actor.connection_with(node, net), NAME)?;
    // Handed back when the late reply came, the name is won again at once.
    sleep_until(actor, started + LEASE_MS + 30 + 4 * CAMPAIGN_MS).await;
    let late = before + 1;
    let led_on_late = probe.elected_epochs().contains(&late);
    let leading = probe.election.is_leader();
    probe.end().await;
    actor.configured(
        "Election whose first campaign's reply came after the lease's deadline",
        &[
            ("led on that campaign's lease", led_on_late.to_string(), "false".into()),
            ("leads again once it was handed back", leading.to_string(), "true".into()),
        ],
    );
    Ok(())
}

/// Case 5: a leader's `stop()` whose hand-back's reply is held.
async fn stop_with_hand_back_held(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-stop";
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    if probe.elected(actor).await.is_none() {
        probe.end().await;
        return Ok(());
    }
    // The next request naming the key is the hand-back (the first renewal
    // is a renewal interval away).
    actor.delay_next_reply_mentioning(node, STOP_HOLD_MS, &key(actor, NAME));
    let read = async {
        sleep(Duration::from_millis(STOP_READ_AFTER_MS)).await;
        (probe.election.leadership().is_leader(), probe.election.is_leader())
    };
    let ((), (published, is_leader)) = tokio::join!(probe.election.stop(), read);
    let _ = probe.run.await;
    actor.configured(
        "Election::stop() whose hand-back's reply was held",
        &[
            ("published role while the hand-back was in flight", role(published), "follower".into()),
            ("is_leader() while the hand-back was in flight", is_leader.to_string(), "false".into()),
        ],
    );
    Ok(())
}

/// Case 6: `stop()` while the first campaign is in flight.
async fn stop_mid_campaign(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-stopped";
    actor.delay_next_reply_mentioning(node, STOP_HOLD_MS, &key(actor, NAME));
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    sleep(Duration::from_millis(STOP_HOLD_MS / 2)).await;
    if !probe.elected_epochs().is_empty() {
        // The campaign was answered after all: nothing in flight to judge.
        probe.end().await;
        return Ok(());
    }
    let calls = probe.end().await.len();
    actor.configured(
        "Election::stop() while the first campaign was in flight (it won at the server)",
        &[("on_elected calls", calls.to_string(), "0".into())],
    );
    Ok(())
}

/// Case 7: the leader's key overwritten with another owner.
async fn refused_renewal(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-refused";
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    let Some((sent, _)) = probe.elected(actor).await else {
        probe.end().await;
        return Ok(());
    };
    // `XX`: only over the lease that is there. The other owner keeps the
    // name past the read below, so the node cannot win it back meanwhile.
    let mut conn = actor.connection(node);
    let set: Option<String> = redis::cmd("SET")
        .arg(key(actor, NAME))
        .arg("someone-else")
        .arg("XX")
        .arg("PX")
        .arg(LEASE_MS)
        .query_async(&mut conn)
        .await
        .unwrap_or(None);
    let overwritten = actor.now();
    if set.as_deref() != Some("OK") || overwritten >= sent + RENEW_MS {
        // Not overwritten, or not before the first renewal: no verdict.
        probe.end().await;
        return Ok(());
    }
    let by = sent + RENEW_MS + 40;
    sleep_until(actor, by).await;
    let leadership = probe.election.leadership();
    let ended = match leadership.last_demotion() {
        _ if leadership.is_leader() => "still leading".to_string(),
        Some(d) => format!("ended for {}", reason(&d.reason)),
        None => "no term ended".to_string(),
    };
    let primitive = "Election whose leader's key was overwritten by another owner";
    let fields = [("the term, a renewal interval and a round trip later", ended, "ended for LeaseLost".into())];
    if leadership.is_leader() && crate::live::is_live() {
        // Live, a renewal runs when the runtime wakes it and its round trip
        // takes what it takes: how much later the term did end is the
        // measure of the miss (none, if it did not end within a lease).
        while probe.election.leadership().is_leader() && actor.now() < by + LEASE_MS {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if !probe.election.leadership().is_leader() {
            actor.configured_reading(primitive, &fields, &[fields[0].0], Duration::from_millis(actor.now() - by));
            probe.end().await;
            return Ok(());
        }
    }
    probe.end().await;
    actor.configured(primitive, &fields);
    Ok(())
}

/// Case 8: a renewed lease keeps an expiry: the leader's key, read a
/// round trip after its first renewal, expires within a lease (a renewal
/// that set the key without one would leave the name held for ever once
/// the leader died).
async fn renewed_expiry(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-renewed";
    let probe = Node::start(actor, actor.connection(node), NAME)?;
    let Some((first, _)) = probe.elected(actor).await else {
        probe.end().await;
        return Ok(());
    };
    sleep_until(actor, first + RENEW_MS + 30).await;
    let renewed = probe.election.leader_lease().is_some_and(|l| actor.millis_of(l.sent_at) > first);
    // An election of the same name only to reach its lock: it never runs.
    let reader = Election::builder(actor.connection(node), NAME).build()?;
    let left = reader.lock().remaining_ttl(NAME).await;
    probe.end().await;
    let got = match left {
        _ if !renewed => return Ok(()),
        Ok(Some(d)) if d.as_millis() <= u128::from(LEASE_MS) => "expires within the lease".to_string(),
        Ok(Some(d)) => format!("expires in {}ms", d.as_millis()),
        Ok(None) => "gone".to_string(),
        Err(e) if e.outcome_is_unknown() => return Ok(()),
        Err(e) => format!("unreadable: {e}"),
    };
    actor.configured(
        "Election whose lease was renewed",
        &[("the lease key, a round trip after the renewal", got, "expires within the lease".into())],
    );
    Ok(())
}

/// Case 9: `epoch()` at the lease's local deadline, read before the run
/// loop is woken by the same instant. The probe drives `run()` itself so
/// that it can stop polling it once the node leads.
async fn epoch_at_deadline(actor: &Actor, node: usize) -> ActorResult {
    const NAME: &str = "election-probe-at-deadline";
    // A deadline on a whole millisecond, where a timer can wake a reader
    // exactly at it: the default drift of a 400 ms lease is 6 ms.
    const _: () = assert!(LEASE_MS % 100 == 0);
    let election = Node::builder(actor, actor.connection(node), NAME).build()?;
    let run = election.run();
    tokio::pin!(run);
    let lease = tokio::select! {
        biased;
        _ = &mut run => None,
        lease = leader_within(&election) => lease,
    };
    // From here `run()` is not polled until the reads are done: no renewal
    // is sent and no demotion runs.
    let reads = match lease {
        Some(lease) if lease.local_deadline > tokio::time::Instant::now() + Duration::from_millis(1) => {
            let aim = lease.local_deadline - Duration::from_millis(1);
            tokio::time::sleep_until(aim).await;
            let before = format!("{:?}", election.epoch().map(|e| e.get()));
            let late = tokio::time::Instant::now().saturating_duration_since(aim);
            tokio::time::sleep_until(lease.local_deadline).await;
            let at = format!("{:?}", election.epoch().map(|e| e.get()));
            Some((before, at, lease.epoch.get(), late))
        }
        _ => None,
    };
    let (_, _) = tokio::join!(election.stop(), &mut run);
    let Some((before, at, epoch, late)) = reads else { return Ok(()) };
    actor.configured_reading(
        "Election read at its lease's local deadline, its run loop not yet woken",
        &[
            ("epoch() a millisecond before the deadline", before, format!("{:?}", Some(epoch))),
            ("epoch() at the deadline", at, "None".into()),
        ],
        &["epoch() a millisecond before the deadline"],
        late,
    );
    Ok(())
}

/// A demotion reason's variant name.
fn reason(r: &DemotionReason) -> &'static str {
    match r {
        DemotionReason::LeaseLost => "LeaseLost",
        DemotionReason::RedisError(_) => "RedisError",
        DemotionReason::DeadlineReached => "DeadlineReached",
        DemotionReason::Stopped => "Stopped",
        DemotionReason::Dropped => "Dropped",
    }
}

/// One probe node: its election, its `run()` task and the epochs its
/// `on_elected` was called with.
struct Node {
    election: Election<SimConnection>,
    run: tokio::task::JoinHandle<redis_primitives::Result<()>>,
    elected: Arc<Mutex<Vec<u64>>>,
}

impl Node {
    /// A single node's election on `name` with the probe's timings and the
    /// library's default demotion (self-fencing), running.
    fn start(actor: &Actor, conn: SimConnection, name: &str) -> redis_primitives::Result<Node> {
        let elected = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&elected);
        let election = Node::builder(actor, conn, name)
            .on_elected(move |epoch| match log.lock() {
                Ok(mut l) => l.push(epoch.get()),
                Err(p) => p.into_inner().push(epoch.get()),
            })
            .build()?;
        let run = actor.spawn({
            let e = election.clone();
            async move { e.run().await }
        });
        Ok(Node { election, run, elected })
    }

    /// An election on `name` with the probe's timings and the library's
    /// default demotion (self-fencing), its owners drawn from the seed.
    fn builder(actor: &Actor, conn: SimConnection, name: &str) -> ElectionBuilder<SimConnection> {
        Election::builder(conn, name)
            .lease_ttl(Duration::from_millis(LEASE_MS))
            .renew_interval(Duration::from_millis(RENEW_MS))
            .campaign_interval(Duration::from_millis(CAMPAIGN_MS))
            .owners(OwnerSource::seeded(actor.seed_for(name)))
    }

    /// The epochs `on_elected` was called with so far.
    fn elected_epochs(&self) -> Vec<u64> {
        match self.elected.lock() {
            Ok(l) => l.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Stops the election and waits for its `run()`; the epochs
    /// `on_elected` was called with.
    async fn end(self) -> Vec<u64> {
        self.election.stop().await;
        let epochs = self.elected_epochs();
        let _ = self.run.await;
        epochs
    }

    /// Waits until the node leads; the lease's send instant (simulated ms)
    /// and epoch, or `None` when it does not lead within
    /// [`ELECTED_WITHIN_MS`].
    async fn elected(&self, actor: &Actor) -> Option<(Millis, u64)> {
        let lease = leader_within(&self.election).await?;
        Some((actor.millis_of(lease.sent_at), lease.epoch.get()))
    }
}

/// Polls `election` every millisecond until it leads; its lease, or `None`
/// when it does not lead within [`ELECTED_WITHIN_MS`]. Polling (rather than
/// `on_elected`) sees the lease as a reader would, after `run()` stored it.
async fn leader_within(election: &Election<SimConnection>) -> Option<LeaderLease> {
    for _ in 0..ELECTED_WITHIN_MS {
        if let Some(lease) = election.leader_lease() {
            return Some(lease);
        }
        sleep(Duration::from_millis(1)).await;
    }
    None
}

/// A role as the read-backs name it.
fn role(leader: bool) -> String {
    if leader { "leader" } else { "follower" }.into()
}

/// The fence counter of an election on `name` (0 before its first
/// campaign), `None` when the read fails.
async fn counter(actor: &Actor, node: usize, name: &str) -> Option<u64> {
    let mut conn = actor.connection(node);
    let fence = super::node::keys_of(actor, name).1;
    let value: Option<u64> = redis::cmd("GET").arg(fence).query_async(&mut conn).await.ok()?;
    Some(value.unwrap_or(0))
}

/// Whether the lease of epoch `old` still holds `name` at node `node`,
/// read on a connection of its own (`None`: a read failed, no verdict).
/// A single-node election campaigns again as soon as it is demoted, so a
/// lease handed back is soon followed by a newer one of the same node: the
/// fence counter past `old` (read after the name) counts as handed back,
/// since the old key would have refused that campaign until its expiry.
async fn old_lease(actor: &Actor, node: usize, name: &str, old: u64) -> Option<String> {
    // An election of the same name only to reach its lock's key: it never
    // runs.
    let reader = Election::builder(actor.connection(node), name).build().ok()?;
    let left = reader.lock().remaining_ttl(name).await.ok()?;
    let counter = counter(actor, node, name).await?;
    Some(match left {
        None => "handed back".into(),
        Some(_) if counter > old => "handed back".into(),
        Some(left) => format!("still held, for {}ms more", left.as_millis()),
    })
}

/// The key an election on `name` keeps its lease at.
fn key(actor: &Actor, name: &str) -> String {
    super::node::keys_of(actor, name).0
}

/// Sleeps until simulated time `at` (at once if it has passed).
async fn sleep_until(actor: &Actor, at: Millis) {
    let now = actor.now();
    if at > now {
        sleep(Duration::from_millis(at - now)).await;
    }
}
