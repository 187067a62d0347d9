//! `key-lifetimes`: every key a correct primitive leaves behind lives as
//! long as the primitive documents, no longer and no shorter.
//!
//! Reply checkers cannot see a key's expiry: a limiter that forgets its
//! `PEXPIRE` answers every request correctly and leaks one key per name
//! forever; a lease written without its `PX` is never taken over by the next
//! holder only once its holder dies; a fence counter that somehow gets a
//! TTL reissues tokens after it lapses (reference case 15). So after every
//! run the harness reads each server's keys at the run's last instant
//! ([`crate::servers::ServerNode::keys`]) and each family states, per key
//! pattern, how long such a key may live ([`Life`]).

use super::{Violation, KEY_LIFETIMES};
use crate::servers::KeyAtEnd;

/// How long keys of one pattern may live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Life {
    /// Must carry an expiry of at most this many ms.
    AtMost(u64),
    /// Must never expire (no TTL).
    Forever,
}

/// Keys named `prefix…suffix` live as `life` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// What the name starts with (e.g. `lock:{`).
    pub prefix: &'static str,
    /// What it ends with (e.g. `}:fence`).
    pub suffix: &'static str,
    /// How long it may live.
    pub life: Life,
    /// What such a key is, for the message.
    pub what: &'static str,
}

/// Checks the keys of one node against `rules`; the first matching rule
/// applies. The rules are the family's whole documented key layout, so a
/// key no rule matches is a violation too (a primitive writing where it
/// says it does not: a wrong prefix, a lost hash tag). Keys whose name
/// contains one of `skip` (planted on purpose, such as the corruption
/// probe's) are left alone.
pub(crate) fn check(node: usize, keys: &[KeyAtEnd], rules: &[Rule], skip: &[&str]) -> Vec<Violation> {
    let mut out = Vec::new();
    for k in keys {
        if skip.iter().any(|s| k.key.contains(s)) {
            continue;
        }
        let Some(rule) = rules.iter().find(|r| k.key.starts_with(r.prefix) && k.key.ends_with(r.suffix)) else {
            out.push(Violation::new(
                KEY_LIFETIMES,
                None,
                format!(
                    "redis-{node}: stray key `{}` ({}): no key this primitive documents is named like it",
                    k.key, k.kind
                ),
            ));
            continue;
        };
        let wrong = match rule.life {
            Life::AtMost(max) => match k.pttl_ms {
                -1 => Some("has no expiry: it would live forever".to_string()),
                ms if ms < 0 || ms as u64 > max => Some(format!("expires in {ms}ms, beyond the {max}ms it may live")),
                _ => None,
            },
            Life::Forever => (k.pttl_ms != -1).then(|| format!("expires in {}ms: it must never expire", k.pttl_ms)),
        };
        if let Some(why) = wrong {
            out.push(Violation::new(
                KEY_LIFETIMES,
                None,
                format!("redis-{node}: {} `{}` ({}) at the end of the run {why}", rule.what, k.key, k.kind),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &[Rule] = &[
        Rule { prefix: "lock:{", suffix: "}:fence", life: Life::Forever, what: "fence counter" },
        Rule { prefix: "lock:{", suffix: "}", life: Life::AtMost(300), what: "lease" },
    ];

    fn key(key: &str, pttl_ms: i64) -> KeyAtEnd {
        KeyAtEnd { key: key.into(), kind: "string".into(), pttl_ms }
    }

    #[test]
    fn leases_expire_in_time_and_fences_never() {
        let fine = [key("lock:{a}", 120), key("lock:{a}:fence", -1)];
        assert!(check(0, &fine, RULES, &[]).is_empty());
        let stray = check(0, &[key("xyzzy", -1)], RULES, &[]);
        assert!(stray.len() == 1 && stray[0].detail.contains("stray key `xyzzy`"), "{stray:?}");
        let v = check(0, &[key("lock:{a}", -1), key("lock:{a}:fence", 5000), key("lock:{b}", 301)], RULES, &[]);
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(
            v[0].detail.contains("no expiry") && v[1].detail.contains("never expire") && v[2].detail.contains("beyond")
        );
        assert!(check(0, &[key("lock:{probe-x}", -1)], RULES, &["probe-"]).is_empty());
    }
}
