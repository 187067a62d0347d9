//! Connection set-up shared by the examples: `REDIS_URL` if set, otherwise a
//! throwaway redis-server started for the example (and stopped at exit).

use redis::aio::MultiplexedConnection;
use redis_primitives_testkit::RedisServer;

/// Keeps the throwaway server alive while the example runs.
pub struct Redis {
    _server: Option<RedisServer>,
}

/// Connects to `REDIS_URL`, or starts a local redis-server.
pub async fn connect() -> Result<(Redis, MultiplexedConnection), Box<dyn std::error::Error>> {
    let (server, url) = match std::env::var("REDIS_URL") {
        Ok(url) => (None, url),
        Err(_) => {
            let server = RedisServer::start()?;
            let url = server.url();
            (Some(server), url)
        }
    };
    let conn = redis::Client::open(url.as_str())?.get_multiplexed_async_connection().await?;
    Ok((Redis { _server: server }, conn))
}
