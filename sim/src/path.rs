//! The path a public library call took: answered yes, refused, or failed
//! (an error, or no answer at all). The promise table in
//! `docs/guide/invariants.md` judges each promise on each of its paths; a
//! scenario declares the (operation, path) pairs its workload exists to
//! reach ([`crate::Scenario::paths`]), `explore` counts them, and the
//! coverage test holds the pinned seeds to them as it holds them to the
//! declared situations. A checker can only judge a path a run took.

use std::collections::{BTreeMap, BTreeSet};

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Api, Event, EventKind, Op, WriteResult};

/// How a recorded call of a public operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Path {
    /// Answered, and not a refusal.
    Ok,
    /// A refusal the caller acts on (the history's `fail`, or a fenced
    /// write answered `Rejected`).
    Refused,
    /// An error, or no answer (the history's `info`, or no completion):
    /// the outcome may be unknown.
    Failed,
}

impl Path {
    /// The path of a call whose completion is `done` (`None`: it never
    /// completed).
    fn of(done: Option<&Event>) -> Path {
        match done {
            Some(e) if e.kind == EventKind::Fail => Path::Refused,
            Some(Event {
                kind: EventKind::Ok,
                op: Op::Write { result: Some(WriteResult::Rejected { .. }), .. },
                ..
            }) => Path::Refused,
            Some(e) if e.kind == EventKind::Ok => Path::Ok,
            _ => Path::Failed,
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Path::Ok => "ok",
            Path::Refused => "refused",
            Path::Failed => "failed",
        })
    }
}

/// Every (operation, path) the calls of `history` took: an invoke that
/// names its public operation, paired with its completion.
pub(crate) fn paths(history: &[Event]) -> BTreeSet<(Api, Path)> {
    let mut open: BTreeMap<u64, &Api> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for e in history {
        match (&e.api, e.kind) {
            (Some(api), EventKind::Invoke) => {
                open.insert(e.op_id.0, api);
            }
            (_, EventKind::Invoke) => {}
            _ => {
                if let Some(api) = open.remove(&e.op_id.0) {
                    out.insert((api.clone(), Path::of(Some(e))));
                }
            }
        }
    }
    out.extend(open.into_values().map(|api| (api.clone(), Path::of(None))));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[test]
    fn a_call_takes_the_path_of_its_completion() {
        let h = History::new();
        let write = |result| Op::Write { key: "r".into(), value: "v".into(), token: Some(1), fenced: true, result };
        let api = Api::new("FencedStore::write");
        let a = h.call("a", api.clone(), write(None));
        h.complete(a, "a", EventKind::Ok, write(Some(WriteResult::Accepted)));
        let b = h.call("b", api.clone(), write(None));
        h.complete(b, "b", EventKind::Ok, write(Some(WriteResult::Rejected { highest_seen: 2 })));
        let _never = h.call("c", Api::new("Lock::release"), write(None));
        let got = paths(&h.events());
        let want: BTreeSet<(Api, Path)> =
            [(api.clone(), Path::Ok), (api, Path::Refused), (Api::new("Lock::release"), Path::Failed)].into();
        assert_eq!(got, want);
    }
}
