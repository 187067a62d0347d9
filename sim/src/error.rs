//! Why a run could not happen: the harness's two error types.
//!
//! [`SetupError`] (servers, the clock library, a plan that cannot run) and
//! [`SimError`] (a simulation that did not finish) wrap each other, so they
//! live together, below both the server pool and the world that raise them:
//! dependencies run one way (ADR 0009).

use std::path::PathBuf;

use redis_primitives_testkit::ServerError;

use crate::determinism::Divergence;

/// Why the harness could not set up its servers.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The clock library is not where it was built (or where `RP_CLOCK_LIB` points).
    #[error(
        "clock library not found at {}: it is built by sim/build.rs (`cargo build -p redis-primitives-sim`, needs a C compiler), or set RP_CLOCK_LIB=/path/to/librp_clock.so",
        path.display()
    )]
    ClockLibraryMissing {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The server started but its wall clock does not obey the control file.
    #[error(
        "redis-server on port {port} ignores the clock library (LD_PRELOAD did not take effect; TIME answered {reply:?} while pinned). Is redis-server statically linked or setuid?"
    )]
    ClockNotEffective {
        /// The server's port.
        port: u16,
        /// What `TIME` answered while pinned.
        reply: String,
    },
    /// A redis-server could not be started, restarted or reset.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The control file could not be created or mapped.
    #[error("clock control file: {0}")]
    Io(#[from] std::io::Error),
    /// A simulation run could not complete (an actor failed, the run hit its
    /// time limit, or its fault schedule was invalid): a harness or scenario
    /// bug, not a finding.
    #[error(transparent)]
    Run(Box<SimError>),
    /// `explore --twice`: one seed gave two histories, so no replay of it
    /// can be trusted (see [`crate::Divergence`]).
    #[error(transparent)]
    Nondeterministic(Box<Divergence>),
    /// A plan that cannot run (an unknown scenario, a workload of another
    /// family, an index out of range), or a space that drew none: bad input,
    /// refused before anything ran.
    #[error("invalid plan: {reason}")]
    InvalidPlan {
        /// What is wrong with it.
        reason: String,
    },
    /// The end-of-run key snapshot of a server could not be read.
    #[error("reading the keys of {url}: {source}")]
    KeySnapshot {
        /// The server.
        url: String,
        /// What redis-rs said.
        #[source]
        source: redis::RedisError,
    },
    /// A property search stopped before it could report (proptest gave
    /// up, or a failure it reported could not be reproduced).
    #[error("search aborted: {reason}")]
    SearchAborted {
        /// Why.
        reason: String,
    },
}

/// Why a run did not produce a history.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Servers or the clock library could not be set up.
    #[error("setup: {0}")]
    Setup(SetupError),
    /// The schedule names a target that does not exist, or a kind/target mismatch.
    #[error("invalid fault schedule: {0}")]
    InvalidSchedule(String),
    /// A fault was aimed at an actor by a name no actor was registered
    /// under ([`crate::World::client`]).
    #[error("no actor named {name:?} to aim a fault at (registered: {})", known.join(", "))]
    UnknownActor {
        /// The name asked for.
        name: String,
        /// The names registered so far, in registration order.
        known: Vec<String>,
    },
    /// An actor broke a rule for code under test that the harness can see
    /// (see [`crate::Rule`]).
    #[error("simulation failed (seed {seed}): actor {actor:?} broke a rule: {rule}")]
    RuleBroken {
        /// The seed, for reproduction.
        seed: u64,
        /// The actor's name.
        actor: String,
        /// The rule.
        rule: crate::Rule,
    },
    /// An actor returned an error or panicked, or the run exceeded its time limit.
    #[error("simulation failed (seed {seed}): {message}")]
    Run {
        /// The seed, for reproduction.
        seed: u64,
        /// turmoil's message.
        message: String,
    },
}

impl From<SimError> for SetupError {
    fn from(e: SimError) -> Self {
        match e {
            SimError::Setup(e) => e,
            other => SetupError::Run(Box::new(other)),
        }
    }
}

impl From<SetupError> for SimError {
    fn from(e: SetupError) -> Self {
        SimError::Setup(e)
    }
}
