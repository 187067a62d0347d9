//! Splitting an exploration across machines, and merging the parts.
//!
//! `rp-sim explore --shard I/N` runs every N-th seed of its range (those
//! whose offset from the first seed is I modulo N); `--out FILE` writes what
//! the shard found as a [`ShardFile`]: every violation, every seed's digest,
//! the coverage and operation counts, and each histogram's full contents
//! (every recorded value with its count, so that histograms add exactly).
//! `rp-sim merge FILES…` checks that the files are the N shards of one
//! exploration, each once, and combines them into the [`Exploration`] one
//! unsharded run gives: the same violations, identical histograms, the same
//! coverage and the same digest (`sim/tests/harness/shard.rs` checks it).
//! Only wall time differs; the merged one is the sum of the shards'.

use core::fmt;
use core::str::FromStr;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exploration::{Exploration, SeedRun};
use crate::history::{Api, Digest, Fnv1a};
use crate::path::Path as CallPath;
use crate::stats::{Histograms, Unit};

/// Which part of a seed range one process runs: the seeds whose offset
/// from the first is `index` modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    /// The whole range.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count` (`index < count`, `count ≥ 1`).
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::Spec(format!("{index}/{count}")));
        }
        Ok(Shard { index, count })
    }

    /// This shard's index.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many shards there are.
    pub fn count(self) -> u64 {
        self.count
    }

    /// Whether `seed` of a range starting at `start` is this shard's.
    pub fn includes(self, start: u64, seed: u64) -> bool {
        (seed - start) % self.count == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    /// `I/N`, e.g. `0/4` … `3/4` (a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` is the `I`).
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let (i, n) = s.split_once('/').ok_or_else(|| ShardError::Spec(s.to_string()))?;
        let parse = |v: &str| v.trim().parse::<u64>().map_err(|_| ShardError::Spec(s.to_string()));
        Shard::new(parse(i)?, parse(n)?)
    }
}

/// Why shard files could not be read or merged.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N` with `0 ≤ I < N`.
    #[error("--shard expects I/N with 0 <= I < N (e.g. 0/4), got {0:?}")]
    Spec(String),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A file is not a shard file of this format.
    #[error("{}: not an rp-sim shard file: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What serde said.
        source: serde_json::Error,
    },
    /// The files are not the shards of one exploration, each exactly once.
    #[error("cannot merge: {0}")]
    Mismatch(String),
}

/// What one shard found, in full: the file `explore --out` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardFile {
    /// Format version (2: histograms carry their units).
    pub format: u32,
    /// The experiment's name (a registered scenario's, or a user's).
    pub scenario: String,
    /// First seed of the whole range.
    pub start_seed: u64,
    /// Seeds in the whole range (every shard's together).
    pub range: u64,
    /// Which shard.
    pub shard: Shard,
    /// Every seed this shard ran, with its history digest.
    pub runs: Vec<SeedRun>,
    /// Seeds that violated something, with their violations.
    pub violating: Vec<crate::exploration::SeedReport>,
    /// Each histogram's recorded values and their counts.
    pub histograms: BTreeMap<String, Vec<(u64, u64)>>,
    /// Each histogram's unit.
    pub units: BTreeMap<String, Unit>,
    /// Situation → seeds that reached it.
    pub coverage: BTreeMap<String, u64>,
    /// Library operation → invocations.
    pub operations: BTreeMap<Api, u64>,
    /// Operation → path → seeds that took it; absent in files written
    /// before paths were counted.
    #[serde(default)]
    pub paths: BTreeMap<Api, BTreeMap<CallPath, u64>>,
    /// Simulated time over every seed (ms).
    pub simulated_ms: u64,
    /// Events over every seed.
    pub events: u64,
    /// The shard's wall time (s).
    pub wall_seconds: f64,
    /// Its jobs' wall times added up (s); absent in files written before
    /// `--jobs`, whose busy time is their wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_seconds: Option<f64>,
    /// How many jobs it ran at once; absent before `--jobs` (one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u32>,
}

impl ShardFile {
    /// The file form of `ex`, shard `shard` of a range of `range` seeds.
    pub fn of(ex: &Exploration, shard: Shard, range: u64) -> ShardFile {
        ShardFile {
            format: 2,
            scenario: ex.scenario.clone(),
            start_seed: ex.start_seed,
            range,
            shard,
            runs: ex.runs.clone(),
            violating: ex.violating.clone(),
            histograms: ex.histograms.counts(),
            units: ex.histograms.units(),
            coverage: ex.coverage.clone(),
            operations: ex.operations.clone(),
            paths: ex.paths.clone(),
            simulated_ms: ex.simulated_ms,
            events: ex.events,
            wall_seconds: ex.wall.as_secs_f64(),
            busy_seconds: Some(ex.busy.as_secs_f64()),
            jobs: Some(ex.jobs),
        }
    }

    /// Writes it as JSON.
    pub fn write(&self, path: &Path) -> Result<(), ShardError> {
        let io = |source| ShardError::Io { path: path.to_path_buf(), source };
        let json = serde_json::to_vec(self).map_err(|e| io(std::io::Error::other(e)))?;
        std::fs::write(path, json).map_err(io)
    }

    /// Reads one.
    pub fn read(path: &Path) -> Result<ShardFile, ShardError> {
        let bytes = std::fs::read(path).map_err(|source| ShardError::Io { path: path.to_path_buf(), source })?;
        let file: ShardFile =
            serde_json::from_slice(&bytes).map_err(|source| ShardError::Format { path: path.to_path_buf(), source })?;
        if file.format != 2 {
            return Err(ShardError::Mismatch(format!("{}: format {}, not 2", path.display(), file.format)));
        }
        Ok(file)
    }
}

/// Merges the shards of one exploration into what one unsharded run gives.
/// The files carry everything a merge needs, so any experiment's shards
/// merge (the command line looks the scenario up afterwards, to print it).
pub fn merge(files: &[ShardFile]) -> Result<Exploration, ShardError> {
    let first = files.first().ok_or_else(|| ShardError::Mismatch("no shard files".into()))?;
    let count = first.shard.count;
    let mut seen = vec![false; count as usize];
    for f in files {
        if (f.scenario.as_str(), f.start_seed, f.range, f.shard.count)
            != (first.scenario.as_str(), first.start_seed, first.range, count)
        {
            return Err(ShardError::Mismatch(format!(
                "shard {} is of {} seeds {}..+{} in {} shards, shard {} of {} seeds {}..+{} in {count}",
                f.shard,
                f.scenario,
                f.start_seed,
                f.range,
                f.shard.count,
                first.shard,
                first.scenario,
                first.start_seed,
                first.range
            )));
        }
        let slot = &mut seen[f.shard.index as usize];
        if *slot {
            return Err(ShardError::Mismatch(format!("shard {} given twice", f.shard)));
        }
        *slot = true;
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(ShardError::Mismatch(format!("shard {missing}/{count} is missing")));
    }
    let mut runs: Vec<SeedRun> = files.iter().flat_map(|f| f.runs.iter().copied()).collect();
    runs.sort_by_key(|r| r.seed);
    let mut violating: Vec<_> = files.iter().flat_map(|f| f.violating.iter().cloned()).collect();
    violating.sort_by_key(|s| s.seed);
    let mut histograms = Histograms::new();
    let mut coverage = BTreeMap::new();
    let mut operations = BTreeMap::new();
    let mut paths: BTreeMap<Api, BTreeMap<CallPath, u64>> = BTreeMap::new();
    for f in files {
        histograms.merge(&Histograms::from_counts(&f.histograms, &f.units).map_err(ShardError::Mismatch)?);
        for (k, n) in &f.coverage {
            *coverage.entry(k.clone()).or_insert(0) += n;
        }
        for (k, n) in &f.operations {
            *operations.entry(k.clone()).or_insert(0) += n;
        }
        for (api, by) in &f.paths {
            for (p, n) in by {
                *paths.entry(api.clone()).or_default().entry(*p).or_insert(0) += n;
            }
        }
    }
    let seconds = |s: f64| Duration::from_secs_f64(s.max(0.0));
    Ok(Exploration {
        scenario: first.scenario.clone(),
        start_seed: first.start_seed,
        seeds: runs.len() as u64,
        digest: digest_of(&runs),
        runs,
        violating,
        histograms,
        // Shards run on separate machines (or at separate times): their
        // wall times add up, as their jobs do.
        wall: files.iter().map(|f| seconds(f.wall_seconds)).sum(),
        // A file from before `--jobs` has no busy time: one job's busy
        // time is its wall time.
        busy: files.iter().map(|f| seconds(f.busy_seconds.unwrap_or(f.wall_seconds))).sum(),
        jobs: files.iter().map(|f| f.jobs.unwrap_or(1)).sum(),
        // Other machines' CPU numbers say nothing here.
        cpus: Vec::new(),
        simulated_ms: files.iter().map(|f| f.simulated_ms).sum(),
        events: files.iter().map(|f| f.events).sum(),
        coverage,
        operations,
        paths,
        // Shards are explorations of the simulation: no jitter to weigh.
        within_jitter: BTreeMap::new(),
        jitter: None,
    })
}

/// The exploration digest: every seed's history digest, in seed order.
pub(crate) fn digest_of(runs: &[SeedRun]) -> Digest {
    let mut digest = Fnv1a::default();
    for r in runs {
        digest.write(format!("{} {}\n", r.seed, r.digest).as_bytes());
    }
    Digest(digest.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_a_range() {
        assert_eq!("1/3".parse::<Shard>().unwrap(), Shard::new(1, 3).unwrap());
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (0..3).map(|i| Shard::new(i, 3).unwrap()).collect();
        for seed in 100..130 {
            assert_eq!(shards.iter().filter(|s| s.includes(100, seed)).count(), 1);
        }
        assert!(Shard::WHOLE.includes(5, 9));
    }
}
