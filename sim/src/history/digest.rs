//! A history's digest: a stable 64-bit FNV-1a hash over each event's
//! canonical JSON, the same in every process (no `DefaultHasher`, whose
//! keys are random per process), and the readable timeline.

use core::fmt;

use serde::{Deserialize, Serialize};

use super::{Event, EventKind, Op};

/// A 64-bit history digest, printed as 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Digest(pub u64);

impl Default for Digest {
    /// The digest of an empty history.
    fn default() -> Self {
        digest_events(&[])
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// FNV-1a, 64-bit: tiny, keyless, the same in every process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds bytes.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash so far.
    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

/// Digest of events: FNV-1a over each event's canonical JSON (fields in
/// declaration order; no maps, so no ordering freedom) plus a newline.
pub(crate) fn digest_events(events: &[Event]) -> Digest {
    let mut h = Fnv1a::default();
    for e in events {
        // Serialising plain structs and enums of strings and integers cannot
        // fail; if it ever did, hash the Debug form rather than panic.
        match serde_json::to_vec(e) {
            Ok(bytes) => h.write(&bytes),
            Err(_) => h.write(format!("{e:?}").as_bytes()),
        }
        h.write(b"\n");
    }
    Digest(h.finish())
}

/// A readable timeline: one line per event, time in simulated ms, process,
/// kind, op id and the operation. Faults are marked with `!!` so they stand
/// out; `info` completions (outcome unknown) with `??`.
pub(crate) fn render_timeline(events: &[Event]) -> String {
    let mut out = String::new();
    out.push_str("    time  process      kind      op  operation\n");
    for e in events {
        let mark = match (&e.op, e.kind) {
            (Op::Fault(_), _) => "!!",
            (_, EventKind::Info) => "??",
            _ => "  ",
        };
        out.push_str(&format!("{mark}{e}\n"));
    }
    out
}
