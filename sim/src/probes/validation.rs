//! The validation probe: configuration values on both sides of every
//! documented edge, tried on the production constructors.
//!
//! Faults never reach a constructor, and a workload built with comfortable
//! settings never comes near an edge; a `>` that became `>=` in a
//! validation passes every run. Each correct family calls its part of the
//! probe once per run (with values drawn from the seed around the edge),
//! records every answer as an [`Op::Validated`], and `input-validation`
//! states the rule each answer must follow.

use core::num::NonZeroU32;
use core::time::Duration;
use rand::rngs::StdRng;
use rand::Rng;
use redis_primitives::election::Election;
use redis_primitives::rate_limit::Limit;
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig, RefusalReason, OWNER_BYTES};
use redis_primitives::{
    Acknowledgement, CompareCommands, Drift, Error, FencedStore, KeepAlive, Lock, OwnerSource, Retry, Tokens, Ttl,
};

use crate::history::{KeyText, KeyedOn, Op, Validation};
use crate::net::SimConnection;
use crate::world::Actor;

const MS: u128 = 1_000_000;

fn record<T>(actor: &Actor, case: Validation, r: &Result<T, Error>) {
    let (accepted, invalid, refusal) = match r {
        Ok(_) => (true, false, None),
        Err(e) => (false, matches!(e, Error::InvalidInput { .. }), Some(without_run_ids(&e.to_string()))),
    };
    actor.observe(Op::Validated { case, accepted, invalid, refusal });
}

/// `ms` milliseconds and `extra_ns` nanoseconds: a duration off the
/// millisecond when `extra_ns > 0`.
fn ms_and_ns(ms: u64, extra_ns: u32) -> Duration {
    Duration::from_millis(ms) + Duration::from_nanos(u64::from(extra_ns))
}

/// `text` with every server `run_id` (40 hex digits, random per process)
/// masked: a refusal naming one would make the history differ between
/// replays of one seed.
fn without_run_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c.is_ascii_hexdigit()) {
        out.push_str(&rest[..at]);
        let run = rest[at..].find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(rest.len() - at);
        out.push_str(if run == 40 { "<run_id>" } else { &rest[at..at + run] });
        rest = &rest[at + run..];
    }
    out.push_str(rest);
    out
}

fn drift_of(rng: &mut StdRng) -> (u32, u64) {
    (rng.random_range(0..=50), rng.random_range(0..=5))
}

fn drift((per_mille, constant_ms): (u32, u64)) -> Result<Drift, Error> {
    Drift::new(per_mille, Duration::from_millis(constant_ms))
}

/// Usable ms (floor) of `ttl_ms` under `d`, as the checker computes it.
fn usable_ms(ttl_ms: u64, (per_mille, constant_ms): (u32, u64)) -> u64 {
    let ttl = u128::from(ttl_ms) * MS;
    let allowance = ttl * u128::from(per_mille) / 1000 + u128::from(constant_ms) * MS;
    (ttl.saturating_sub(allowance) / MS) as u64
}

/// A drift allowance as `(‰, constant ms)`.
type Drift2 = (u32, u64);
/// Election timing as `(lease, renew, campaign)` ms.
type Timing3 = (u64, u64, u64);

/// Election timing around its edges: renew at, above and below half the
/// usable lease, renew at the lease itself, zero intervals, a lease the
/// drift swallows whole.
pub fn election(actor: &Actor, conn: &SimConnection) -> Result<(), Error> {
    let mut rng = actor.rng_for("validation-election");
    let d = drift_of(&mut rng);
    let lease = rng.random_range(20..=2000u64);
    let half = usable_ms(lease, d) / 2;
    let campaign = rng.random_range(1..=100u64);
    let mut cases = vec![
        (lease, half, campaign),
        (lease, half + 1, campaign),
        (lease, half.saturating_sub(1).max(1), campaign),
        (lease, 0, campaign),
        (lease, lease, campaign),
        (lease, half.max(1), 0),
        (0, 1, campaign),
    ];
    // All of a short lease eaten by the drift's constant part.
    if d.1 > 0 {
        cases.push((d.1, 1, campaign));
    }
    let mut with_drift: Vec<(Drift2, Timing3)> = cases.into_iter().map(|c| (d, c)).collect();
    // Exactly at the edge: no proportional drift and an even constant, so
    // half the usable lease is a whole number of milliseconds.
    let (c, lease) = (2 * rng.random_range(0..=3u64), 2 * rng.random_range(20..=500u64));
    let exact = (lease - c) / 2;
    with_drift.push(((0, c), (lease, exact, campaign)));
    with_drift.push(((0, c), (lease, exact + 1, campaign)));
    for (d, (lease_ms, renew_ms, campaign_ms)) in with_drift {
        let built = Election::builder(conn.clone(), "validation")
            .lease_ttl(Duration::from_millis(lease_ms))
            .renew_interval(Duration::from_millis(renew_ms))
            .campaign_interval(Duration::from_millis(campaign_ms))
            .drift(drift(d)?)
            .build();
        record(actor, Validation::ElectionTiming { lease_ms, renew_ms, campaign_ms, drift: d }, &built);
    }
    // The defaults: renew every third of the lease, campaign as often.
    let lease_ms = rng.random_range(20..=2000u64);
    let built = Election::builder(conn.clone(), "validation")
        .lease_ttl(Duration::from_millis(lease_ms))
        .drift(drift(d)?)
        .build();
    record(actor, Validation::ElectionDefaults { lease_ms, drift: d }, &built);
    let (lock, given) = lock_with_every_setting(conn, &mut rng)?;
    election_on_a_lock(actor, &lock, &given)?;
    if let Ok(e) = &built {
        let third = Duration::from_millis(lease_ms) / 3;
        actor.configured(
            "Election (default intervals)",
            &[
                ("renew_interval", format!("{:?}", e.renew_interval()), format!("{third:?}")),
                ("campaign_interval", format!("{:?}", e.campaign_interval()), format!("{third:?}")),
            ],
        );
    }
    Ok(())
}

/// The settings a lock was built with, as its accessors must report them.
struct Given {
    prefix: String,
    drift: (u32, u64),
    ack: Acknowledgement,
}

/// A lock built with every setting given, each drawn from `rng` and none
/// the default (time-floored tokens, an acknowledgement, a prefix).
fn lock_with_every_setting(conn: &SimConnection, rng: &mut StdRng) -> Result<(Lock<SimConnection>, Given), Error> {
    let prefix = key_text(rng, KeyText::Plain);
    let d = drift_of(rng);
    let ack = Acknowledgement::new(rng.random_range(1..=3), Duration::from_millis(rng.random_range(1..=500)))?;
    let lock = Lock::builder(conn.clone())
        .prefix(prefix.as_str())
        .drift(drift(d)?)
        .acknowledged(ack)
        .tokens(Tokens::TimeFloored)
        .build()?;
    Ok((lock, Given { prefix, drift: d, ack }))
}

/// What `lock`'s accessors report against what it was built with: an
/// accessor is what user code decides with.
fn read_back(actor: &Actor, what: &str, lock: &Lock<SimConnection>, given: &Given) -> Result<(), Error> {
    actor.configured(
        what,
        &[
            ("Lock::key", lock.key("validation")?, format!("{}:{{validation}}", given.prefix)),
            ("Drift::factor_per_mille", lock.drift().factor_per_mille().to_string(), given.drift.0.to_string()),
            (
                "Drift::constant",
                format!("{:?}", lock.drift().constant()),
                format!("{:?}", Duration::from_millis(given.drift.1)),
            ),
            ("Lock::acknowledgement", format!("{:?}", lock.acknowledgement()), format!("{:?}", Some(given.ack))),
            ("Lock::tokens", format!("{:?}", lock.tokens()), format!("{:?}", Tokens::TimeFloored)),
        ],
    );
    Ok(())
}

/// `Election::builder_on(lock, ..)` keeps the lock's prefix, drift,
/// acknowledgement and token issuing: the election's lock must report
/// each of them (a dropped acknowledgement loses a promoted replica's
/// epochs without a word).
fn election_on_a_lock(actor: &Actor, lock: &Lock<SimConnection>, given: &Given) -> Result<(), Error> {
    let election = Election::builder_on(lock, "validation").lease_ttl(Duration::from_millis(1000)).build()?;
    read_back(actor, "Election::builder_on", election.lock(), given)
}

/// `KeepAlive::new` around its edge: an interval just below, at and above
/// the usable TTL of `lock` (whose drift is `d`), and zero.
pub fn keep_alive(actor: &Actor, lock: &Lock<SimConnection>, d: (u32, u64)) -> Result<(), Error> {
    let mut rng = actor.rng_for("validation-keep-alive");
    let ttl_ms = rng.random_range(10..=1000u64);
    let u = usable_ms(ttl_ms, d);
    let ttl = Ttl::from_millis(ttl_ms)?;
    for every_ms in [0, u.saturating_sub(1), u, u + 1] {
        let r = KeepAlive::new(lock, ttl, Duration::from_millis(every_ms));
        record(actor, Validation::KeepAlive { ttl_ms, every_ms, drift: d }, &r);
    }
    Ok(())
}

/// A text of `kind` drawn from `rng`: letters, digits and colons, with a
/// brace at a random place for the brace kinds.
fn key_text(rng: &mut StdRng, kind: KeyText) -> String {
    const PLAIN: &[u8] = b"abcxyz019:";
    let len = rng.random_range(1..=8usize);
    let mut text: String = (0..len).map(|_| char::from(PLAIN[rng.random_range(0..PLAIN.len())])).collect();
    let at = rng.random_range(0..=text.len());
    match kind {
        KeyText::Plain => {}
        KeyText::Empty => text.clear(),
        KeyText::OpenBrace => text.insert(at, '{'),
        KeyText::CloseBrace => text.insert(at, '}'),
    }
    text
}

/// Key prefixes and names, good and bad, on the lock's and the fenced
/// store's key methods; a key that is built must read `prefix:{name}`
/// (the lock's fence key with `:fence` after it).
pub fn key_names(actor: &Actor, conn: &SimConnection) {
    let mut rng = actor.rng_for("validation-key-names");
    let kinds = [KeyText::Plain, KeyText::Empty, KeyText::OpenBrace, KeyText::CloseBrace];
    let mut cases: Vec<(KeyText, KeyText)> = kinds.iter().map(|&k| (k, KeyText::Plain)).collect();
    cases.extend(kinds[1..].iter().map(|&k| (KeyText::Plain, k)));
    for on in [KeyedOn::LockKey, KeyedOn::FenceKey, KeyedOn::StoreKey] {
        for &(prefix_kind, name_kind) in &cases {
            let (prefix, name) = (key_text(&mut rng, prefix_kind), key_text(&mut rng, name_kind));
            let key = match on {
                KeyedOn::LockKey => {
                    Lock::builder(conn.clone()).prefix(prefix.as_str()).build().and_then(|l| l.key(&name))
                }
                KeyedOn::FenceKey => {
                    Lock::builder(conn.clone()).prefix(prefix.as_str()).build().and_then(|l| l.fence_key(&name))
                }
                KeyedOn::StoreKey => {
                    FencedStore::with_prefix(conn.clone(), prefix.as_str()).and_then(|s| s.redis_key(&name))
                }
            };
            record(actor, Validation::KeyName { on, prefix: prefix_kind, name: name_kind }, &key);
            if let Ok(key) = key {
                let suffix = if on == KeyedOn::FenceKey { ":fence" } else { "" };
                actor.configured(
                    &format!("{on:?} of prefix {prefix:?}, name {name:?}"),
                    &[("key", key, format!("{prefix}:{{{name}}}{suffix}"))],
                );
            }
        }
    }
}

/// A lock built with settings the workload's own lock may not use must
/// report each of them back, and so must an election built on it; a lock
/// built with none reports the defaults.
pub fn lock_settings(actor: &Actor, conn: &SimConnection) -> Result<(), Error> {
    let mut rng = actor.rng_for("validation-lock-settings");
    let (lock, given) = lock_with_every_setting(conn, &mut rng)?;
    read_back(actor, "Lock (every setting given)", &lock, &given)?;
    election_on_a_lock(actor, &lock, &given)?;
    // An owner is a capability: its Debug shows only a prefix.
    let owner = OwnerSource::seeded(rng.random()).next_owner(16);
    actor.configured("Owner", &[("Debug", format!("{owner:?}"), format!("Owner({}…)", &owner.as_str()[..8]))]);
    let plain = Lock::new(conn.clone());
    actor.configured(
        "Lock (defaults)",
        &[
            ("Lock::acknowledgement", format!("{:?}", plain.acknowledgement()), "None".to_string()),
            ("Lock::tokens", format!("{:?}", plain.tokens()), format!("{:?}", Tokens::Counter)),
        ],
    );
    Ok(())
}

/// `Ttl::new` and `Acknowledgement::new` at both ends of 1 ..= 2^53 − 1 ms
/// and off the millisecond, and what an accepted one reports; a token's
/// `Display` and `u64`.
pub fn durations(actor: &Actor) {
    let mut rng = actor.rng_for("validation-durations");
    let max = Ttl::MAX_MILLIS;
    let some = rng.random_range(1..=100_000u64);
    let cases = [
        (0, 0),
        (1, 0),
        (some, 0),
        (max, 0),
        (max + 1, 0),
        (u64::MAX, 0),
        (0, rng.random_range(1..1_000_000u32)),
        (some, rng.random_range(1..1_000_000u32)),
    ];
    for (ms, extra_ns) in cases {
        let ttl = Ttl::new(ms_and_ns(ms, extra_ns));
        record(actor, Validation::Ttl { ms, extra_ns }, &ttl);
        if let Ok(t) = ttl {
            actor.configured(
                "Ttl",
                &[
                    ("as_millis", t.as_millis().to_string(), ms.to_string()),
                    ("Display", t.to_string(), format!("{ms} ms")),
                ],
            );
        }
    }
    let replicas = rng.random_range(2..=5u32);
    let acks = [
        (replicas, some, 0),
        (1, 1, 0),
        (1, max, 0),
        (1, max + 1, 0),
        (1, u64::MAX, 0),
        (0, some, 0),
        (replicas, 0, 0),
        (replicas, some, rng.random_range(1..1_000_000u32)),
    ];
    for (replicas, ms, extra_ns) in acks {
        let ack = Acknowledgement::new(replicas, ms_and_ns(ms, extra_ns));
        record(actor, Validation::Acknowledgement { replicas, ms, extra_ns }, &ack);
        if let Ok(a) = ack {
            actor.configured(
                "Acknowledgement",
                &[
                    ("replicas", a.replicas().to_string(), replicas.to_string()),
                    ("timeout", format!("{:?}", a.timeout()), format!("{:?}", Duration::from_millis(ms))),
                ],
            );
        }
    }
    drifts(actor);
    retries(actor);
    let raw = rng.random::<u64>();
    let token = redis_primitives::FencingToken::new(raw);
    actor.configured(
        "FencingToken",
        &[
            ("Display", token.to_string(), raw.to_string()),
            ("u64::from", u64::from(token).to_string(), raw.to_string()),
        ],
    );
}

/// `Drift::new` at both edges of its factor (below 1000‰) and of its
/// constant (at most the longest TTL, to the nanosecond), and what an
/// accepted one reports. Every lease deadline is computed with a drift, so
/// a bound off by one lets a configuration through that leaves no lease
/// usable, or refuses the largest one that is. Its own random stream: the
/// draws of the cases above stay where they were.
fn drifts(actor: &Actor) {
    let mut rng = actor.rng_for("validation-drift");
    let max = Ttl::MAX_MILLIS;
    let (per_mille, constant_ms) = drift_of(&mut rng);
    let cases = [
        (per_mille, constant_ms, rng.random_range(0..1_000_000u32)),
        (999, 0, 0),
        (1000, 0, 0),
        (u32::MAX, constant_ms, 0),
        (per_mille, max, 0),
        (per_mille, max, rng.random_range(1..1_000_000u32)),
    ];
    for (per_mille, constant_ms, extra_ns) in cases {
        let constant = ms_and_ns(constant_ms, extra_ns);
        let d = Drift::new(per_mille, constant);
        record(actor, Validation::Drift { per_mille, constant_ms, extra_ns }, &d);
        if let Ok(d) = d {
            actor.configured(
                "Drift",
                &[
                    ("factor_per_mille", d.factor_per_mille().to_string(), per_mille.to_string()),
                    ("constant", format!("{:?}", d.constant()), format!("{constant:?}")),
                ],
            );
        }
    }
}

/// `Retry::new` with a zero first delay, a cap one nanosecond below,
/// at and above the first delay, and what an accepted one reports.
fn retries(actor: &Actor) {
    let mut rng = actor.rng_for("validation-retry");
    let base_ns = rng.random_range(1..=50_000_000u64);
    let attempts = NonZeroU32::new(rng.random_range(1..=10u32)).unwrap_or(NonZeroU32::MIN);
    let cases = [
        (0, base_ns),
        (base_ns, base_ns - 1),
        (base_ns, base_ns),
        (base_ns, base_ns + rng.random_range(1..=1_000_000_000u64)),
    ];
    for (base_ns, max_ns) in cases {
        let r = Retry::new(attempts, Duration::from_nanos(base_ns), Duration::from_nanos(max_ns));
        record(actor, Validation::Retry { base_ns, max_ns }, &r);
        if let Ok(r) = r {
            actor.configured("Retry", &[("attempts", r.attempts().to_string(), attempts.to_string())]);
        }
    }
}

/// `Retry::new` for a workload's own retry: the retry, or `None` once the
/// refusal is recorded for `input-validation`. A library that refuses a
/// configuration its documentation accepts is a finding, judged like the
/// probe's cases above, not a set-up error that ends the run; the caller
/// skips what it would have retried.
pub fn retry(actor: &Actor, attempts: NonZeroU32, base: Duration, max: Duration) -> Option<Retry> {
    let r = Retry::new(attempts, base, max);
    if r.is_err() {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        record(actor, Validation::Retry { base_ns: ns(base), max_ns: ns(max) }, &r);
    }
    r.ok()
}

/// `Limit::new` around `max × window ≤ 2^52` and its zero cases.
pub fn limits(actor: &Actor) {
    let mut rng = actor.rng_for("validation-limit");
    let k = rng.random_range(0..=52u32);
    let (max, window_ms) = (1u64 << k, 1u64 << (52 - k));
    for (max, window_ms) in [(max, window_ms), (max + 1, window_ms), (max, window_ms + 1), (0, 1000), (5, 0)] {
        record(actor, Validation::Limit { max, window_ms }, &Limit::new(max, Duration::from_millis(window_ms)));
    }
}

/// `check_at` refuses an instant a Lua number cannot hold exactly and
/// takes the largest one it can. The refusals must not reach Redis. The
/// accepted edge, 2^53 − 1, is a real decision on a key of its own: the
/// prober's other instants are ordinary ones, so a bound written `<` where
/// it should be `<=` would pass every run without it. A fault that leaves
/// that call's outcome unknown says nothing about the bound, and is not
/// recorded; any other error is a refusal, judged as one.
pub async fn check_at<F, Fut, T>(actor: &Actor, check_at: F)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    for now_ms in [(1u64 << 53) - 1, 1u64 << 53, u64::MAX] {
        let r = check_at(now_ms).await;
        if matches!(&r, Err(e) if e.outcome_is_unknown()) {
            continue;
        }
        record(actor, Validation::CheckAt { now_ms }, &r);
    }
}

/// `Redlock::connect`'s validation: no masters, a drift as long as the
/// TTL, a master timeout at and just below the TTL, zero timeouts, one
/// master listed twice. The valid cases connect for real.
pub async fn redlock(actor: &Actor, masters: &[SimConnection]) -> Result<(), Error> {
    let mut rng = actor.rng_for("validation-redlock");
    // A whole-millisecond allowance (ttl × ‰ a multiple of 1000), so that
    // `valid_until` falls on a tick and the lease can be read there.
    let ttl_ms = 200 * rng.random_range(1..=5u64);
    let d = (5 * rng.random_range(0..=10u32), rng.random_range(0..=5u64));
    let owners: u64 = rng.random();
    let cases = [
        (0, ttl_ms, d, ttl_ms / 2, 100),
        (masters.len() as u32, ttl_ms, (0, ttl_ms), ttl_ms / 2, 100),
        (masters.len() as u32, ttl_ms, d, 0, 100),
        (masters.len() as u32, ttl_ms, d, ttl_ms, 100),
        (masters.len() as u32, ttl_ms, d, ttl_ms / 2, 0),
        (masters.len() as u32, ttl_ms, d, ttl_ms - 1, 100),
    ];
    let config = |ttl_ms, d, master_timeout_ms, handshake_ms| -> Result<RedlockConfig, Error> {
        Ok(RedlockConfig::new(Ttl::from_millis(ttl_ms)?)
            .drift(drift(d)?)
            .master_timeout(Duration::from_millis(master_timeout_ms))
            .handshake_timeout(Duration::from_millis(handshake_ms)))
    };
    for (n, ttl_ms, d, master_timeout_ms, handshake_ms) in cases {
        let config = config(ttl_ms, d, master_timeout_ms, handshake_ms)?.owners(OwnerSource::seeded(owners));
        let given = masters[..n as usize].to_vec();
        let r = Redlock::connect(given, config).await;
        // A valid configuration connects; a fault in that handshake is not
        // an answer about the configuration.
        if matches!(&r, Err(e) if e.outcome_is_unknown()) {
            continue;
        }
        let case = Validation::Redlock { masters: n, ttl_ms, drift: d, master_timeout_ms, handshake_ms };
        record(actor, case, &r);
        if let Ok(rl) = &r {
            redlock_read_back(actor, rl, &masters[..n as usize], (ttl_ms, d, master_timeout_ms), owners).await?;
        }
    }
    // One server listed twice: refused once both copies told their run_id.
    let twice = vec![masters[0].clone(), masters[1].clone(), masters[0].clone()];
    let r = Redlock::connect(twice, config(ttl_ms, d, ttl_ms / 2, 100)?).await;
    if matches!(&r, Err(e) if e.outcome_is_unknown()) {
        return Ok(());
    }
    let unverified = r.as_ref().is_ok_and(|rl| rl.unverified_masters().iter().any(|&i| i == 0 || i == 2));
    record(actor, Validation::RedlockTwice { unverified }, &r);
    Ok(())
}

/// What a connected Redlock reports against what it was given (`ttl_ms`,
/// drift and master timeout; a drift drawn from the seed, rarely the
/// default the scenario's own Redlock uses), the
/// commands it sends each master against that master's own answer to
/// `COMMAND INFO` (as a single-instance lock asks it), and a granted
/// lease's owner against the first one the seeded source `owners` draws.
async fn redlock_read_back(
    actor: &Actor,
    rl: &Redlock<SimConnection>,
    given: &[SimConnection],
    (ttl_ms, d, master_timeout_ms): (u64, Drift2, u64),
    owners: u64,
) -> Result<(), Error> {
    let dr = drift(d)?;
    actor.configured(
        "Redlock (validation)",
        &[
            ("len", rl.len().to_string(), given.len().to_string()),
            ("is_empty", rl.is_empty().to_string(), given.is_empty().to_string()),
            ("quorum", rl.quorum().to_string(), (given.len() / 2 + 1).to_string()),
            ("ttl", rl.ttl().to_string(), Ttl::from_millis(ttl_ms)?.to_string()),
            ("drift", format!("{:?}", rl.drift()), format!("{dr:?}")),
            (
                "drift_allowance",
                format!("{:?}", rl.drift_allowance()),
                format!("{:?}", dr.allowance(Duration::from_millis(ttl_ms))),
            ),
            (
                "master_timeout",
                format!("{:?}", rl.master_timeout()),
                format!("{:?}", Duration::from_millis(master_timeout_ms)),
            ),
        ],
    );
    let got = rl.compare_commands().await;
    actor.configured("Redlock::compare_commands", &[("answers", got.len().to_string(), given.len().to_string())]);
    let unverified = rl.unverified_masters();
    for (i, (conn, got)) in given.iter().zip(&got).enumerate() {
        // A master left unverified keeps the scripts. Otherwise the
        // master's own answer, when it names a native command: a question
        // that failed (a fault on the link) answers Scripts too.
        let want = if unverified.contains(&i) {
            CompareCommands::Scripts
        } else {
            match Lock::new(conn.clone()).compare_commands().await {
                CompareCommands::Scripts => continue,
                native => native,
            }
        };
        actor.configured(
            &format!("Redlock::compare_commands, master {i}"),
            &[("commands", format!("{got:?}"), format!("{want:?}"))],
        );
    }
    // Under a fault the probe's acquire may be refused: nothing to read.
    if let Ok(Acquisition::Held(lease)) = rl.acquire("validation").await {
        let want = OwnerSource::seeded(owners).next_owner(OWNER_BYTES);
        actor.configured(
            "RedlockLease (validation)",
            &[
                ("owner", lease.owner().as_str().to_string(), want.as_str().to_string()),
                ("name", lease.name().to_string(), "validation".to_string()),
                ("key", lease.key().to_string(), rl.key("validation")?),
                ("is_trusted", lease.is_trusted().to_string(), true.to_string()),
                // The validity less what has passed since T2.
                (
                    "remaining",
                    format!("{:?}", lease.remaining()),
                    format!("{:?}", lease.validity().saturating_sub(lease.acquired_at().elapsed())),
                ),
            ],
        );
        rl.release(&lease).await;
        // From `valid_until` on (at it exactly, unless the actor was paused
        // past it) the lease is no longer trusted. Checked beside the
        // workload, which must not wait for it; a run that ends first drops
        // the check.
        let (a, until) = (actor.clone(), lease.valid_until());
        drop(actor.spawn(async move {
            tokio::time::sleep_until(until).await;
            let at = if until.elapsed().is_zero() { "at valid_until" } else { "after valid_until" };
            a.configured(
                &format!("RedlockLease {at}"),
                &[
                    ("is_trusted", lease.is_trusted().to_string(), false.to_string()),
                    ("remaining", format!("{:?}", lease.remaining()), format!("{:?}", Duration::ZERO)),
                ],
            );
        }));
    }
    // An extend that starts once the validity has passed is refused as
    // `Expired` without asking the masters, whatever they would say: the
    // keys usually outlive the validity by the drift allowance and the
    // round's time, so re-arming them then would revive a lease its
    // holder already had to stop trusting. (Usually only the first case's
    // lease gets this far: the next cases find the name still held.)
    if let Ok(Acquisition::Held(mut lease)) = rl.acquire("validation-expired").await {
        let (a, rl) = (actor.clone(), rl.clone());
        drop(actor.spawn(async move {
            tokio::time::sleep_until(lease.valid_until()).await;
            let outcome = extension_text(&rl.extend(&mut lease).await);
            a.configured("Redlock::extend from valid_until on", &[("outcome", outcome, expired_text())]);
            rl.release(&lease).await;
        }));
    }
    Ok(())
}

/// An extension's outcome as a read-back records it: `Refused(reason)` or
/// `Extended { validity }`.
pub(crate) fn extension_text(extension: &Extension) -> String {
    match extension {
        Extension::Refused(refusal) => format!("Refused({:?})", refusal.reason),
        Extension::Extended { validity } => format!("Extended {{ validity: {validity:?} }}"),
    }
}

/// What [`extension_text`] gives for an extend refused as expired.
pub(crate) fn expired_text() -> String {
    format!("Refused({:?})", RefusalReason::Expired)
}
