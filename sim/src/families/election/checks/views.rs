//! `election-views`: what an `Election` says about itself agrees with
//! itself, with its configuration, and with the clock.
//!
//! The election checkers judge reigns (who believed it led, when); this one
//! judges the accessors a user's code actually calls. The workload polls
//! them every millisecond and records an [`ElectionOp::ElectionView`] whenever one
//! changed, plus every `on_elected`/`on_demoted` callback and the
//! configuration the node reports at build. Per node:
//!
//! - the configuration reported (`name`, `lease_ttl`, `renew_interval`,
//!   `campaign_interval`, `demotion`) is the one it was built with;
//! - `is_leader()` is `epoch().is_some()`;
//! - `leader_lease()`'s deadline is its send instant plus `lease − drift`;
//! - under `Demotion::AtDeadline`, `epoch()` is `Some(e)` exactly while the
//!   published role is `Leader { e }`, the lease is `e`'s, and the instant
//!   is before its deadline (so it is `None` from the deadline on, and not
//!   `None` before it); under `Demotion::OnRenewTick` it is the lease's;
//! - a published `Leader { e }` holds lease `e`; a published follower or
//!   stopped node holds none; `elected_at` is when the view first saw it;
//! - `on_elected(e)` ran for every epoch ever published as leader and for
//!   no other; `on_demoted(e)` only for an elected epoch, and before any
//!   view published `e`'s demotion; per epoch the two alternate (elected,
//!   demoted, elected, …). A second term of one epoch is the `election`
//!   checker's to judge (an epoch led twice), not the views';
//! - under `Demotion::AtDeadline`, a node never starts leading on a lease
//!   already past its deadline (a campaign answered after its own deadline
//!   is handed back, not led on);
//! - renewals keep their cadence: the next renewal of a term is sent
//!   exactly `renew_interval` after the previous one was sent, unless that
//!   one's reply came later (then at once), or a fault or a pause of the
//!   node came in between;
//! - no `on_elected` runs once `stop()` was called (a campaign that wins
//!   while the node is stopping is handed back);
//! - `stop()` returns only once `run()` has finished (it waits for it),
//!   and a stopped node says so: its last view is `Stopped` with no lease;
//! - a `subscribe()` receiver, read beside the accessors, holds what
//!   `leadership()` publishes and was notified (`has_changed`) of every
//!   change since it was last read ([`ElectionOp::SubscriberView`], recorded only
//!   when it disagrees);
//! - the writer's `epoch()` checks ([`ElectionOp::EpochCheck`]) answer `Some` only
//!   before the deadline of the lease the last view showed (under
//!   `Demotion::AtDeadline`): a check that says "still leader" past it lets
//!   a stale leader act.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use super::why::Why;
use crate::checker::{Allowance, Violation};
use crate::families::election::api::{ELECTION_RUN, ELECTION_STOP};
use crate::families::election::invariants::ELECTION_VIEWS;
use crate::families::election::{ElectionOp, Published};
use crate::history::{Event, Millis};

/// What every node was built with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Built<'a> {
    /// Election name.
    pub name: &'a str,
    /// Lease TTL, ms.
    pub lease_ms: u64,
    /// Renew interval, ms.
    pub renew_ms: u64,
    /// Campaign interval, ms.
    pub campaign_ms: u64,
    /// Whether the node demotes itself at its deadline (`AtDeadline`).
    pub at_deadline: bool,
    /// Its lock's drift allowance.
    pub allowance: Allowance,
    /// The nemesis faults' `[start, end]` spans.
    pub faults: &'a [(Millis, Millis)],
    /// The spans of those that freeze a client process (client pauses).
    pub freezes: &'a [(Millis, Millis)],
    /// The workload samples the views until this time (later views come
    /// after a gap, from its shutdown).
    pub sampled_until: Millis,
}

#[derive(Default)]
struct Node {
    /// Epochs published as leader, with the first view's time.
    published: BTreeMap<u64, Millis>,
    /// Epochs published as demoted, with the first view's time.
    demoted: BTreeMap<u64, Millis>,
    /// `on_elected` calls per epoch, with their times.
    elected_calls: BTreeMap<u64, Vec<Millis>>,
    /// `on_demoted` calls per epoch, with their times.
    demoted_calls: BTreeMap<u64, Vec<Millis>>,
    /// Both callbacks per epoch in the order they ran: `(time, elected)`.
    callbacks: BTreeMap<u64, Vec<(Millis, bool)>>,
    /// Op ids of the node's `run()` and `stop()` calls.
    run_id: Option<u64>,
    stop_id: Option<u64>,
    /// When they completed.
    run_done: Option<Millis>,
    stop_done: Option<Millis>,
    /// The lease the last view showed: `(epoch, deadline µs)`.
    lease: Option<(u64, u64)>,
    /// The last view's published role.
    last_published: Option<Published>,
    /// The last renewal seen: `(epoch, sent µs, seen at ms)`.
    renewal: Option<(u64, u64, Millis)>,
}

/// Every disagreement, at most a few per node.
pub(crate) fn check(events: &[Event], built: Built<'_>) -> Vec<Violation> {
    let rules = Rules::new(events, built);
    let mut out = Vec::new();
    let mut nodes: BTreeMap<&str, Node> = BTreeMap::new();
    for e in events {
        let node = nodes.entry(e.process.as_str()).or_default();
        node.track_calls(e);
        if let Some(why) = rules.event(node, e) {
            let detail = format!("{} at {}ms: {}", e.process, e.time, why.text());
            out.push(why.weigh(Violation::new(ELECTION_VIEWS, Some(e.time), detail)));
        }
    }
    for (process, n) in &nodes {
        let why = rules.node_summary(n);
        if !why.is_empty() {
            out.push(Violation::new(ELECTION_VIEWS, None, format!("{process}: {}", why.join("; "))));
        }
    }
    out
}

impl Node {
    /// Notes the node's `run()` and `stop()` calls and when they completed.
    fn track_calls(&mut self, e: &Event) {
        if e.api == Some(ELECTION_RUN) {
            self.run_id = Some(e.op_id.0);
        } else if e.api == Some(ELECTION_STOP) {
            self.stop_id = Some(e.op_id.0);
        }
        if e.kind != crate::history::EventKind::Invoke {
            if self.run_id == Some(e.op_id.0) {
                self.run_done = Some(e.time);
            }
            if self.stop_id == Some(e.op_id.0) {
                self.stop_done = Some(e.time);
            }
        }
    }
}

/// One recorded [`ElectionOp::ElectionView`], borrowed.
struct View<'e> {
    name: &'e str,
    is_leader: bool,
    epoch: Option<u64>,
    /// `(epoch, sent µs, deadline µs)`.
    lease: Option<(u64, u64, u64)>,
    published: Published,
    accessors: (bool, Option<u64>, Option<u64>),
    demotion_reason: Option<&'e str>,
}

/// What the views are judged against: the configuration, the lease's
/// usable span, and the spans in which a node could not look.
struct Rules<'a> {
    events: &'a [Event],
    built: Built<'a>,
    /// `lease − drift`, µs.
    usable_us: u64,
    /// The demotion the nodes were built with, as they report it.
    demotion: &'static str,
    /// Every process's pauses.
    pauses: Vec<(&'a str, Millis, Millis)>,
}

impl<'a> Rules<'a> {
    fn new(events: &'a [Event], built: Built<'a>) -> Rules<'a> {
        let usable_us = {
            let lease_ns = u128::from(built.lease_ms) * 1_000_000;
            let allowance = lease_ns * u128::from(built.allowance.per_mille) / 1000
                + u128::from(built.allowance.constant_ms) * 1_000_000;
            (lease_ns.saturating_sub(allowance) / 1000) as u64
        };
        let demotion = if built.at_deadline { "AtDeadline" } else { "OnRenewTick" };
        let pauses = crate::checker::interruptions(events);
        Rules { events, built, usable_us, demotion, pauses }
    }

    /// Whether a fault, or a pause of `process`, touched `[from, to]`.
    fn disturbed(&self, process: &str, from: Millis, to: Millis) -> bool {
        self.built.faults.iter().any(|&(s, e)| s <= to && e >= from)
            || self.pauses.iter().any(|&(p, s, e)| p == process && s <= to && e >= from)
    }

    /// Whether the node was frozen (a client pause, a stall) in a span that
    /// reached past `since` and ended at most 3 ms before the view `e`: its
    /// recorder could not look earlier.
    fn frozen_since(&self, e: &Event, since: Millis) -> bool {
        let frozen = |s: Millis, end: Millis| s <= e.time && end + 3 >= e.time && end >= since;
        self.built.freezes.iter().any(|&(s, end)| frozen(s, end))
            || crate::checker::paused(self.events, &e.process, frozen)
    }

    /// When the last freeze of `e`'s node that reached past `since` ended,
    /// if one ended before `e`.
    fn last_thaw(&self, e: &Event, since: Millis) -> Option<Millis> {
        let last = core::cell::Cell::new(None::<Millis>);
        let note = |s: Millis, end: Millis| {
            if s <= e.time && end <= e.time && end >= since {
                last.set(Some(last.get().map_or(end, |l| l.max(end))));
            }
            false
        };
        for &(s, end) in self.built.freezes {
            note(s, end);
        }
        crate::checker::paused(self.events, &e.process, note);
        last.get()
    }

    /// What is wrong with event `e` of `node`, if anything.
    fn event(&self, node: &mut Node, e: &Event) -> Option<Why> {
        // Only the election's own records say anything about its views.
        let why = match e.op.family::<ElectionOp>()? {
            ElectionOp::ElectionConfig { name, lease_ms, renew_ms, campaign_ms, demotion: d } => {
                let reported = (name.as_str(), *lease_ms, *renew_ms, *campaign_ms, d.as_str());
                let built = self.built;
                let expected = (built.name, built.lease_ms, built.renew_ms, built.campaign_ms, self.demotion);
                (reported != expected).then(|| format!("the election reports (name, lease, renew, campaign, demotion) = {reported:?}; it was built with {expected:?}"))
            }
            ElectionOp::ElectionCallback { elected: true, epoch, .. } => Self::elected(node, *epoch, e.time),
            ElectionOp::ElectionCallback { elected: false, epoch, deadline_reached } => {
                self.demoted(node, *epoch, *deadline_reached, e.time)
            }
            ElectionOp::SubscriberView { published, received, notified } => {
                let what = if received == published {
                    "was not notified of the change".to_string()
                } else {
                    format!("holds {received:?}")
                };
                Some(format!(
                    "a subscribe() receiver {what} (notified: {notified}) while leadership() publishes {published:?}"
                ))
            }
            ElectionOp::EpochCheck { epoch: Some(epoch) } if self.built.at_deadline => {
                let (l, deadline_us) = node.lease.filter(|(l, _)| l == epoch)?;
                let t_us = e.time * 1000;
                return (t_us >= deadline_us).then(|| {
                    let text =
                        format!("epoch() answered Some({l}) at {t_us}µs, past its lease's deadline at {deadline_us}µs");
                    Why::timed(text, t_us - deadline_us)
                });
            }
            ElectionOp::ElectionView { name, is_leader, epoch, lease, published, accessors, demotion_reason } => {
                let view = View {
                    name,
                    is_leader: *is_leader,
                    epoch: *epoch,
                    lease: *lease,
                    published: *published,
                    accessors: *accessors,
                    demotion_reason: demotion_reason.as_deref(),
                };
                return Why::joined(self.view(node, e, &view));
            }
            _ => None,
        };
        why.map(Why::from)
    }

    /// `on_elected(epoch)` at `time`.
    fn elected(node: &mut Node, epoch: u64, time: Millis) -> Option<String> {
        node.elected_calls.entry(epoch).or_default().push(time);
        node.callbacks.entry(epoch).or_default().push((time, true));
        // stop() sets its flag before it awaits anything, and run()
        // looks at it between a campaign's reply and the election:
        // a campaign that wins after stop() was called is handed
        // back, never led on.
        node.stop_id.is_some().then(|| {
            format!(
                "on_elected({epoch}) ran after stop() was called: a campaign won while stopping must be handed back, not led on"
            )
        })
    }

    /// `on_demoted(epoch)` at `time`.
    fn demoted(&self, node: &mut Node, epoch: u64, deadline_reached: bool, time: Millis) -> Option<String> {
        // Elected and demoted for its deadline in the same instant:
        // the term began on a lease already past its deadline (a
        // trusted lease's deadline is at least a timer tick away,
        // and nothing awaits between the campaign's reply and the
        // election). Self-fencing never leads on such a lease.
        let same_instant = node.elected_calls.get(&epoch).is_some_and(|ts| ts.last() == Some(&time));
        node.demoted_calls.entry(epoch).or_default().push(time);
        node.callbacks.entry(epoch).or_default().push((time, false));
        (self.built.at_deadline && deadline_reached && same_instant).then(|| {
            format!(
                "epoch {epoch} was elected and demoted for DeadlineReached in the same instant: its campaign's lease was already past its deadline (hand it back, never lead on it)"
            )
        })
    }

    /// Everything wrong with one recorded view of `node`.
    fn view(&self, node: &mut Node, e: &Event, v: &View<'_>) -> Vec<Why> {
        let previous_lease = std::mem::replace(&mut node.lease, v.lease.map(|(l, _, d)| (l, d)));
        let previous_published = node.last_published.replace(v.published);
        let mut why: Vec<Why> = self.accessors(v).into_iter().map(Why::from).collect();
        why.extend(self.deadline_reason(e, v, previous_published, previous_lease));
        why.extend(self.kept_past_deadline(e, previous_published, previous_lease));
        why.extend(self.lease_deadline(v));
        why.extend(self.renewal_cadence(node, e, v));
        why.extend(self.published_lease(node, e, v));
        why.extend(self.epoch(e, v));
        why
    }

    /// The accessors agree with each other and with the configuration.
    fn accessors(&self, v: &View<'_>) -> Vec<String> {
        let mut why = Vec::new();
        if v.name != self.built.name {
            why.push(format!("name() is {:?}, not {:?}", v.name, self.built.name));
        }
        if v.is_leader != v.epoch.is_some() {
            why.push(format!("is_leader() is {} while epoch() is {:?}", v.is_leader, v.epoch));
        }
        let expected = match v.published {
            Published::Leader { epoch, .. } => (true, Some(epoch), None),
            Published::Follower { demoted } | Published::Stopped { demoted } => (false, None, demoted),
        };
        if v.accessors != expected {
            why.push(format!(
                "Leadership's accessors say (is_leader, epoch, last demotion) = {:?} of {:?}",
                v.accessors, v.published
            ));
        }
        // `OnRenewTick` promises to demote only when a renewal fails
        // (or on stop): never on a timer.
        if !self.built.at_deadline && v.demotion_reason == Some("deadline-reached") {
            why.push(
                "under OnRenewTick a term ended for DeadlineReached: it may end only when a renewal fails".to_string(),
            );
        }
        why
    }

    /// A term ended "for its deadline" ends at or after it: a demotion
    /// reported as DeadlineReached while the lease the node last published
    /// for that epoch was still trusted names the wrong reason (a refusal
    /// or an error taken for the clock), and with it whether the lease is
    /// handed back.
    fn deadline_reason(
        &self,
        e: &Event,
        v: &View<'_>,
        previous_published: Option<Published>,
        previous_lease: Option<(u64, u64)>,
    ) -> Option<Why> {
        let t_us = e.time * 1000;
        let (Some("deadline-reached"), Some(Published::Leader { epoch: p, .. }), Some((l, deadline_us))) =
            (v.demotion_reason, previous_published, previous_lease)
        else {
            return None;
        };
        let demoted = match v.published {
            Published::Follower { demoted } | Published::Stopped { demoted } => demoted,
            Published::Leader { .. } => None,
        };
        (l == p && demoted == Some(l) && t_us + 1000 < deadline_us).then(|| {
            let text = format!(
                "epoch {l} ended for DeadlineReached at {t_us}µs, but its lease was trusted until {deadline_us}µs"
            );
            Why::timed(text, deadline_us - t_us - 1000)
        })
    }

    /// Under self-fencing the run loop wakes at the deadline and steps
    /// down. Views are recorded when they change, so the previous view held
    /// until this one: if it published a term whose lease's deadline passed
    /// 3 ms before this view, the term was never ended on time (kept, or
    /// revived by a late renewal). A node frozen in that span (a client
    /// pause, a stall) gets 3 ms after it resumes; a held request or a
    /// partition freezes nothing: the timer fires regardless.
    fn kept_past_deadline(
        &self,
        e: &Event,
        previous_published: Option<Published>,
        previous_lease: Option<(u64, u64)>,
    ) -> Option<Why> {
        let t_us = e.time * 1000;
        let (true, Some(Published::Leader { epoch: p, .. }), Some((l, deadline_us))) =
            (self.built.at_deadline, previous_published, previous_lease)
        else {
            return None;
        };
        let excused = self.frozen_since(e, deadline_us / 1000);
        (l == p && t_us >= deadline_us + 3000 && !excused && e.time <= self.built.sampled_until).then(|| {
            let text = format!(
                "epoch {p} stayed published as leader until {t_us}µs, past its lease's deadline at {deadline_us}µs"
            );
            // The bound is 3 ms after the deadline, or after a freeze that
            // outlasted it (a live thaw comes when its timer wakes).
            let thawed = self.last_thaw(e, deadline_us / 1000).map_or(0, |t| t * 1000);
            Why::timed(text, t_us.saturating_sub(deadline_us.max(thawed) + 3000))
        })
    }

    /// `leader_lease()`'s deadline is its send instant plus `lease − drift`.
    fn lease_deadline(&self, v: &View<'_>) -> Option<Why> {
        let (_, sent_us, deadline_us) = v.lease?;
        let apart = deadline_us.abs_diff(sent_us + self.usable_us);
        (apart > 1).then(|| {
            let text = format!(
                "leader_lease() ends at {deadline_us}µs for a renewal sent at {sent_us}µs; send + lease − drift is {}µs",
                sent_us + self.usable_us
            );
            Why::timed(text, apart - 1)
        })
    }

    /// Renewals keep their cadence: the next renewal of a term is sent
    /// `renew_interval` after the previous one was sent, unless that one's
    /// reply came later, or a fault or a pause came in between.
    fn renewal_cadence(&self, node: &mut Node, e: &Event, v: &View<'_>) -> Option<Why> {
        let (l, sent_us, _) = v.lease?;
        let mut why = None;
        match node.renewal {
            Some((prev_epoch, prev_sent, seen)) if prev_epoch == l && prev_sent != sent_us => {
                let renew_us = self.built.renew_ms * 1000;
                let due = prev_sent + renew_us;
                let calm = !self.disturbed(e.process.as_str(), prev_sent / 1000, sent_us / 1000);
                if sent_us < due {
                    let text = format!("a renewal of epoch {l} was sent at {sent_us}µs, before it was due at {due}µs");
                    why = Some(Why::timed(text, due - sent_us));
                } else if calm && seen * 1000 < due && sent_us != due {
                    let text = format!(
                        "a renewal of epoch {l} was sent at {sent_us}µs; the one before was sent at {prev_sent}µs and answered by {}µs, so this one was due at {due}µs",
                        seen * 1000
                    );
                    why = Some(Why::timed(text, sent_us - due));
                }
            }
            _ => {}
        }
        if node.renewal.is_none_or(|(pe, ps, _)| pe != l || ps != sent_us) {
            node.renewal = Some((l, sent_us, e.time));
        }
        why
    }

    /// A published leader holds its lease, first seen when it was elected
    /// and not on a lease past its deadline; a follower or stopped node
    /// holds none.
    fn published_lease(&self, node: &mut Node, e: &Event, v: &View<'_>) -> Vec<Why> {
        let t_us = e.time * 1000;
        let lease = v.lease;
        let lease_epoch = lease.map(|l| l.0);
        let mut why = Vec::new();
        match v.published {
            Published::Leader { epoch: p, elected_at_ms } => {
                if lease_epoch != Some(p) {
                    why.push(
                        format!("leadership() is Leader {{ epoch: {p} }} while leader_lease() is {lease:?}").into(),
                    );
                }
                // The first view of a term comes right after its
                // publication, unless the node froze in between (a
                // stall right after `on_elected`): then both rules
                // below would judge the freeze, not the library.
                if let Entry::Vacant(first) = node.published.entry(p) {
                    first.insert(e.time);
                    if self.frozen_since(e, elected_at_ms) {
                        return why;
                    }
                    if let Some((_, _, deadline_us)) = lease.filter(|l| l.0 == p && self.built.at_deadline) {
                        if deadline_us <= t_us {
                            let text = format!(
                                "epoch {p} was first published as leader at {t_us}µs on a lease whose deadline had passed at {deadline_us}µs"
                            );
                            why.push(Why::timed(text, t_us - deadline_us));
                        }
                    }
                    if elected_at_ms > e.time || e.time - elected_at_ms > 2 {
                        let text = format!(
                            "epoch {p} was first published at {}ms with elected_at = {elected_at_ms}ms",
                            e.time
                        );
                        let off_ms =
                            if elected_at_ms > e.time { elected_at_ms - e.time } else { e.time - elected_at_ms - 2 };
                        why.push(Why::timed(text, off_ms * 1000));
                    }
                }
            }
            Published::Follower { demoted } | Published::Stopped { demoted } => {
                if lease.is_some() {
                    why.push(format!("leadership() is {:?} while leader_lease() is {lease:?}", v.published).into());
                }
                if let Some(d) = demoted {
                    node.demoted.entry(d).or_insert(e.time);
                }
            }
        }
        why
    }

    /// `epoch()`: under `AtDeadline`, `Some(e)` exactly while the published
    /// leader's lease is `e`'s and its deadline is ahead; under
    /// `OnRenewTick`, the lease's.
    fn epoch(&self, e: &Event, v: &View<'_>) -> Option<Why> {
        let t_us = e.time * 1000;
        let lease = v.lease;
        let lease_epoch = lease.map(|l| l.0);
        let should = match (self.built.at_deadline, lease, v.published) {
            (true, Some((l, _, deadline_us)), Published::Leader { epoch: p, .. }) if l == p => {
                (t_us < deadline_us).then_some(l)
            }
            (true, ..) => None,
            (false, ..) => lease_epoch,
        };
        (v.epoch != should).then(|| match (self.built.at_deadline, lease) {
            (true, Some((_, _, d))) => {
                let text = format!(
                    "epoch() is {:?} at {t_us}µs with the lease's deadline at {d}µs; it must be {should:?}",
                    v.epoch
                );
                // Wrong only about which side of the deadline it is on, or
                // wrong outright (another epoch).
                match (v.epoch, should) {
                    (Some(_), None) | (None, Some(_)) if v.epoch.or(should) == lease_epoch => {
                        Why::timed(text, t_us.abs_diff(d))
                    }
                    _ => text.into(),
                }
            }
            _ => format!("epoch() is {:?} while leader_lease() is {lease:?}; it must be {should:?}", v.epoch).into(),
        })
    }

    /// What is wrong with a node's whole run: callbacks against published
    /// terms, and how it stopped.
    fn node_summary(&self, n: &Node) -> Vec<String> {
        let built = self.built;
        let published: BTreeSet<u64> = n.published.keys().copied().collect();
        // A term that began and ended within one millisecond (elected on
        // resuming from a pause, demoted by its first renewal) may never be
        // seen by a view polled every millisecond; its callbacks still ran.
        let too_short = |epoch: &u64| {
            let elected = n.elected_calls.get(epoch).and_then(|c| c.first());
            let demoted = n.demoted_calls.get(epoch).and_then(|c| c.first());
            matches!((elected, demoted), (Some(a), Some(b)) if b - a <= 1)
        };
        // Nor is a term that began after the workload stopped polling (a
        // follower that won while it waited to call stop()).
        let unsampled =
            |epoch: &u64| n.elected_calls.get(epoch).and_then(|c| c.first()).is_some_and(|&t| t > built.sampled_until);
        let called: BTreeSet<u64> = n
            .elected_calls
            .keys()
            .copied()
            .filter(|e| published.contains(e) || !(too_short(e) || unsampled(e)))
            .collect();
        let mut why = Vec::new();
        if published != called {
            why.push(format!("epochs published as leader {published:?}, but on_elected ran for {called:?}"));
        }
        for (epoch, calls) in &n.callbacks {
            why.extend(terms_of(*epoch, calls));
        }
        for (epoch, calls) in &n.demoted_calls {
            if !n.elected_calls.contains_key(epoch) {
                why.push(format!("on_demoted ran for epoch {epoch} at {calls:?}ms, which was never elected"));
            }
        }
        for (epoch, seen) in &n.demoted {
            if !n.demoted_calls.get(epoch).is_some_and(|c| c.iter().any(|&t| t <= *seen)) {
                why.push(format!(
                    "epoch {epoch}'s demotion was published by {seen}ms but on_demoted had not run for it"
                ));
            }
        }
        why.extend(stopped(n));
        why
    }
}

/// `stop()` returns only once `run()` has finished, and a stopped node
/// says so.
fn stopped(n: &Node) -> Vec<String> {
    let mut why = Vec::new();
    match (n.run_id, n.stop_done, n.run_done) {
        (Some(_), Some(stop), Some(run)) if stop < run => {
            why.push(format!("stop() returned at {stop}ms, before run() finished at {run}ms"))
        }
        (Some(_), Some(stop), None) => why.push(format!("stop() returned at {stop}ms while run() never finished")),
        _ => {}
    }
    if n.stop_done.is_some() && !matches!(n.last_published, Some(Published::Stopped { .. })) {
        why.push(format!("stopped, but leadership() last said {:?}", n.last_published));
    }
    why
}

/// Where one node's callbacks for `epoch` (in the order they ran) do not
/// alternate: `on_demoted` first, or either callback twice in a row.
fn terms_of(epoch: u64, calls: &[(Millis, bool)]) -> Vec<String> {
    let mut why = Vec::new();
    if let (Some(&(at, false)), true) = (calls.first(), calls.iter().any(|c| c.1)) {
        why.push(format!("on_demoted ran for epoch {epoch} at {at}ms, before its on_elected"));
    }
    for pair in calls.windows(2) {
        let ((before, was_elected), (at, elected)) = (pair[0], pair[1]);
        if was_elected == elected {
            let callback = if elected { "on_elected" } else { "on_demoted" };
            why.push(format!("{callback} ran twice in a row for epoch {epoch} (at {before}ms and {at}ms)"));
        }
    }
    why
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
