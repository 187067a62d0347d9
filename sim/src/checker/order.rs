//! The real-time-order sweep shared by the ordering checkers.
//!
//! Three invariants ask the same question of different operations (granted
//! tokens, accepted fenced writes, accepted leader writes): "was anything
//! ordered *before* this one — completed before it was invoked — carrying a
//! larger number?". Answering it pairwise is O(n²); sorting once by
//! completion and once by invocation answers it in O(n log n) with a single
//! sweep, and keeping that sweep in one place keeps the three checkers
//! agreeing on what "before" means.

use crate::history::Millis;

/// An operation with an invoke time, a completion time and a number that
/// real-time order must not see decrease.
pub(crate) trait Ordered {
    /// When the operation was invoked.
    fn invoked(&self) -> Millis;
    /// When it completed.
    fn done(&self) -> Millis;
    /// The token, epoch or term it carried.
    fn number(&self) -> u64;
}

/// A completed operation carrying a token, stamped with its process and times:
/// what the token and stale-overwrite checkers sweep.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamped<'a> {
    /// The process that ran it.
    pub process: &'a str,
    /// When it was invoked.
    pub invoked: Millis,
    /// When it completed.
    pub done: Millis,
    /// The token it was granted or carried.
    pub token: u64,
}

impl Ordered for Stamped<'_> {
    fn invoked(&self) -> Millis {
        self.invoked
    }
    fn done(&self) -> Millis {
        self.done
    }
    fn number(&self) -> u64 {
        self.token
    }
}

/// Every `(a, b)` where `a` completed strictly before `b` was invoked and
/// `a` carries the largest number among such operations, and that number is
/// larger than `b`'s. In the order of `b`'s invocation.
pub(crate) fn regressions<T: Ordered>(ops: &[T]) -> Vec<(&T, &T)> {
    let mut by_done: Vec<&T> = ops.iter().collect();
    by_done.sort_by_key(|o| o.done());
    let mut by_invoke: Vec<&T> = ops.iter().collect();
    by_invoke.sort_by_key(|o| o.invoked());
    let mut out = Vec::new();
    let mut i = 0;
    let mut best: Option<&T> = None;
    for b in by_invoke {
        while i < by_done.len() && by_done[i].done() < b.invoked() {
            if best.is_none_or(|x| by_done[i].number() > x.number()) {
                best = Some(by_done[i]);
            }
            i += 1;
        }
        if let Some(a) = best {
            if b.number() < a.number() {
                out.push((a, b));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Op(Millis, Millis, u64);
    impl Ordered for Op {
        fn invoked(&self) -> Millis {
            self.0
        }
        fn done(&self) -> Millis {
            self.1
        }
        fn number(&self) -> u64 {
            self.2
        }
    }

    #[test]
    fn only_operations_ordered_before_count() {
        // 5 completes at 10; 3 invoked at 11 regresses; 4 invoked at 9 overlaps 5 and does not.
        let ops = [Op(0, 10, 5), Op(11, 12, 3), Op(9, 13, 4)];
        let found = regressions(&ops);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].0.number(), found[0].1.number()), (5, 3));
        // Equal numbers are not a regression.
        assert!(regressions(&[Op(0, 1, 2), Op(2, 3, 2)]).is_empty());
    }
}
