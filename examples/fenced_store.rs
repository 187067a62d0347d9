//! The smallest use of `FencedStore`: writes carry the lease's token, and a
//! write from a holder whose lease has been superseded is refused.
//!
//! `cargo run --example fenced_store` (uses `REDIS_URL`, or starts its own redis-server).

mod support;

use core::time::Duration;

use redis_primitives::{FencedStore, Lock, Ttl, WriteOutcome};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_redis, conn) = support::connect().await?;
    let lock = Lock::new(conn.clone());
    let store = FencedStore::new(conn);

    let old = lock.acquire("ledger", Ttl::new(Duration::from_millis(100))?).await?.ok_or("lock busy")?;
    tokio::time::sleep(Duration::from_millis(150)).await; // the old holder stalls; its lease expires
    let new = lock.acquire("ledger", Ttl::new(Duration::from_secs(5))?).await?.ok_or("lock busy")?;

    println!("new holder: {:?}", store.write("balance", b"100", new.token()).await?);
    match store.write("balance", b"90", old.token()).await? {
        WriteOutcome::Accepted => println!("stale write accepted (this should not happen)"),
        WriteOutcome::Rejected { rejected_token, highest_seen } => {
            println!("stale write refused: token {rejected_token} < {highest_seen}")
        }
    }
    Ok(())
}
