//! What several of the harness's tests share: a log an actor writes to and
//! the test reads after the run, and a sleep until an instant of the run.

use std::sync::{Arc, Mutex};

use core::time::Duration;
use redis_primitives_sim::Actor;

/// Lines an actor records for the test to read once the run is over.
pub(crate) type Log = Arc<Mutex<Vec<String>>>;

/// Appends `s` to `l`.
pub(crate) fn log(l: &Log, s: impl Into<String>) {
    l.lock().unwrap().push(s.into());
}

/// Sleeps until the run's time `t` (ms since its start), if it is ahead.
pub(crate) async fn sleep_until_ms(actor: &Actor, t: u64) {
    let now = actor.now();
    if t > now {
        tokio::time::sleep(Duration::from_millis(t - now)).await;
    }
}
