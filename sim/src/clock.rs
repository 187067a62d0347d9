//! `ServerClock`: the harness' hand on a redis-server's wall clock.
//!
//! Each server started by the harness has the clock library
//! (`sim/clock/rp_clock.c`) preloaded and its own 16-byte control file,
//! shared with it through `mmap`:
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..8 | `pin_ns` (i64) | non-zero: the server's `CLOCK_REALTIME` *is* this instant (ns since the Unix epoch) |
//! | 8..16 | `offset_ns` (i64) | otherwise: real time plus this offset |
//!
//! The bridge pins the clock to simulated time before every command it
//! forwards, so TTL expiry, `PTTL`, `TIME` and Lua `redis.call('TIME')`
//! follow the simulation exactly. Tier 2 (live) uses offsets: a clock step
//! on a running server. Monotonic clocks are never touched.
//!
//! Each word is written with one atomic store and read with one atomic load
//! on the C side, so the server never sees a torn value. Switching from a
//! pin to an offset writes the offset first and clears the pin second, so
//! the server never sees "no pin" paired with a stale offset.
//!
//! This is set-up code outside the simulation; it uses `std` freely.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use core::time::Duration;

/// The environment variable through which the clock library finds its control file.
pub const CLOCK_FILE_ENV: &str = "RP_CLOCK_FILE";

const CONTROL_LEN: usize = 16;
const NS_PER_MS: i64 = 1_000_000;

/// A memory-mapped control file for one server's clock (see the module docs).
///
/// Dropping it unmaps and deletes the file; a server still running with it
/// keeps its own mapping and stays at the last pin or offset.
#[derive(Debug)]
pub struct ServerClock {
    path: PathBuf,
    base: *mut AtomicI64,
    // Keeps the descriptor open for the life of the mapping (not required by
    // POSIX, but it makes the ownership obvious).
    _file: File,
}

// SAFETY: the mapping is only ever accessed through `AtomicI64` operations,
// which are safe to perform from any thread; the pointer itself is never
// handed out.
unsafe impl Send for ServerClock {}
// SAFETY: as above; `&ServerClock` only allows atomic loads and stores.
unsafe impl Sync for ServerClock {}

impl ServerClock {
    /// Creates a fresh control file (real time: both words zero) in the
    /// system temporary directory and maps it.
    pub fn create() -> std::io::Result<ServerClock> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("rp-clock-{}-{n}", std::process::id()));
        ServerClock::create_at(&path)
    }

    /// Creates (or truncates) the control file at `path` and maps it.
    pub fn create_at(path: &Path) -> std::io::Result<ServerClock> {
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        file.write_all(&[0u8; CONTROL_LEN])?;
        file.flush()?;
        // SAFETY: a fresh shared read-write mapping of a 16-byte file we own;
        // the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                CONTROL_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(path);
            return Err(err);
        }
        Ok(ServerClock { path: path.to_path_buf(), base: ptr.cast::<AtomicI64>(), _file: file })
    }

    /// The control file, for the server's `RP_CLOCK_FILE` environment variable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `(name, value)` environment pair a server needs to find this file.
    pub fn env(&self) -> (String, String) {
        (CLOCK_FILE_ENV.to_string(), self.path.to_string_lossy().into_owned())
    }

    fn pin_word(&self) -> &AtomicI64 {
        // SAFETY: `base` points at a live 16-byte, 8-aligned (page-aligned)
        // mapping owned by `self`; word 0 is in bounds.
        unsafe { &*self.base }
    }

    fn offset_word(&self) -> &AtomicI64 {
        // SAFETY: as in `pin_word`; word 1 (bytes 8..16) is in bounds.
        unsafe { &*self.base.add(1) }
    }

    /// Freezes the server's wall clock at `unix_ms` milliseconds since the
    /// Unix epoch, until the next call. (`0` would mean "not pinned", so it
    /// is stored as 1 ns.)
    pub fn pin(&self, unix_ms: u64) {
        self.pin_ns(i64::try_from(unix_ms).unwrap_or(i64::MAX / NS_PER_MS).saturating_mul(NS_PER_MS));
    }

    /// Freezes the clock at `since_epoch` (nanosecond precision).
    pub fn pin_at(&self, since_epoch: Duration) {
        self.pin_ns(i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX));
    }

    fn pin_ns(&self, ns: i64) {
        self.pin_word().store(ns.max(1), Ordering::Release);
    }

    /// Runs the clock at real time plus `ms` (negative: behind), unpinned.
    pub fn offset(&self, ms: i64) {
        self.offset_word().store(ms.saturating_mul(NS_PER_MS), Ordering::Release);
        self.pin_word().store(0, Ordering::Release);
    }

    /// Back to real time: no pin, no offset.
    pub fn release(&self) {
        self.offset(0);
    }

    /// The pinned instant in ns since the epoch, if pinned.
    pub fn pinned_ns(&self) -> Option<i64> {
        match self.pin_word().load(Ordering::Acquire) {
            0 => None,
            ns => Some(ns),
        }
    }

    /// The offset in ms applied while not pinned.
    pub fn offset_ms(&self) -> i64 {
        self.offset_word().load(Ordering::Acquire) / NS_PER_MS
    }
}

impl Drop for ServerClock {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping created in `create_at`; no reference
        // into it outlives `self`.
        unsafe {
            libc::munmap(self.base.cast(), CONTROL_LEN);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
