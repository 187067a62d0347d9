//! The smallest use of `Election`: two nodes, one leads; `stop()` hands over
//! at once, and the new leader's epoch (a fencing token) is higher.
//!
//! `cargo run --example election` (uses `REDIS_URL`, or starts its own redis-server).

mod support;

use core::time::Duration;

use redis_primitives::election::Election;
use tokio::time::{sleep, Instant};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_redis, conn) = support::connect().await?;
    let node = |id: &'static str| {
        Election::builder(conn.clone(), "scheduler")
            .lease_ttl(Duration::from_millis(400))
            .renew_interval(Duration::from_millis(100))
            .campaign_interval(Duration::from_millis(25))
            .on_elected(move |epoch| println!("{id}: elected with epoch {epoch}"))
            .build()
    };
    let (a, b) = (node("a")?, node("b")?);
    let task_a = a.start();
    sleep(Duration::from_millis(50)).await;
    let task_b = b.start();
    sleep(Duration::from_millis(200)).await;
    println!("a leads: {}, b leads: {}", a.is_leader(), b.is_leader());

    let stopped = Instant::now();
    a.stop().await; // releases the lease: no waiting out the TTL
    while !b.is_leader() {
        sleep(Duration::from_millis(1)).await;
    }
    println!("hand-over took {:?}; b's epoch {:?}", stopped.elapsed(), b.epoch());
    b.stop().await;
    task_a.await??;
    task_b.await??;
    Ok(())
}
