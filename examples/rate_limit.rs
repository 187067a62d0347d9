//! The smallest use of both rate limiters: 5 requests per second per client.
//!
//! `cargo run --example rate_limit` (uses `REDIS_URL`, or starts its own redis-server).

mod support;

use core::time::Duration;

use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_redis, conn) = support::connect().await?;
    let limit = Limit::new(5, Duration::from_secs(1))?;
    let exact = SlidingWindowLog::new(conn.clone(), limit);
    let cheap = SlidingWindowCounter::new(conn, limit);
    for i in 1..=7 {
        let log = exact.check("client-42").await?;
        let counter = cheap.check("client-42").await?;
        let show = |d: &Decision| match d {
            Decision::Allowed { remaining, .. } => format!("allowed ({remaining} left)"),
            Decision::Denied { retry_after, .. } => format!("denied, retry after {retry_after:?}"),
        };
        println!("request {i}: sliding log {}, sliding counter {}", show(&log), show(&counter));
    }
    Ok(())
}
