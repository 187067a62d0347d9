//! Explicit scenario inputs: a [`Plan`] says everything a run does.
//!
//! A seed alone reproduces a run, but it cannot be *shrunk*: change one bit
//! and everything the seed decides changes at once. Property tests need the
//! opposite, inputs whose parts can be simplified one at a time — one fault
//! fewer, a shorter pause, an actor fewer — while everything else stays put.
//! A [`Plan`] is that input, as plain serde data:
//!
//! - `scenario`: which registry entry (which primitive, broken or not, and
//!   which checkers);
//! - `seed`: what is still left to chance — link latency draws, each actor's
//!   RNG (hold and think times, owner ids) — and nothing else;
//! - `workload`: the actors and their parameters ([`Workload`]): number of
//!   clients or nodes, TTLs, renew and campaign intervals, limits and
//!   windows, bursts, and the faults the workload itself injects because
//!   they must hit a particular actor (a holder stalling inside its critical
//!   section, the current leader freezing);
//! - `schedule`: the nemesis faults, each with its start, duration and target.
//!
//! Every family runs a seed through its plan (each family's `seed_plan`, and
//! [`from_seed`] here), so `run(seed)` and [`run`]`(&from_seed(seed))` are
//! the same run, digest for digest (`sim/tests/harness/plan.rs` checks it
//! for every scenario). The dependency goes one way: this module imports the
//! families' plan types; no family imports this module. `rp-sim replay
//! --scenario NAME --plan '<json>'` reruns a plan, which is how a shrunk
//! counterexample from the property tests is reproduced.
//!
//! The **size** of a plan ([`Plan::size`]) is what a reader has to hold in
//! their head: its faults (nemesis faults plus workload-injected ones) plus
//! its actors. Shrinking minimises it.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::nemesis::{Fault, FaultClass, Schedule, Target};
use crate::scenarios::election::ElectionPlan;
use crate::scenarios::lock::{LockPlan, LockWorkload};
use crate::scenarios::rate_limit::RateLimitPlan;
use crate::scenarios::redlock::{RedlockPlan, RedlockStart};
use crate::scenarios::{self, election, rate_limit, redlock, Outcome};
use crate::servers::{Servers, SetupError};

/// Everything one run does (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The registry name (`rp-sim scenarios`).
    pub scenario: String,
    /// Seeds what the plan leaves to chance (latency draws, actor RNGs).
    pub seed: u64,
    /// The actors and their parameters.
    pub workload: Workload,
    /// The nemesis faults.
    pub schedule: Schedule,
}

/// The actors of a run, per scenario family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "kebab-case")]
pub enum Workload {
    /// `lock`, `lock-naive`, `fencing`, `fencing-unfenced`, `counter-loss`.
    Lock(LockPlan),
    /// `rate-limit`, `rate-limit-counter` and the three naive limiters.
    RateLimit(RateLimitPlan),
    /// `election`, `election-renew-only`, `election-no-epoch`.
    Election(ElectionPlan),
    /// `redlock`, `redlock-no-validity`, `redlock-clock-jump`.
    Redlock(RedlockPlan),
}

/// Number of Redis nodes each scenario's world has.
pub fn nodes_of(scenario: &str) -> u32 {
    match scenario {
        "counter-loss" => 2,
        s if s.starts_with("redlock") => 5,
        _ => 1,
    }
}

impl Workload {
    /// Client actors (or election nodes): what `Target::Client(i)` indexes.
    pub fn actors(&self) -> u32 {
        match self {
            Workload::Lock(w) => w.clients,
            Workload::RateLimit(w) => w.clients,
            Workload::Election(w) => w.nodes,
            Workload::Redlock(w) => w.starts.len() as u32,
        }
    }

    /// Faults the workload injects itself (stalls, a leader's `stop()`).
    pub fn injected_faults(&self) -> usize {
        match self {
            Workload::Lock(w) => usize::from(w.stall.is_some_and(|s| s.ms > 0)),
            Workload::Election(w) => usize::from(w.stall.is_some()) + usize::from(w.stop_at.is_some()),
            Workload::RateLimit(_) | Workload::Redlock(_) => 0,
        }
    }

    /// Operations the workload is set to start, where it says so up front
    /// (rate-limit requests); `None` where actors loop until the end.
    pub fn planned_operations(&self) -> Option<u64> {
        match self {
            Workload::RateLimit(w) => Some(w.bursts.iter().map(|b| u64::from(b.size)).sum()),
            _ => None,
        }
    }

    /// The family's name, as in the JSON `family` tag.
    pub fn family(&self) -> &'static str {
        match self {
            Workload::Lock(_) => "lock",
            Workload::RateLimit(_) => "rate-limit",
            Workload::Election(_) => "election",
            Workload::Redlock(_) => "redlock",
        }
    }
}

impl Plan {
    /// Client actors (election nodes for an election).
    pub fn actors(&self) -> u32 {
        self.workload.actors()
    }

    /// Redis nodes.
    pub fn nodes(&self) -> u32 {
        nodes_of(&self.scenario)
    }

    /// Nemesis faults plus workload-injected ones.
    pub fn faults(&self) -> usize {
        self.schedule.faults.len() + self.workload.injected_faults()
    }

    /// What shrinking minimises: [`Plan::faults`] + [`Plan::actors`].
    pub fn size(&self) -> usize {
        self.faults() + self.actors() as usize
    }

    /// Whether the schedule steps any server clock.
    pub fn has_clock_faults(&self) -> bool {
        self.schedule.faults.iter().any(|f| f.kind.class() == FaultClass::ClockStep)
    }

    /// Checks that the plan can run: at least one actor, every fault's
    /// target exists and suits its kind, every index in range.
    pub fn validate(&self) -> Result<(), String> {
        let actors = self.actors();
        if actors == 0 {
            return Err("a plan needs at least one actor".into());
        }
        self.schedule.validate(actors, self.nodes())?;
        match &self.workload {
            Workload::Lock(w) => {
                if w.ttl_ms == 0 {
                    return Err("ttl_ms must be positive".into());
                }
                if let Some(s) = w.stall {
                    if s.client >= actors || s.hold == 0 {
                        return Err(format!("stall {s:?}: no such client or hold (holds count from 1)"));
                    }
                }
            }
            Workload::RateLimit(w) => {
                if w.limit == 0 || w.window_ms == 0 {
                    return Err("limit and window_ms must be positive".into());
                }
                if let Some(b) = w.bursts.iter().find(|b| b.client >= actors) {
                    return Err(format!("burst {b:?}: no such client"));
                }
            }
            Workload::Election(w) => {
                // The builder's rule: renew at most half of the lease less
                // its drift allowance (1 % + 2 ms).
                let usable = (w.lease_ms * 99 / 100).saturating_sub(2);
                if w.renew_ms == 0 || w.renew_ms * 2 > usable || w.campaign_ms == 0 {
                    return Err("election needs 0 < 2 * renew_ms <= lease_ms - 1% - 2ms and campaign_ms > 0".into());
                }
            }
            Workload::Redlock(w) => {
                if w.ttl_ms == 0 || w.master_timeout_ms == 0 || w.master_timeouts_ms.contains(&0) {
                    return Err("ttl_ms and master_timeout_ms must be positive".into());
                }
            }
        }
        Ok(())
    }

    /// Puts a generated plan into canonical form, so any plan a strategy
    /// produces runs and reads well:
    ///
    /// - targets are taken modulo the actors and nodes that exist (a
    ///   strategy draws them independently of the actor count, so that
    ///   shrinking the actors keeps every fault);
    /// - faults are sorted by start, and a fault that would start while an
    ///   earlier one on an overlapping target is still active is dropped:
    ///   turmoil keeps one state per link and a process one pause switch,
    ///   so the first undo would silently cut the other fault short;
    /// - durations are at least 1 ms.
    pub fn normalize(mut self) -> Plan {
        let actors = self.actors().max(1);
        let nodes = self.nodes().max(1);
        match &mut self.workload {
            Workload::Lock(w) => {
                if let Some(s) = &mut w.stall {
                    s.client %= actors;
                    s.hold = s.hold.max(1);
                }
            }
            Workload::RateLimit(w) => {
                for b in &mut w.bursts {
                    b.client %= actors;
                }
                w.bursts.sort_by_key(|b| (b.at, b.client));
            }
            Workload::Election(_) | Workload::Redlock(_) => {}
        }
        let mut faults: Vec<Fault> = self
            .schedule
            .faults
            .iter()
            .map(|f| {
                let target = match f.target {
                    Target::Client(c) => Target::Client(c % actors),
                    Target::Node(n) => Target::Node(n % nodes),
                    Target::Link { client, node } => Target::Link { client: client % actors, node: node % nodes },
                };
                Fault { target, duration: f.duration.max(1), ..*f }
            })
            .collect();
        faults.sort_by_key(|f| f.at);
        let mut kept: Vec<Fault> = Vec::with_capacity(faults.len());
        for f in faults {
            if !kept.iter().any(|k| k.end() > f.at && conflicts(k, &f)) {
                kept.push(f);
            }
        }
        self.schedule = Schedule::of(kept);
        self
    }

    /// The plan as one line of JSON (what `--plan` takes).
    pub fn to_json(&self) -> String {
        // A plan is plain data (strings, integers, enums): it always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a plan from JSON.
    pub fn from_json(json: &str) -> Result<Plan, String> {
        serde_json::from_str(json).map_err(|e| format!("not a plan: {e}"))
    }

    /// The command that reruns this plan.
    pub fn replay_command(&self) -> String {
        format!("rp-sim replay --scenario {} --plan '{}'", self.scenario, self.to_json())
    }
}

/// Which family each scenario belongs to, and the lock-family template.
fn lock_template(scenario: &str) -> Option<LockWorkload> {
    Some(match scenario {
        "lock" => LockWorkload::lock(),
        "lock-naive" => scenarios::lock_naive::workload(),
        "fencing" => scenarios::fencing::workload(),
        "fencing-unfenced" => scenarios::fencing_unfenced::workload(),
        "counter-loss" => scenarios::counter_loss::workload(),
        _ => return None,
    })
}

fn rate_limit_variant(scenario: &str) -> Option<rate_limit::Variant> {
    Some(match scenario {
        "rate-limit" => rate_limit::Variant::Log,
        "rate-limit-counter" => rate_limit::Variant::Counter,
        "rate-limit-fixed-window" => rate_limit::Variant::FixedWindow,
        "rate-limit-client-side" => rate_limit::Variant::ClientSide,
        "rate-limit-watch-multi" => rate_limit::Variant::WatchMulti,
        _ => return None,
    })
}

fn election_variant(scenario: &str) -> Option<election::Variant> {
    Some(match scenario {
        "election" => election::Variant::Election,
        "election-renew-only" => election::Variant::RenewOnly,
        "election-no-epoch" => election::Variant::NoEpoch,
        _ => return None,
    })
}

fn redlock_variant(scenario: &str) -> Option<redlock::Variant> {
    Some(match scenario {
        "redlock" => redlock::Variant::Correct,
        "redlock-no-validity" => redlock::Variant::NoValidity,
        "redlock-clock-jump" => redlock::Variant::ClockJump,
        _ => return None,
    })
}

/// The plan a scenario's seed-only run follows (`None` for an unknown
/// scenario). `run_plan(&from_seed(s, seed))` is `run(seed)`, digest for digest.
pub fn from_seed(scenario: &str, seed: u64) -> Option<Plan> {
    let (workload, schedule) = if let Some(w) = lock_template(scenario) {
        let (lock, schedule) = w.seed_plan(seed);
        (Workload::Lock(lock), schedule)
    } else if rate_limit_variant(scenario).is_some() {
        let (p, s) = rate_limit::seed_plan(seed);
        (Workload::RateLimit(p), s)
    } else if election_variant(scenario).is_some() {
        let (p, s) = election::seed_plan(seed);
        (Workload::Election(p), s)
    } else if let Some(v) = redlock_variant(scenario) {
        let (p, s) = redlock::seed_plan(v, seed);
        (Workload::Redlock(p), s)
    } else {
        return None;
    };
    Some(Plan { scenario: scenario.to_string(), seed, workload, schedule })
}

/// Runs a plan: its scenario's workload with the plan's parameters and
/// schedule, checked by the scenario's checkers (an unknown scenario, or a
/// workload of another family, is an invalid plan).
pub fn run(servers: &mut Servers, plan: &Plan) -> Result<Outcome, SetupError> {
    if scenarios::find(&plan.scenario).is_none() {
        return Err(SetupError::Simulation(format!(
            "invalid plan: no scenario named {} ({})",
            plan.scenario,
            scenarios::names()
        )));
    }
    plan.validate().map_err(|e| SetupError::Simulation(format!("invalid plan: {e}")))?;
    let mismatch = || {
        SetupError::Simulation(format!(
            "invalid plan: scenario {} does not take a {} workload",
            plan.scenario,
            plan.workload.family()
        ))
    };
    let schedule = plan.schedule.clone();
    match &plan.workload {
        Workload::Lock(p) => {
            let template = lock_template(&plan.scenario).ok_or_else(mismatch)?;
            template.run_planned(servers, plan.seed, p, schedule)
        }
        Workload::RateLimit(p) => {
            let v = rate_limit_variant(&plan.scenario).ok_or_else(mismatch)?;
            rate_limit::run_planned(v, servers, plan.seed, p, schedule)
        }
        Workload::Election(p) => {
            let v = election_variant(&plan.scenario).ok_or_else(mismatch)?;
            election::run_planned(v, servers, plan.seed, p, schedule)
        }
        Workload::Redlock(p) => {
            let v = redlock_variant(&plan.scenario).ok_or_else(mismatch)?;
            redlock::run_planned(v, servers, plan.seed, p, schedule)
        }
    }
}

/// Whether two faults act on the same switch (a link's state, a process's
/// pause, a server's clock or life).
fn conflicts(a: &Fault, b: &Fault) -> bool {
    use FaultClass::*;
    let (ca, cb) = (a.kind.class(), b.kind.class());
    let network = |c: FaultClass| matches!(c, Partition | PartitionOneWay | Hold | Latency);
    let server_life = |c: FaultClass| matches!(c, ServerPause | ServerRestart);
    if network(ca) && network(cb) {
        return links_overlap(a.target, b.target);
    }
    if ca == ClientPause && cb == ClientPause {
        return a.target == b.target;
    }
    if (server_life(ca) && server_life(cb)) || (ca == ClockStep && cb == ClockStep) {
        return a.target == b.target;
    }
    false
}

fn links_overlap(a: Target, b: Target) -> bool {
    match (a, b) {
        (Target::Client(x), Target::Client(y)) => x == y,
        (Target::Client(x), Target::Link { client, .. }) | (Target::Link { client, .. }, Target::Client(x)) => {
            x == client
        }
        (Target::Link { client: c1, node: n1 }, Target::Link { client: c2, node: n2 }) => c1 == c2 && n1 == n2,
        _ => false,
    }
}

fn range(f: &mut fmt::Formatter<'_>, (lo, hi): (u64, u64)) -> fmt::Result {
    if lo == hi {
        write!(f, "{lo}ms")
    } else {
        write!(f, "{lo}..{hi}ms")
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Lock(w) => {
                write!(f, "{} client(s), ttl {}ms, hold ", w.clients, w.ttl_ms)?;
                range(f, w.hold_ms)?;
                write!(f, ", think ")?;
                range(f, w.think_ms)?;
                write!(f, ", attempts until {}ms", w.length_ms)?;
                match w.stall {
                    Some(s) if s.ms > 0 => write!(
                        f,
                        "; client#{} stalls {}ms inside its critical section #{} (workload fault)",
                        s.client, s.ms, s.hold
                    ),
                    _ => write!(f, "; no stall"),
                }
            }
            Workload::RateLimit(w) => {
                write!(f, "{} client(s), limit {} per {}ms, ", w.clients, w.limit, w.window_ms)?;
                if w.bursts.is_empty() {
                    return write!(f, "no requests");
                }
                write!(f, "{} burst(s):", w.bursts.len())?;
                for b in &w.bursts {
                    write!(f, " {}@{}ms by client#{}", b.size, b.at, b.client)?;
                }
                Ok(())
            }
            Workload::Election(w) => {
                write!(
                    f,
                    "{} node(s), lease {}ms, renew {}ms, campaign {}ms, until {}ms",
                    w.nodes, w.lease_ms, w.renew_ms, w.campaign_ms, w.length_ms
                )?;
                if w.stagger_ms > 0 {
                    write!(f, ", node i starts at i*{}ms", w.stagger_ms)?;
                }
                if let Some(s) = w.stall {
                    write!(f, "; the leader at {}ms stalls {}ms (workload fault)", s.at, s.ms)?;
                }
                if let Some(at) = w.stop_at {
                    write!(f, "; the leader at {at}ms calls stop() (workload)")?;
                }
                Ok(())
            }
            Workload::Redlock(w) => {
                write!(
                    f,
                    "{} client(s) over 5 masters, ttl {}ms, master timeout {}ms, attempts until {}ms; starts:",
                    w.starts.len(),
                    w.ttl_ms,
                    w.master_timeout_ms,
                    w.length_ms
                )?;
                if !w.master_timeouts_ms.is_empty() {
                    write!(f, " (per client: {:?}ms)", w.master_timeouts_ms)?;
                }
                for (i, s) in w.starts.iter().enumerate() {
                    match s {
                        RedlockStart::At(at) => write!(f, " client#{i} at {at}ms")?,
                        RedlockStart::AfterFirstGrant { delay, latest } => {
                            write!(f, " client#{i} {delay}ms after client#0's first grant (by {latest}ms)")?
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan for {} (seed {}), size {} = {} fault(s) + {} actor(s)",
            self.scenario,
            self.seed,
            self.size(),
            self.faults(),
            self.actors()
        )?;
        writeln!(f, "  workload: {}", self.workload)?;
        if self.schedule.faults.is_empty() {
            write!(f, "  nemesis: no faults")
        } else {
            write!(f, "  nemesis:")?;
            for fault in &self.schedule.faults {
                write!(f, "\n    {fault}")?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::FaultKind;
    use crate::scenarios::lock::Stall;

    fn lock_plan(faults: Vec<Fault>) -> Plan {
        Plan {
            scenario: "lock".into(),
            seed: 7,
            workload: Workload::Lock(LockPlan {
                clients: 2,
                ttl_ms: 300,
                hold_ms: (20, 450),
                think_ms: (5, 80),
                length_ms: 1000,
                stall: Some(Stall { client: 5, hold: 1, ms: 900 }),
            }),
            schedule: Schedule::of(faults),
        }
    }

    #[test]
    fn normalize_wraps_targets_and_drops_conflicting_faults() {
        let f = |at, duration, kind, target| Fault { at, duration, kind, target };
        let p = lock_plan(vec![
            f(500, 100, FaultKind::Hold, Target::Client(3)),
            f(100, 600, FaultKind::Partition, Target::Client(1)),
            f(200, 50, FaultKind::ClientPause, Target::Client(1)),
            f(300, 0, FaultKind::ServerPause, Target::Node(4)),
        ])
        .normalize();
        // Client(3) wraps to client#1, whose partition is still active at 500.
        assert_eq!(
            p.schedule.faults,
            vec![
                f(100, 600, FaultKind::Partition, Target::Client(1)),
                f(200, 50, FaultKind::ClientPause, Target::Client(1)),
                f(300, 1, FaultKind::ServerPause, Target::Node(0)),
            ]
        );
        let Workload::Lock(w) = &p.workload else { unreachable!() };
        assert_eq!(w.stall.map(|s| s.client), Some(1));
        p.validate().unwrap();
        assert_eq!(p.size(), 3 + 1 + 2);
        assert_eq!(p.clone().normalize(), p, "normalize is idempotent");
    }

    #[test]
    fn json_round_trip_and_display() {
        let p =
            lock_plan(vec![Fault { at: 10, duration: 20, kind: FaultKind::ClientPause, target: Target::Client(0) }])
                .normalize();
        let json = p.to_json();
        assert!(json.contains("\"family\":\"lock\""), "{json}");
        assert_eq!(Plan::from_json(&json).unwrap(), p);
        assert!(!json.contains('\''), "the replay command single-quotes the JSON");
        let text = p.to_string();
        assert!(text.contains("size 4 = 2 fault(s) + 2 actor(s)"), "{text}");
        assert!(text.contains("at 10ms for 20ms: client-pause client#0, then resume"), "{text}");
        assert!(p.replay_command().starts_with("rp-sim replay --scenario lock --plan '{"));
    }
}
