//! The corruption probe: keys of a correct primitive planted with values
//! the library never writes, to judge the refusals no fault reaches.
//!
//! The nemesis breaks the network and processes, never the data. So the
//! script paths that refuse a broken key (`WRONGTYPE`, `CORRUPT`, the undo
//! of an `INCR` that went past a negative counter), and the exact decimal
//! path of tokens past 2^53, would run in no history, and a bug there would
//! pass every seed. Once the lock workload has healed, the probe plants such
//! values under names nobody else uses, calls the production
//! `Lock::acquire` and `FencedStore::write`, reads the keys back, and
//! records the three as one [`LockOp::StateProbe`]. What each answer must be is
//! the `corrupt-state` checker's business, not the probe's.
//!
//! The numbers are drawn per seed (which negative number, where past
//! 2^53, which power of ten), so a sweep tries many of them. The malformed
//! decimals are few and each is an edge of its own (a leading zero, a sign,
//! a blank, an exponent), so every run tries all of them: drawn one per
//! seed, a parse that took `007` for 7 showed on two seeds in five.

use rand::rngs::StdRng;
use rand::Rng;
use redis::AsyncCommands;
use redis_primitives::{Error, FencedStore, FencingToken, Lock, OwnerSource, Tokens, Ttl, WriteOutcome};

use crate::families::lock::op::{LockOp, Planted, ProbeAfter, ProbeReply};
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// Strings `INCR` refuses as integers (Redis accepts only canonical
/// decimals: no sign but `-`, no leading zero, no blanks).
/// The last is 2^63, one past the largest counter.
const NOT_INTEGERS: &[&str] = &["abc", "1.5", "007", "+5", " 7", "-0", "", "1e3", "12 ", "9223372036854775808"];
/// Token fields the fenced-write script must refuse as non-canonical.
/// The last is 2^64, one past the largest token.
const NOT_CANONICAL: &[&str] = &["007", "abc", "-3", "+4", "1e3", " 5", "00", "", "18446744073709551616"];
/// 2^53: the first integer a Lua number cannot tell from its successor.
const TWO_53: u64 = 1 << 53;

/// What every case works with: the probe's connection, its lock and
/// store, and its RNG stream. The store, lock and connection are declared
/// in the reverse of the order they are made, so they drop as they did
/// when they were the probe's locals.
struct Probe<'a> {
    actor: &'a Actor,
    store: FencedStore<SimConnection>,
    lock: Lock<SimConnection>,
    conn: SimConnection,
    ttl: Ttl,
    rng: StdRng,
    /// How many names the cases have taken.
    names: u32,
}

/// Plants, calls and records every probe case on `node` (see the module docs).
///
/// `tokens` is how the workload's lock issues tokens: the probe's lock
/// issues them the same way, so the script under test is that lock's.
/// The cases run in a fixed order, each drawing from the one stream after
/// the one before.
pub(crate) async fn probe(actor: &Actor, node: usize, tokens: Tokens) -> ActorResult {
    let conn = actor.connection_expecting_errors(node);
    let lock = Lock::builder(conn.clone())
        .owners(OwnerSource::seeded(actor.seed_for("corruption-owners")))
        .tokens(tokens)
        .build()?;
    let store = FencedStore::new(conn.clone());
    let ttl = Ttl::from_millis(1000)?;
    let rng = actor.rng_for("corruption");
    let mut p = Probe { actor, store, lock, conn, ttl, rng, names: 0 };
    p.acquire_over_planted_counters().await;
    p.read_planted_counters().await;
    p.read_planted_leases().await;
    p.read_planted_entries().await;
    p.write_over_planted_entries().await;
    Ok(())
}

/// A name nobody else uses: the next of the probe's `names`.
fn next_name(names: &mut u32) -> String {
    *names += 1;
    format!("probe-corrupt-{names}")
}

impl Probe<'_> {
    /// `Lock::acquire` over counters that are negative, at the limits,
    /// across 2^53, or not integers at all, and over a counter and a lease
    /// of the wrong type.
    async fn acquire_over_planted_counters(&mut self) {
        let (actor, conn, lock, ttl) = (self.actor, &self.conn, &self.lock, self.ttl);
        let rng = &mut self.rng;
        let mut counters = vec![
            format!("-{}", rng.random_range(2..=1_000_000u64)),
            "-1".to_string(),
            i64::MAX.to_string(),
            rng.random_range(0..1000u64).to_string(),
        ];
        // Across 2^53: the acquire script must return the counter exactly.
        let base = TWO_53 - 2 + rng.random_range(0..2);
        counters.extend((0..4).map(|i| (base + i).to_string()));
        counters.extend(NOT_INTEGERS.iter().map(|s| s.to_string()));
        for value in counters {
            let name = next_name(&mut self.names);
            let (lock_key, fence_key) = documented_lock_keys(&name);
            let planted =
                Planted::Counter { lock_key: lock_key.clone(), fence_key: fence_key.clone(), value: value.clone() };
            let set = redis::pipe().del(&lock_key).set(&fence_key, &value).query_async::<()>(&mut conn.clone()).await;
            probe_lock(actor, conn, lock, &name, ttl, planted, set).await;
        }
        let name = next_name(&mut self.names);
        let (lock_key, fence_key) = documented_lock_keys(&name);
        let set = redis::pipe()
            .del(&lock_key)
            .hset(&fence_key, "not", "a counter")
            .query_async::<()>(&mut conn.clone())
            .await;
        probe_lock(actor, conn, lock, &name, ttl, Planted::CounterHash { lock_key, fence_key }, set).await;
        let name = next_name(&mut self.names);
        let (lock_key, fence_key) = documented_lock_keys(&name);
        let set =
            redis::pipe().hset(&lock_key, "not", "a lease").del(&fence_key).query_async::<()>(&mut conn.clone()).await;
        probe_lock(actor, conn, lock, &name, ttl, Planted::LockHash { lock_key, fence_key }, set).await;
    }

    /// `Lock::current_token` over the same kinds of counter (read only).
    async fn read_planted_counters(&mut self) {
        let rng = &mut self.rng;
        let mut reads = vec![
            None,
            Some(rng.random_range(0..1_000_000u64).to_string()),
            Some(i64::MAX.to_string()),
            Some(u64::MAX.to_string()),
            Some(format!("-{}", rng.random_range(1..=1000u64))),
        ];
        reads.extend(NOT_INTEGERS.iter().map(|s| Some(s.to_string())));
        for value in reads {
            let name = next_name(&mut self.names);
            let (_, fence_key) = documented_lock_keys(&name);
            let mut c = self.conn.clone();
            let set = match &value {
                Some(v) => redis::cmd("SET").arg(&fence_key).arg(v).query_async::<()>(&mut c).await,
                None => redis::cmd("DEL").arg(&fence_key).query_async::<()>(&mut c).await,
            };
            if set.is_err() {
                continue;
            }
            let reply = match self.lock.current_token(&name).await {
                Ok(Some(t)) => ProbeReply::Token(t.get()),
                Ok(None) => ProbeReply::Nothing,
                Err(e) => reply_of(e),
            };
            self.actor.observe(LockOp::StateProbe {
                planted: Planted::CounterRead { fence_key, value },
                reply,
                after: None,
            });
        }
    }

    /// `Lock::remaining_ttl` over no lease, a lease without expiry, and
    /// one with a drawn expiry.
    async fn read_planted_leases(&mut self) {
        for planted in [None, Some(None), Some(Some(self.rng.random_range(50..=5000u64)))] {
            let name = next_name(&mut self.names);
            let (lock_key, _) = documented_lock_keys(&name);
            let mut c = self.conn.clone();
            let set = match planted {
                Some(Some(ms)) => {
                    redis::cmd("SET").arg(&lock_key).arg("someone").arg("PX").arg(ms).query_async::<()>(&mut c).await
                }
                Some(None) => redis::cmd("SET").arg(&lock_key).arg("someone").query_async::<()>(&mut c).await,
                None => redis::cmd("DEL").arg(&lock_key).query_async::<()>(&mut c).await,
            };
            if set.is_err() {
                continue;
            }
            let reply = match self.lock.remaining_ttl(&name).await {
                Ok(Some(d)) => ProbeReply::Remaining(d.as_millis() as u64),
                Ok(None) => ProbeReply::Nothing,
                Err(e) => reply_of(e),
            };
            self.actor.observe(LockOp::StateProbe {
                planted: Planted::LeaseRead { lock_key, expiry: planted },
                reply,
                after: None,
            });
        }
    }

    /// Reads of the store: an entry never written, a whole one, and ones
    /// this library cannot have written (half an entry, every malformed
    /// token).
    async fn read_planted_entries(&mut self) {
        let t = self.rng.random_range(1..=u64::MAX).to_string();
        let mut reads = vec![
            (None, None),
            (Some(t.clone()), Some("planted".to_string())),
            // Token 0 is a valid write (a token from another system may start
            // there), so "0" is canonical: the one-digit edge of the parse.
            (Some("0".to_string()), Some("planted".to_string())),
            (Some(t), None),
            (None, Some("planted".to_string())),
        ];
        reads.extend(NOT_CANONICAL.iter().map(|bad| (Some(bad.to_string()), Some("planted".to_string()))));
        for (token, value) in reads {
            let name = next_name(&mut self.names);
            let key = format!("fenced:{{{name}}}");
            let mut c = self.conn.clone();
            let mut plant = redis::pipe();
            plant.del(&key);
            if let Some(t) = &token {
                plant.hset(&key, "token", t);
            }
            if let Some(v) = &value {
                plant.hset(&key, "value", v);
            }
            if plant.query_async::<()>(&mut c).await.is_err() {
                continue;
            }
            let reply = match self.store.read(&name).await {
                Ok(Some(s)) => {
                    ProbeReply::Stored { token: s.token.get(), value: String::from_utf8_lossy(&s.value).into_owned() }
                }
                Ok(None) => ProbeReply::Nothing,
                Err(e) => reply_of(e),
            };
            self.actor.observe(LockOp::StateProbe {
                planted: Planted::StoredRead { key, token, value },
                reply,
                after: None,
            });
        }
    }

    /// `FencedStore::write` over entries whose token is just above or below
    /// the write's (across a power of ten, around 2^53, at `u64::MAX`), or
    /// malformed; each entry read back after the write.
    async fn write_over_planted_entries(&mut self) {
        for (token, write) in self.draw_entries_to_write() {
            let name = next_name(&mut self.names);
            // The documented layout, not `redis_key`: a store that wrote
            // somewhere else would miss the planted entry.
            let key = format!("fenced:{{{name}}}");
            let set = redis::cmd("HSET")
                .arg(&key)
                .arg("token")
                .arg(&token)
                .arg("value")
                .arg("planted")
                .query_async::<()>(&mut self.conn.clone())
                .await;
            let planted = Planted::StoredToken { key: key.clone(), token, write };
            if set.is_err() {
                continue;
            }
            let reply = match self.store.write(&name, "probe", FencingToken::new(write)).await {
                Ok(WriteOutcome::Accepted) => ProbeReply::Accepted,
                Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
                    ProbeReply::Rejected { highest_seen: highest_seen.get() }
                }
                Err(e) => reply_of(e),
            };
            let after = redis::cmd("HMGET")
                .arg(&key)
                .arg("token")
                .arg("value")
                .query_async::<(Option<String>, Option<String>)>(&mut self.conn.clone())
                .await
                .ok()
                .map(|(token, value)| ProbeAfter { token, value, ..ProbeAfter::default() });
            self.actor.observe(LockOp::StateProbe { planted, reply, after });
        }
    }

    /// The (planted token, written token) pairs of
    /// [`Probe::write_over_planted_entries`].
    fn draw_entries_to_write(&mut self) -> Vec<(String, u64)> {
        let rng = &mut self.rng;
        let big = TWO_53 + rng.random_range(0..4);
        let small = rng.random_range(1..1000u64);
        // Across a power of ten (drawn last: the draws above stay as they
        // were): compared as text, 9 would read as newer than 10.
        let power = 10u64.pow(rng.random_range(1..=19));
        let mut stores = vec![
            (power.to_string(), power - 1),
            ((power - 1).to_string(), power),
            ("0".to_string(), rng.random_range(0..3)),
            (small.to_string(), small - 1),
            (small.to_string(), small),
            (big.to_string(), big - 1),
            (big.to_string(), big + 1),
            (u64::MAX.to_string(), u64::MAX - 1),
            ((u64::MAX - 1).to_string(), u64::MAX),
        ];
        // A malformed token field must be refused, whatever the written token;
        // the write is chosen longer than the malformed text, so a store that
        // skipped the check would accept it (a length-first comparison) rather
        // than refuse it by luck.
        for bad in NOT_CANONICAL {
            let jitter = rng.random_range(0..1000);
            let longer = 10u64.checked_pow(bad.len() as u32 + 1).map_or(u64::MAX - jitter, |p| p + jitter);
            stores.push((bad.to_string(), longer));
        }
        stores
    }
}

/// One lock case: `set` planted it (a failed plant is skipped), then
/// `Lock::acquire`, then the two keys read back.
async fn probe_lock(
    actor: &Actor,
    conn: &SimConnection,
    lock: &Lock<SimConnection>,
    name: &str,
    ttl: Ttl,
    planted: Planted,
    set: redis::RedisResult<()>,
) {
    if set.is_err() {
        return;
    }
    let before = unix_us();
    let reply = match lock.acquire(name, ttl).await {
        Ok(Some(lease)) => ProbeReply::Token(lease.token().get()),
        Ok(None) => ProbeReply::NotAcquired,
        Err(e) => reply_of(e),
    };
    // A floored lock's token depends on the server's clock: say when it ran.
    let planted = match planted {
        Planted::Counter { lock_key, fence_key, value } if lock.tokens() == Tokens::TimeFloored => {
            Planted::FlooredCounter { lock_key, fence_key, value, window_us: (before, unix_us()) }
        }
        other => other,
    };
    let (lock_key, fence_key) = match &planted {
        Planted::Counter { lock_key, fence_key, .. }
        | Planted::FlooredCounter { lock_key, fence_key, .. }
        | Planted::CounterHash { lock_key, fence_key }
        | Planted::LockHash { lock_key, fence_key } => (lock_key.clone(), fence_key.clone()),
        _ => return,
    };
    let after = async {
        let lock = read_key(conn, &lock_key).await?;
        let counter = read_key(conn, &fence_key).await?;
        Ok::<_, redis::RedisError>(ProbeAfter { lock, counter, ..ProbeAfter::default() })
    }
    .await
    .ok();
    actor.observe(LockOp::StateProbe { planted, reply, after });
}

/// Simulated unix time in µs: what the bridge pins the server's clock to
/// (live, what the server's offset clock reads about now).
fn unix_us() -> u64 {
    turmoil::since_epoch().or_else(crate::live::since_epoch).map_or(0, |d| d.as_micros() as u64)
}

/// The keys `Lock` documents for `name` with its default prefix:
/// `lock:{name}` and `lock:{name}:fence`. Spelled out here rather than
/// asked of the library, so a lock that used other keys would miss what the
/// probe planted.
fn documented_lock_keys(name: &str) -> (String, String) {
    (format!("lock:{{{name}}}"), format!("lock:{{{name}}}:fence"))
}

/// A key as [`ProbeAfter`] shows it: a string's value, `<type>` otherwise.
async fn read_key(conn: &SimConnection, key: &str) -> redis::RedisResult<Option<String>> {
    let mut c = conn.clone();
    let kind: String = redis::cmd("TYPE").arg(key).query_async(&mut c).await?;
    match kind.as_str() {
        "none" => Ok(None),
        "string" => c.get(key).await,
        other => Ok(Some(format!("<{other}>"))),
    }
}

fn reply_of(e: Error) -> ProbeReply {
    match e {
        Error::CorruptState { key, detail } => ProbeReply::CorruptState { key, detail },
        Error::WrongType { key, .. } => ProbeReply::WrongType { key },
        e if e.outcome_is_unknown() => ProbeReply::Unknown(e.to_string()),
        e => ProbeReply::Error(e.to_string()),
    }
}
