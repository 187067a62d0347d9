//! `Owner`: the secret that proves a lease is yours.
//!
//! Release and extend compare the stored value with the caller's, so the value
//! must be unguessable: 128 bits from a CSPRNG (the thread-local ChaCha RNG of
//! `rand`, seeded from the OS). A fencing token is *not* a secret — it is
//! written to downstream systems — so knowing a token must not be enough to
//! release or extend someone else's lease.
//!
//! The simulation needs the same values on every run of a seed, so
//! [`OwnerSource::Seeded`] draws them from a seeded ChaCha stream instead.
//! That makes owners predictable: it exists for the harness and tests only.

use std::sync::{Arc, Mutex};

use rand::{RngCore, SeedableRng};

/// An ownership value: 16 random bytes, hex-encoded (32 characters).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

impl Owner {
    /// The hex text stored in Redis.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_bytes(bytes: &[u8]) -> Owner {
        use core::fmt::Write;
        let mut s = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            let _ = write!(s, "{b:02x}");
        }
        Owner(s)
    }
}

impl core::fmt::Debug for Owner {
    // Only a prefix: the full value is a capability and does not belong in logs.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Owner({}…)", &self.0[..8.min(self.0.len())])
    }
}

/// Where ownership values come from.
#[derive(Debug, Clone, Default)]
pub enum OwnerSource {
    /// The OS-seeded CSPRNG. The only choice for production.
    #[default]
    Random,
    /// A ChaCha stream seeded with a known value: reproducible, therefore
    /// predictable. For the simulation harness and tests only.
    Seeded(Arc<Mutex<rand::rngs::StdRng>>),
}

impl OwnerSource {
    /// A deterministic source for simulations (see the type docs).
    pub fn seeded(seed: u64) -> OwnerSource {
        OwnerSource::Seeded(Arc::new(Mutex::new(rand::rngs::StdRng::seed_from_u64(seed))))
    }

    /// Draws a fresh value of `bytes` bytes (at least 16).
    pub fn next_owner(&self, bytes: usize) -> Owner {
        let mut buf = vec![0u8; bytes.max(16)];
        match self {
            OwnerSource::Random => rand::rng().fill_bytes(&mut buf),
            // A poisoned mutex only means another thread panicked mid-draw;
            // the RNG state is still a valid stream.
            OwnerSource::Seeded(rng) => match rng.lock() {
                Ok(mut g) => g.fill_bytes(&mut buf),
                Err(p) => p.into_inner().fill_bytes(&mut buf),
            },
        }
        Owner::from_bytes(&buf)
    }
}
