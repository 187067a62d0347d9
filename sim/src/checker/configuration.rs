//! `configuration`: a primitive reports the configuration it was built with.
//!
//! Accessors are public API, and user code decides with them (a keep-alive
//! interval taken from `KeepAlive::every`, a quorum shown on a dashboard, a
//! key name handed to an operator). Workloads record each primitive's
//! accessors beside the values they built it with ([`Op::Configured`],
//! through [`crate::world::Actor::configured`]); any difference is a bug.

use super::{Violation, CONFIGURATION};
use crate::history::{Event, Op};

/// One violation per primitive report that differs from its configuration.
pub(crate) fn check(events: &[Event]) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in events {
        let Op::Configured { primitive, fields, missed_by } = &e.op else { continue };
        let wrong: Vec<String> = fields
            .iter()
            .filter(|(_, reported, configured)| reported != configured)
            .map(|(name, reported, configured)| format!("{name} reports {reported}, built with {configured}"))
            .collect();
        if !wrong.is_empty() {
            let v = Violation::new(
                CONFIGURATION,
                Some(e.time),
                format!("{} at {}ms: {primitive}: {}", e.process, e.time, wrong.join("; ")),
            );
            out.push(match missed_by {
                Some(by) => v.missed_by(*by),
                None => v,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    #[test]
    fn a_report_that_differs_from_the_configuration_convicts() {
        let h = History::new();
        let field = |r: &str, c: &str| ("every".to_string(), r.to_string(), c.to_string());
        h.observe_at(
            1,
            "c",
            Op::Configured { primitive: "KeepAlive".into(), fields: vec![field("100ms", "100ms")], missed_by: None },
        );
        assert!(check(&h.events()).is_empty());
        h.observe_at(
            2,
            "c",
            Op::Configured { primitive: "KeepAlive".into(), fields: vec![field("0ns", "100ms")], missed_by: None },
        );
        let v = check(&h.events());
        assert!(v.len() == 1 && v[0].detail.contains("every reports 0ns, built with 100ms"), "{v:?}");
    }
}
