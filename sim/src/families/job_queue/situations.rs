//! What `job-queue` exists to reach: its declared situations (Antithesis
//! "sometimes" assertions), recognised by its checks in the history.

use crate::outcome::{Situation, SituationName};

/// The situations `job-queue` exists to reach.
pub(crate) const SITUATIONS: &[Situation] = &[
    Situation {
        name: SituationName::new("lapsed-lease-reaped"),
        meaning: "a reap returned a job whose lease had lapsed to the queue",
    },
    Situation {
        name: SituationName::new("job-run-twice"),
        meaning: "a job was claimed again while its first worker still had it",
    },
    Situation {
        name: SituationName::new("stale-completion-refused"),
        meaning: "a worker's completion was refused: its attempt was stale",
    },
    Situation { name: SituationName::new("claim-extended"), meaning: "a worker extended its claim's lease" },
    Situation {
        name: SituationName::new("stale-extend-refused"),
        meaning: "an extension of a claim whose job had been reaped was refused",
    },
    Situation {
        name: SituationName::new("claim-found-nothing-after-an-enqueue"),
        meaning: "a claim returned None after a job had entered the queue (judged: no job was definitely pending)",
    },
    Situation {
        name: SituationName::new("state-read-overlapped-write"),
        meaning:
            "a job's state was read while another actor's claim, extension, completion or reap of it was in flight",
    },
];
