//! The smallest use of `Redlock`: five independent masters, a majority wins.
//!
//! `cargo run --example redlock` (starts five throwaway redis-servers).

use core::time::Duration;

use redis_primitives::redlock::{Acquisition, Redlock, RedlockConfig};
use redis_primitives::Ttl;
use redis_primitives_testkit::RedisServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut servers = Vec::new();
    let mut masters = Vec::new();
    for _ in 0..5 {
        let server = RedisServer::start()?;
        masters.push(redis::Client::open(server.url())?.get_multiplexed_async_connection().await?);
        servers.push(server);
    }
    let redlock = Redlock::connect(masters, RedlockConfig::new(Ttl::new(Duration::from_secs(10))?)).await?;

    servers[0].stop(); // a minority down does not matter
    servers[1].stop();
    match redlock.acquire("nightly-report").await? {
        Acquisition::Held(lease) => {
            println!("held with {} votes; validity {:?}", lease.votes(), lease.validity());
            redlock.release(&lease).await;
        }
        Acquisition::Refused(why) => println!("refused: {:?}", why.reason),
    }
    servers[2].stop(); // now a majority is down
    if let Acquisition::Refused(why) = redlock.acquire("nightly-report").await? {
        println!("refused: {:?} with {} of {} votes", why.reason, why.votes, why.quorum);
    }
    Ok(())
}
