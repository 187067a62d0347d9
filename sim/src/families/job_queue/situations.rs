//! What `job-queue` exists to reach: its declared situations (Antithesis
//! "sometimes" assertions), recognised by its checks in the history.

use crate::outcome::Situation;

/// The situations `job-queue` exists to reach.
pub const SITUATIONS: &[Situation] = &[
    Situation { name: "lapsed-lease-reaped", meaning: "a reap returned a job whose lease had lapsed to the queue" },
    Situation { name: "job-run-twice", meaning: "a job was claimed again while its first worker still had it" },
    Situation { name: "stale-completion-refused", meaning: "a worker's completion was refused: its attempt was stale" },
    Situation { name: "claim-extended", meaning: "a worker extended its claim's lease" },
    Situation {
        name: "stale-extend-refused",
        meaning: "an extension of a claim whose job had been reaped was refused",
    },
];
