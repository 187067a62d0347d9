//! The smallest use of `Lock`: acquire, use the token, release.
//!
//! `cargo run --example lock` (uses `REDIS_URL`, or starts its own redis-server).

mod support;

use core::time::Duration;

use redis_primitives::{GuardedOutcome, KeepAlive, Lock, LockOutcome, Release, Ttl};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_redis, conn) = support::connect().await?;
    let lock = Lock::new(conn);
    let ttl = Ttl::new(Duration::from_secs(5))?;

    // One attempt; `None` means someone else holds it.
    match lock.acquire("nightly-report", ttl).await? {
        Some(lease) => {
            println!("acquired with fencing token {}", lease.token());
            // ... pass lease.token() to every resource you write ...
            println!("released: {}", lock.release(&lease).await?);
        }
        None => println!("someone else is running the report"),
    }

    // Or let the lock run a closure and release afterwards. Once the body
    // has run, its output comes back whatever the release did.
    if let LockOutcome::Ran { output, token, release } =
        lock.with_lock("nightly-report", ttl, |_lease| async { "report written" }).await?
    {
        match release {
            Release::Released => println!("with_lock ran with token {token}: {output}; released"),
            Release::AlreadyGone => println!("{output}, but the lease expired first: rely on fencing"),
            Release::Unknown(e) => println!("{output}; release unconfirmed ({e}), the lease expires by itself"),
        }
    }

    // For work that must stop when the lease can't be trusted any more:
    let policy = KeepAlive::thirds(&lock, ttl)?;
    match lock.with_lock_guarded("nightly-report", policy, |_lease| async { 42 }).await? {
        GuardedOutcome::Completed { output, release, .. } => {
            println!("guarded body returned {output}; released: {}", release.is_released())
        }
        GuardedOutcome::Cancelled { reason, .. } => println!("stopped early: {reason:?}"),
        GuardedOutcome::NotAcquired => println!("busy"),
    }
    Ok(())
}
