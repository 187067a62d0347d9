//! **Broken on purpose:** a set-if-absent lock released with a bare `DEL`.
//!
//! What breaks: the holder's lease expires mid-section, another client
//! acquires, and the first holder's `release` deletes the *second* holder's
//! lock, letting a third in while the second still works. No fencing token
//! either. Shown by `tests/library/lock.rs::case03_release_is_compare_and_delete`
//! and the `lock-naive` simulation scenario.

use redis_primitives::{Connection, Result, Ttl};

use crate::support::{fault, key};

/// The library's own lock prefix, so both locks contend for the same keys.
const PREFIX: &str = "lock";

/// `SET NX PX` to acquire, `DEL` to release. Do not use.
#[derive(Debug, Clone)]
pub struct NaiveLock<C> {
    conn: C,
}

impl<C: Connection> NaiveLock<C> {
    /// A naive lock using the same key names as [`redis_primitives::Lock`]
    /// by default.
    pub fn new(conn: C) -> NaiveLock<C> {
        NaiveLock { conn }
    }

    /// `SET key 1 NX PX ttl`. Returns whether it was set.
    pub async fn acquire(&self, name: &str, ttl: Ttl) -> Result<bool> {
        let key = key(PREFIX, name)?;
        let mut conn = self.conn.clone();
        let r: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis())
            .query_async(&mut conn)
            .await
            .map_err(|e| fault(e, &key))?;
        Ok(r.is_some())
    }

    /// `DEL key`: deletes whoever's lock is there. That is the bug.
    pub async fn release(&self, name: &str) -> Result<bool> {
        let key = key(PREFIX, name)?;
        let mut conn = self.conn.clone();
        let n: i64 = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.map_err(|e| fault(e, &key))?;
        Ok(n == 1)
    }
}
