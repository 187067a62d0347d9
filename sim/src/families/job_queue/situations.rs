//! What `job-queue` exists to reach: its declared situations (Antithesis
//! "sometimes" assertions), recognised by its checks in the history.

use crate::outcome::{Situation, SituationName};

/// The probe refused a corrupt key as documented (`super::probe`).
pub(crate) const PROBE_CORRUPT_REFUSED: SituationName = SituationName::new("probe-corrupt-key-refused");
/// The probe refused a key of another type as documented.
pub(crate) const PROBE_WRONG_TYPE_REFUSED: SituationName = SituationName::new("probe-wrong-type-refused");
/// The probe's enqueue of a known id answered `AlreadyKnown`, unchanged.
pub(crate) const PROBE_ALREADY_KNOWN: SituationName = SituationName::new("probe-already-known-unchanged");
/// The probe's claim from another queue was refused unsent.
pub(crate) const PROBE_FOREIGN_CLAIM_REFUSED: SituationName =
    SituationName::new("probe-claim-of-another-queue-refused");
/// The probe's lease past the longest was refused unsent.
pub(crate) const PROBE_LEASE_REFUSED: SituationName = SituationName::new("probe-lease-past-the-longest-refused");

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
        name: PROBE_CORRUPT_REFUSED,
        meaning: "the probe planted a job-queue key holding what the library never writes; the call was refused with CorruptState naming it, and the keys were unchanged",
    },
    Situation {
        name: PROBE_WRONG_TYPE_REFUSED,
        meaning: "the probe planted a key of another type; the call was refused with WrongType, and the keys were unchanged",
    },
    Situation {
        name: PROBE_ALREADY_KNOWN,
        meaning: "an enqueue of an id the queue knows answered AlreadyKnown and changed nothing",
    },
    Situation {
        name: PROBE_FOREIGN_CLAIM_REFUSED,
        meaning: "a claim handed to another queue's complete or extend was refused with InvalidInput, nothing changed",
    },
    Situation {
        name: PROBE_LEASE_REFUSED,
        meaning: "a claim asking for a lease past the longest (2^52 ms) was refused with InvalidInput, nothing changed",
    },
    Situation {
        name: SituationName::new("state-read-overlapped-write"),
        meaning:
            "a job's state was read while another actor's claim, extension, completion or reap of it was in flight",
    },
];
