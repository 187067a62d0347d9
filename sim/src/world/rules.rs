//! The rules for code under test, enforced where the harness can tell.
//!
//! Code inside a run must reach Redis only through [`Actor::connection`],
//! read time and sleep only through `tokio::time`, draw randomness only
//! from the actor's seed, and start tasks through the actor (the rules are
//! listed in `docs/guide/harness.md`, "Rules for code under test"). Most
//! breaches cannot be seen from here and show up as two digests for one
//! seed (the determinism self-check, `--twice`). One can: a socket of its
//! own. turmoil's runtime has tokio's I/O driver off, so such code panics
//! with tokio's "IO is disabled" — a message about a runtime the user does
//! not own. [`Guarded`] catches that panic on the actor's task and turns it
//! into [`SimError::RuleBroken`](crate::SimError::RuleBroken), naming the
//! actor and the rule; every other panic unwinds as before.
//!
//! [`Actor::connection`]: crate::Actor::connection

use core::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::ActorResult;

/// A rule for code under test that an actor was seen to break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// It opened a socket or a connection of its own (for example
    /// `redis::Client::open(url)` and a connection from it) instead of
    /// using `Actor::connection`.
    OwnSocket,
}

impl Rule {
    /// The rule a panic's payload shows broken, if any. The text matched is
    /// tokio's own panic message when a task touches I/O on a runtime built
    /// without it (turmoil's): a fact about tokio, read where it appears.
    fn broken_by(payload: &(dyn std::any::Any + Send)) -> Option<Rule> {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())?;
        text.contains("IO is disabled").then_some(Rule::OwnSocket)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::OwnSocket => f.write_str(
                "code under test opened a socket of its own (tokio: \"IO is disabled\"); inside a run, reach \
                 Redis only through `Actor::connection(node)`: a client that only takes a URL needs a \
                 constructor from a connection (docs/guide/harness.md, \"Rules for code under test\")",
            ),
        }
    }
}

/// The first rule broken in a run, by which actor (shared by every
/// actor's [`Guarded`] and read by `World::run`).
pub(crate) type Breach = Arc<Mutex<Option<(String, Rule)>>>;

/// An actor's task, with the rules it can break caught (module docs).
pub(crate) struct Guarded<F> {
    inner: Pin<Box<F>>,
    actor: String,
    breach: Breach,
}

impl<F> Guarded<F> {
    pub(crate) fn new(inner: F, actor: String, breach: Breach) -> Guarded<F> {
        Guarded { inner: Box::pin(inner), actor, breach }
    }
}

impl<F: Future<Output = ActorResult>> Future for Guarded<F> {
    type Output = ActorResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ActorResult> {
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => match Rule::broken_by(payload.as_ref()) {
                Some(rule) => {
                    if let Ok(mut slot) = self.breach.lock() {
                        slot.get_or_insert_with(|| (self.actor.clone(), rule));
                    }
                    Poll::Ready(Err(rule.to_string().into()))
                }
                None => resume_unwind(payload),
            },
        }
    }
}
