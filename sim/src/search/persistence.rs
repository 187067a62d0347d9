//! proptest failure persistence for the searches: `*.proptest-regressions`
//! files in proptest's own format.

use std::any::Any;
use std::fmt::Debug;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use proptest::test_runner::{FailurePersistence, PersistedSeed};

/// proptest failure persistence in a `*.proptest-regressions` file of its
/// own (proptest's format: `cc <seed> # <comment>`), for one search.
///
/// `load` replays the file's seeds before any new case (standard proptest
/// behaviour); `save` appends a newly found failing seed unless the file
/// already has it, so a deterministic search does not grow the file on
/// every run. [`RegressionFile::only`] restricts loading to one seed, to
/// replay each persisted case on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegressionFile {
    path: PathBuf,
    label: String,
    load: bool,
    save: bool,
    only: Option<String>,
}

impl RegressionFile {
    /// Loads and saves (what a property test wants).
    pub fn new(path: impl Into<PathBuf>, label: impl Into<String>) -> RegressionFile {
        RegressionFile { path: path.into(), label: label.into(), load: true, save: true, only: None }
    }

    /// Saves new failures but replays nothing (a fresh search whose cases
    /// count must not be flattered by known failures).
    pub fn save_only(mut self) -> RegressionFile {
        self.load = false;
        self
    }

    /// Loads only this seed (as written in the file), saves nothing.
    pub fn only(mut self, seed: &PersistedSeed) -> RegressionFile {
        self.only = Some(seed.to_string());
        self.load = true;
        self.save = false;
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every seed in the file, oldest first.
    pub fn seeds(&self) -> Vec<PersistedSeed> {
        let Ok(text) = std::fs::read_to_string(&self.path) else { return Vec::new() };
        text.lines()
            .filter_map(|line| {
                let code = line.split('#').next().unwrap_or("").trim();
                (!code.is_empty()).then(|| code.parse::<PersistedSeed>().ok()).flatten()
            })
            .collect()
    }
}

impl FailurePersistence for RegressionFile {
    fn load_persisted_failures2(&self, _source_file: Option<&'static str>) -> Vec<PersistedSeed> {
        if !self.load {
            return Vec::new();
        }
        let seeds = self.seeds();
        match &self.only {
            Some(only) => seeds.into_iter().filter(|s| &s.to_string() == only).collect(),
            None => seeds,
        }
    }

    fn save_persisted_failure2(
        &mut self,
        _source_file: Option<&'static str>,
        seed: PersistedSeed,
        shrunken_value: &dyn Debug,
    ) {
        if !self.save || self.seeds().contains(&seed) {
            return;
        }
        let mut text = String::new();
        if !self.path.is_file() {
            text.push_str(
                "# Seeds for failure cases proptest has generated in the past. They are\n\
                 # read and these cases re-run before any new case is generated (see\n\
                 # redis_primitives_sim::search::RegressionFile). Commit this file.\n",
            );
        }
        let comment = format!("{shrunken_value:?}").replace(['\n', '\r'], " ");
        text.push_str(&format!("{seed} # {}: shrinks to {comment}\n", self.label));
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            eprintln!("proptest regression file {}: {e}", self.path.display());
        }
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(self.clone())
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other.as_any().downcast_ref::<RegressionFile>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
