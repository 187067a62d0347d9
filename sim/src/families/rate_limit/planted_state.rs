//! What the planter plants at a limiter key ([`PlantedState`]), what the
//! scripts must answer for it ([`Expected`]) and what they did answer
//! ([`PlantedAnswer`]): the data of `super::planted`'s records, kept apart
//! from the actor so that the history's operation type can name them.

use serde::Serialize;

use super::RateLimitVariant;

/// 2^53 − 1: the largest count, bucket index or score the scripts write.
const LARGEST: u64 = (1 << 53) - 1;

/// One state planted at a limiter key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PlantedState {
    /// Counter: `c = -1`.
    CountBelowZero,
    /// Counter: `c = 4.5`.
    CountFractional,
    /// Counter: `c = "x"`.
    CountInText,
    /// Counter: `c = "inf"`.
    CountInfinite,
    /// Counter: `p = 2^53`.
    PreviousPastLargest,
    /// Counter: `i = "abc"`.
    IndexInText,
    /// Counter: `i = -1`.
    IndexBelowZero,
    /// Counter: `i` and `c` without `p`.
    PreviousMissing,
    /// Counter: a hash with none of `i`, `c`, `p`.
    NoFields,
    /// Counter: `c = 0` in the current bucket (accepted: admitted).
    CountZero,
    /// Counter: `c = 2^53 − 1` in the current bucket (accepted: denied).
    CountLargest,
    /// Counter: the current bucket's index spelled `1.7e9` (accepted).
    IndexWithExponent,
    /// Log: a limit's worth of entries scored `now − 0.5`.
    ScoreFractional,
    /// Log: entries scored `+inf`.
    ScoreInfinite,
    /// Log: entries scored 2^53.
    ScorePastLargest,
    /// Log: entries scored −1, decided half a window after the epoch.
    ScoreBelowZero,
    /// Log: entries scored 0, decided half a window after the epoch
    /// (accepted: denied).
    ScoreZero,
    /// Log: entries scored 2^53 − 1 (accepted: denied, a long wait).
    ScoreLargest,
}

/// What a planted state must be answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// `CorruptState` naming the key, and the key left as it was.
    Corrupt,
    /// Admitted.
    Admitted,
    /// Denied, with exactly this wait.
    Denied {
        /// The retry-after the scripts' arithmetic gives, in ms; `None`
        /// when it depends on the instant within the bucket (any positive).
        retry_after_ms: Option<u64>,
    },
}

/// What the limiter answered a planted state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PlantedAnswer {
    /// A decision.
    Decided {
        /// Whether it admitted.
        admitted: bool,
        /// The wait of a denial, ms.
        retry_after_ms: Option<u64>,
    },
    /// `CorruptState`, naming this key.
    Corrupt {
        /// The key named.
        key: String,
    },
    /// Any other error, as displayed.
    Failed {
        /// The error's text (for the report only).
        error: String,
    },
    /// A fault left the outcome unknown: not judged.
    Unknown,
}

const COUNTER: &[PlantedState] = &[
    PlantedState::CountBelowZero,
    PlantedState::CountFractional,
    PlantedState::CountInText,
    PlantedState::CountInfinite,
    PlantedState::PreviousPastLargest,
    PlantedState::IndexInText,
    PlantedState::IndexBelowZero,
    PlantedState::PreviousMissing,
    PlantedState::NoFields,
    PlantedState::CountZero,
    PlantedState::CountLargest,
    PlantedState::IndexWithExponent,
];

const LOG: &[PlantedState] = &[
    PlantedState::ScoreFractional,
    PlantedState::ScoreInfinite,
    PlantedState::ScorePastLargest,
    PlantedState::ScoreBelowZero,
    PlantedState::ScoreZero,
    PlantedState::ScoreLargest,
];

impl PlantedState {
    /// The states planted for `variant`'s key type.
    pub(super) fn of(variant: RateLimitVariant) -> &'static [PlantedState] {
        match variant {
            RateLimitVariant::Counter => COUNTER,
            RateLimitVariant::Log => LOG,
            _ => &[],
        }
    }

    /// The unix-ms instant the call is pinned at, given the server's `now`:
    /// half a window after the epoch for entries scored at or below 0, so
    /// that they are in the window (a score of −1 only from 4 ms windows).
    pub(super) fn pinned(self, now: u64, window_ms: u64) -> Option<u64> {
        match self {
            PlantedState::ScoreBelowZero | PlantedState::ScoreZero => (window_ms >= 4).then_some(window_ms / 2),
            _ => Some(now),
        }
    }

    /// The raw `HSET` or `ZADD` arguments (after the key) that plant it,
    /// for a call pinned at `at` with a limit of `max` per `window_ms`.
    pub(super) fn fields(self, at: u64, max: u64, window_ms: u64) -> Vec<String> {
        let idx = (at / window_ms).to_string();
        let hash = |i: &str, c: &str, p: &str| vec!["i".into(), i.into(), "c".into(), c.into(), "p".into(), p.into()];
        let scored = |score: String| (0..max).flat_map(|m| [score.clone(), format!("m{m}")]).collect();
        match self {
            PlantedState::CountBelowZero => hash(&idx, "-1", "0"),
            PlantedState::CountFractional => hash(&idx, "4.5", "0"),
            PlantedState::CountInText => hash(&idx, "x", "0"),
            PlantedState::CountInfinite => hash(&idx, "inf", "0"),
            PlantedState::PreviousPastLargest => hash(&idx, "1", &(LARGEST + 1).to_string()),
            PlantedState::IndexInText => hash("abc", "1", "0"),
            PlantedState::IndexBelowZero => hash("-1", "1", "0"),
            PlantedState::PreviousMissing => vec!["i".into(), idx, "c".into(), "1".into()],
            PlantedState::NoFields => vec!["x".into(), "1".into()],
            PlantedState::CountZero => hash(&idx, "0", "0"),
            PlantedState::CountLargest => hash(&idx, &LARGEST.to_string(), "0"),
            PlantedState::IndexWithExponent => hash(&format!("{:e}", at / window_ms), "0", "0"),
            PlantedState::ScoreFractional => scored(format!("{}.5", at - 1)),
            PlantedState::ScoreInfinite => scored("+inf".into()),
            PlantedState::ScorePastLargest => scored((LARGEST + 1).to_string()),
            PlantedState::ScoreBelowZero => scored("-1".into()),
            PlantedState::ScoreZero => scored("0".into()),
            PlantedState::ScoreLargest => scored(LARGEST.to_string()),
        }
    }

    /// The documented answer for a call pinned at `at` with `window_ms`.
    pub(crate) fn expected(self, at: u64, window_ms: u64) -> Expected {
        match self {
            PlantedState::CountZero | PlantedState::IndexWithExponent => Expected::Admitted,
            PlantedState::CountLargest => Expected::Denied { retry_after_ms: None },
            // The wait is the window less the time since the entry read.
            PlantedState::ScoreZero => Expected::Denied { retry_after_ms: Some(window_ms - at) },
            PlantedState::ScoreLargest => Expected::Denied { retry_after_ms: Some(window_ms + LARGEST - at) },
            _ => Expected::Corrupt,
        }
    }

    pub(super) fn is_hash(self) -> bool {
        COUNTER.contains(&self)
    }
}
