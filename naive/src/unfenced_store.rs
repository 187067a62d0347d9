//! **Broken on purpose:** a resource that ignores fencing tokens (plain `SET`).
//!
//! What breaks: a holder whose lease expired mid-section writes late and
//! silently overwrites the newer holder's value. Shown by
//! `tests/library/fencing.rs::case11_unfenced_store_lets_stale_write_win` and the
//! `fencing-unfenced` simulation scenario.

use redis_primitives::{Connection, Result};

use crate::support::{self, fault};

const PREFIX: &str = "unfenced";

/// Last write wins, whoever wrote it. Do not use.
#[derive(Debug, Clone)]
pub struct UnfencedStore<C> {
    conn: C,
}

impl<C: Connection> UnfencedStore<C> {
    /// A store with the prefix `"unfenced"`.
    pub fn new(conn: C) -> UnfencedStore<C> {
        UnfencedStore { conn }
    }

    /// `SET key value`.
    pub async fn write(&self, key: &str, value: impl AsRef<[u8]>) -> Result<()> {
        let rkey = support::key(PREFIX, key)?;
        let mut conn = self.conn.clone();
        redis::cmd("SET").arg(&rkey).arg(value.as_ref()).query_async::<()>(&mut conn).await.map_err(|e| fault(e, &rkey))
    }

    /// `GET key`.
    pub async fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let rkey = support::key(PREFIX, key)?;
        let mut conn = self.conn.clone();
        redis::cmd("GET").arg(&rkey).query_async(&mut conn).await.map_err(|e| fault(e, &rkey))
    }
}
