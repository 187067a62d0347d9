//! What the `redlock` scenario exists to reach: its declared situations
//! (Antithesis "sometimes" assertions), each reached by the actors while
//! they run.

use crate::outcome::{Situation, SituationName};

/// Situations the `redlock` scenario exists to reach.
pub(crate) const SITUATIONS: &[Situation] = &[
    Situation {
        name: SituationName::new("acquire-refused-validity-exhausted"),
        meaning: "a majority said yes but the round ate the TTL: refused as too slow",
    },
    Situation {
        name: SituationName::new("minority-master-partitioned-still-granted"),
        meaning: "granted although some master timed out or failed",
    },
    Situation {
        name: SituationName::new("majority-partitioned-refused"),
        meaning: "refused for want of a majority while a majority of masters did not answer",
    },
    Situation {
        name: SituationName::new("extension-confirmed"),
        meaning: "an extend was confirmed by a majority in time",
    },
    Situation {
        name: SituationName::new("extension-refused-after-expiry"),
        meaning: "an extend started after the lease's validity was refused as expired",
    },
    Situation {
        name: SituationName::new("release-after-expiry"),
        meaning: "a lease was released after its validity had passed",
    },
    Situation {
        name: SituationName::new("retry-acquired-after-contention"),
        meaning: "acquire_with_retry got the lock on a later attempt",
    },
    Situation {
        name: SituationName::new("lease-expired-while-paused"),
        meaning: "a holder paused past its validity and found its lease untrusted on resume",
    },
];
