//! The smallest use of `Lock`: acquire, use the token, release.
//!
//! `cargo run --example lock` (uses `REDIS_URL`, or starts its own redis-server).

mod support;

use core::time::Duration;

use redis_primitives::{KeepAlive, Lock, LockOutcome, GuardedOutcome, Ttl};

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

    // Or let the lock run a closure and release afterwards.
    if let LockOutcome::Ran { token, released, .. } =
        lock.with_lock("nightly-report", ttl, |_lease| async { /* work */ }).await?
    {
        println!("with_lock ran with token {token}, released: {released}");
    }

    // For work that must stop when the lease can't be trusted any more:
    let policy = KeepAlive::thirds(&lock, ttl)?;
    match lock.with_lock_guarded("nightly-report", policy, |_lease| async { 42 }).await? {
        GuardedOutcome::Completed { output, .. } => println!("guarded body returned {output}"),
        GuardedOutcome::Cancelled { reason, .. } => println!("stopped early: {reason:?}"),
        GuardedOutcome::NotAcquired => println!("busy"),
    }
    Ok(())
}
