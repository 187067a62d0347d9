//! A primitive family: the one place a family of scenarios lives.
//!
//! A family (the lock, the rate limiters, the election, Redlock, or a
//! user's own primitive) owns everything its scenarios need, behind one
//! trait implemented on its *variant* type (which of its primitives a
//! scenario runs, correct or broken, with the settings that go with it):
//!
//! - its **plan** type (serde data: the only description of a run beyond
//!   the seed and the nemesis schedule);
//! - its **space** type and **strategy** ([`Family::plans`]): the one
//!   generator of its plans, which seeds and the property search both draw
//!   from (`crate::space`); [`Family::seeds`] is what this variant's seeds
//!   draw, so a seed's run is the run of a plan, by construction;
//! - its **run**: actors, workload and checkers, from a plan
//!   ([`Family::run`]);
//! - what a plan means to the harness: its actors, the faults its workload
//!   injects itself, its validity and canonical form, and how it shrinks
//!   ([`Family::smaller`]: the property search's hints).
//!
//! The registry (`crate::families::REGISTRY`) holds each scenario's variant as a
//! [`Runner`], the object-safe face of a family; plans travel between the
//! two as a [`Workload`], the plan's JSON tagged with its family's name, so
//! that `crate::plan` (replay, shrinking, persistence) needs no table of
//! families and a new family touches no shared file but the registry. ADR
//! 0009 says why this is a trait on the variant rather than an enum.
//!
//! What a family adds to `rp-sim report` beside its scenarios' rows (what
//! its histograms measure, a section of its own such as the election's
//! figures) is a [`ReportPart`], listed in `crate::families::REGISTRY`:
//! per family rather than per variant, since a section measures the family
//! as a whole, and listed there so that the report names no family.

use core::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use proptest::strategy::{BoxedStrategy, Strategy};

use crate::checker::Invariant;
use crate::fault_space::FaultSpace;
use crate::history::{Event, Operation};
use crate::nemesis::{Fault, Schedule};
use crate::outcome::Outcome;
use crate::servers::{Servers, SetupError};
use crate::stats::{Bound, Metric};
use crate::timeline::Tenure;

/// One family of scenarios, implemented on its variant type (see the
/// module docs).
pub trait Family: fmt::Debug + Sync + 'static {
    /// Everything one run does beyond its seed and nemesis schedule.
    type Plan: Clone + fmt::Debug + fmt::Display + PartialEq + Serialize + DeserializeOwned;

    /// Ranges (and shapes) of plans: what [`Family::plans`] draws from.
    type Space: Clone + fmt::Debug + 'static;

    /// What its actors record and its checkers read back (with
    /// [`operations`]): the family's own operation type, in the history as
    /// `Op::Family` ([`crate::history::Operation`]).
    type Op: Operation;

    /// The family's name: the `family` tag of its plans' JSON.
    const NAME: &'static str;

    /// Redis nodes a run of this variant needs.
    fn nodes(&self) -> u32;

    /// What this variant's seeds draw: its workload space and its nemesis
    /// faults (`crate::space::Space::draw` turns a seed into a plan).
    fn seeds(&self) -> (Self::Space, FaultSpace);

    /// The family's strategy: plans of `space`, each with the faults its
    /// shape places itself (on top of the nemesis's drawn ones). The only
    /// generator of this family's plans; values shrink towards simpler
    /// plans (fewer actors, no workload fault, low ends of ranges).
    fn plans(space: &Self::Space) -> BoxedStrategy<(Self::Plan, Vec<Fault>)>;

    /// The most actors a plan of `space` can have (fault targets are drawn
    /// below it).
    fn max_actors(space: &Self::Space) -> u32;

    /// Runs `plan` under `schedule` (the seed seeds what the plan leaves to
    /// chance: link latencies, actors' RNGs) and judges it.
    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &Self::Plan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError>;

    /// Client actors of `plan`: what `Target::Client(i)` indexes.
    fn actors(plan: &Self::Plan) -> u32;

    /// Faults `plan`'s workload injects itself (a holder's stall, a
    /// leader's `stop()`): counted in a plan's size.
    fn injected_faults(_plan: &Self::Plan) -> usize {
        0
    }

    /// Whether `plan` can run (indices in range, positive durations).
    fn validate(_plan: &Self::Plan) -> Result<(), String> {
        Ok(())
    }

    /// Puts a generated plan into canonical form for `actors` actors
    /// (indices wrapped, lists sorted).
    fn normalize(_plan: &mut Self::Plan, _actors: u32) {}

    /// Plans one step simpler than `plan` (a workload fault removed, an
    /// actor fewer): the shrinking hints of the property search.
    fn smaller(_plan: &Self::Plan) -> Vec<Self::Plan> {
        Vec::new()
    }

    /// Bounds this variant's seeds promise for its histograms (a limiter's
    /// limit): drawn as lines on the report's plots.
    fn bounds(&self) -> Vec<Bound> {
        Vec::new()
    }

    /// Who held what in `events` (leases, leaderships), read from this
    /// family's own operations: the bands a timeline draws.
    fn tenures(&self, _events: &[Event]) -> Vec<Tenure> {
        Vec::new()
    }
}

/// The events of `events` that carry an operation of family `F`, each with
/// the operation, typed.
pub(crate) fn operations<F: Family>(events: &[Event]) -> impl Iterator<Item = (&Event, &F::Op)> {
    events.iter().filter_map(|e| e.op.family::<F::Op>().map(|op| (e, op)))
}

/// A plan as the harness carries it: its family's name and its JSON.
///
/// Serialised as the plan's own JSON object with a `family` field added, so
/// a plan reads the same whichever family wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Workload(serde_json::Value);

impl Workload {
    /// `plan` of family `F`.
    pub fn of<F: Family>(plan: &F::Plan) -> Workload {
        // A plan is plain data (integers, strings, lists): it serialises.
        let mut v = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("family".to_string(), serde_json::Value::String(F::NAME.to_string()));
        }
        Workload(v)
    }

    /// The family named in the plan (`None` if it names none).
    pub fn family(&self) -> Option<&str> {
        self.0.get("family").and_then(|f| f.as_str())
    }

    /// The typed plan, if this is a plan of family `F`.
    pub fn plan<F: Family>(&self) -> Result<F::Plan, String> {
        match self.family() {
            Some(name) if name == F::NAME => {}
            Some(name) => return Err(format!("a {name} plan, not a {} plan", F::NAME)),
            None => return Err("the workload names no family".to_string()),
        }
        let mut v = self.0.clone();
        if let serde_json::Value::Object(m) = &mut v {
            m.remove("family");
        }
        serde_json::from_value(v).map_err(|e| format!("not a {} plan: {e}", F::NAME))
    }
}

/// A family's variant behind one object-safe face: what a registry row
/// holds. Implemented for every [`Family`]; a plan's typed form never
/// leaves the family.
pub(crate) trait Runner: fmt::Debug + Sync {
    /// The family's name.
    fn family(&self) -> &'static str;
    /// Redis nodes a run needs.
    fn nodes(&self) -> u32;
    /// What its seeds draw: workloads and nemesis faults.
    fn seeds(&self) -> (Workloads, FaultSpace);
    /// Runs a plan given as a [`Workload`].
    fn run_workload(
        &self,
        servers: &mut Servers,
        seed: u64,
        workload: &Workload,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError>;
    /// The plan, in words.
    fn describe(&self, workload: &Workload) -> String;
    /// Its actors.
    fn actors(&self, workload: &Workload) -> Result<u32, String>;
    /// The faults its workload injects.
    fn injected_faults(&self, workload: &Workload) -> usize;
    /// Whether it can run.
    fn validate(&self, workload: &Workload) -> Result<(), String>;
    /// Its canonical form for `actors` actors.
    fn normalize(&self, workload: &Workload, actors: u32) -> Workload;
    /// Plans one step simpler.
    fn smaller(&self, workload: &Workload) -> Vec<Workload>;
    /// The bounds its plots draw.
    fn bounds(&self) -> Vec<Bound>;
    /// Who held what in `events`, for the timeline.
    fn tenures(&self, _events: &[Event]) -> Vec<Tenure> {
        Vec::new()
    }
}

impl<F: Family> Runner for F {
    fn family(&self) -> &'static str {
        F::NAME
    }

    fn nodes(&self) -> u32 {
        Family::nodes(self)
    }

    fn seeds(&self) -> (Workloads, FaultSpace) {
        let (workload, faults) = Family::seeds(self);
        (Workloads::of::<F>(&workload), faults)
    }

    fn run_workload(
        &self,
        servers: &mut Servers,
        seed: u64,
        workload: &Workload,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        let plan = workload.plan::<F>().map_err(|reason| SetupError::InvalidPlan { reason })?;
        self.run(servers, seed, &plan, schedule)
    }

    fn describe(&self, workload: &Workload) -> String {
        match workload.plan::<F>() {
            Ok(p) => p.to_string(),
            Err(e) => format!("(unreadable: {e})"),
        }
    }

    fn actors(&self, workload: &Workload) -> Result<u32, String> {
        workload.plan::<F>().map(|p| F::actors(&p))
    }

    fn injected_faults(&self, workload: &Workload) -> usize {
        workload.plan::<F>().map_or(0, |p| F::injected_faults(&p))
    }

    fn validate(&self, workload: &Workload) -> Result<(), String> {
        F::validate(&workload.plan::<F>()?)
    }

    fn normalize(&self, workload: &Workload, actors: u32) -> Workload {
        match workload.plan::<F>() {
            Ok(mut p) => {
                F::normalize(&mut p, actors);
                Workload::of::<F>(&p)
            }
            Err(_) => workload.clone(),
        }
    }

    fn smaller(&self, workload: &Workload) -> Vec<Workload> {
        workload.plan::<F>().map(|p| F::smaller(&p).iter().map(Workload::of::<F>).collect()).unwrap_or_default()
    }

    fn bounds(&self) -> Vec<Bound> {
        Family::bounds(self)
    }

    fn tenures(&self, events: &[Event]) -> Vec<Tenure> {
        Family::tenures(self, events)
    }
}

/// A family's workloads, with its type erased: what a [`crate::Space`] holds.
///
/// Each value is a plan (as a [`Workload`]) and the faults its shape
/// places itself (a client slow from the start, a restart at a fixed
/// moment): drawn together, because where they go depends on the workload.
#[derive(Clone)]
pub(crate) struct Workloads {
    pub(crate) strategy: BoxedStrategy<(Workload, Vec<Fault>)>,
    pub(crate) max_actors: u32,
    family: &'static str,
}

impl Workloads {
    /// The workloads of family `F`'s `space`.
    pub(crate) fn of<F: Family>(space: &F::Space) -> Workloads {
        Workloads {
            strategy: F::plans(space).prop_map(|(plan, placed)| (Workload::of::<F>(&plan), placed)).boxed(),
            max_actors: F::max_actors(space).max(1),
            family: F::NAME,
        }
    }
}

impl fmt::Debug for Workloads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Workloads({} family, up to {} actors)", self.family, self.max_actors)
    }
}

/// What a family adds to `rp-sim report` beside its scenarios' rows (see
/// the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReportPart {
    /// The invariants only this family judges, each with what it means
    /// (`--help`, `explore`'s summary and the report list them).
    pub invariants: &'static [(Invariant, &'static str)],
    /// Each histogram the family's scenarios record, with what it measures
    /// (the report's list of meanings).
    pub histograms: &'static [(Metric, &'static str)],
    /// Measures the family's own section of the report on `servers` (runs
    /// of its own, outside the scenarios' seeds); `None`: it has none.
    pub section: Option<MeasureSection>,
}

/// Measures a family's own section of the report on `servers`.
pub(crate) type MeasureSection = fn(&mut Servers) -> Result<Box<dyn ReportSection>, SetupError>;

/// A family's own section of the report: its Markdown in `README.md`, its
/// entries in `report.json`. Kept typed until written.
pub(crate) trait ReportSection: fmt::Debug {
    /// Appends the section's Markdown (its `##` heading and what follows).
    fn markdown(&self, m: &mut String);
    /// Writes the section's entries into the report's JSON object.
    fn json(&self, out: &mut ReportJson<'_, '_>) -> serde_json::Result<()>;
}

/// The report's JSON object while it is written, which a [`ReportSection`]
/// adds its entries to: they land, pretty-printed like the rest, between
/// the benchmark and the mutation table.
///
/// The object itself rather than a `serde_json::Value` handed back: a
/// `Value`'s map sorts its keys, and an entry keeps its type's field order.
pub(crate) struct ReportJson<'a, 'b>(
    serde_json::ser::Compound<'a, &'b mut Vec<u8>, serde_json::ser::PrettyFormatter<'static>>,
);

impl<'a, 'b> ReportJson<'a, 'b> {
    /// Opens the object on `serializer`.
    pub(crate) fn open(
        serializer: &'a mut serde_json::Serializer<&'b mut Vec<u8>, serde_json::ser::PrettyFormatter<'static>>,
    ) -> serde_json::Result<ReportJson<'a, 'b>> {
        serde::Serializer::serialize_map(serializer, None).map(ReportJson)
    }

    /// Adds the entry `key: value`.
    pub(crate) fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> serde_json::Result<()> {
        serde::ser::SerializeMap::serialize_entry(&mut self.0, key, value)
    }

    /// Closes the object.
    pub(crate) fn close(self) -> serde_json::Result<()> {
        serde::ser::SerializeMap::end(self.0)
    }
}
