//! Primaries and replicas: real replication between real servers.
//!
//! The library's guarantees change under replication (a failover can hand
//! out a token again), so tests and the simulation need replicas that are
//! as real as the primary, and faults on the link between them with a named
//! undo:
//!
//! - [`RedisServer::start_replica_of`] starts a replica and returns once it
//!   has synced. `master_link_status:up` is not readiness (the link is up
//!   before the first write has reached the replica), so readiness is a
//!   write on the primary followed by `WAIT` on the same connection;
//! - [`RedisServer::cut_replication`] / [`RedisServer::restore_replication`]
//!   stop and restart the stream of writes to one replica. A cut replica
//!   keeps its role and its data (it keeps trying to reconnect and is
//!   refused: its credentials are made wrong), as a replica behind a broken
//!   network would;
//! - [`RedisServer::promote`] is the failover step (`REPLICAOF NO ONE`); the
//!   caller kills the old primary first, as a failover of a crashed primary
//!   would find it.
//!
//! Every server this crate starts may be promoted, so every one is set up
//! for a quick full sync: a snapshot on disk (`repl-diskless-sync no`) in
//! its own temporary working directory, deleted after use
//! (`rdb-del-sync-files yes`) and before any restart (which must come back
//! empty), loaded by the replica straight from the socket
//! (`repl-diskless-load swapdb`). A disk-based sync puts the replica
//! online as soon as the file is sent; after a diskless one the primary
//! waits for the replica's acknowledgement, which may come only at its
//! next once-a-second report (measured: the first acknowledged `WAIT` 8 ms
//! after `REPLICAOF` with a disk-based sync, 586 ms with a diskless one).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::{RedisServer, ServerConfig, ServerError};

/// How long a barrier may take before the replica is reported as not ready.
/// Only a guard against a replica that never syncs: a full sync forks and
/// writes a snapshot, and on a loaded 2-core machine (a build beside the
/// suite) one took longer than the 10 s this once was and failed a search
/// test whose verdict had nothing to do with it.
const BARRIER_LIMIT: Duration = Duration::from_secs(60);

/// A user no server has, to make a replica's reconnection fail.
const NO_SUCH_USER: &str = "rp-testkit-replication-cut";

impl RedisServer {
    /// Starts a replica of `primary` with `config` (its binary, preload and
    /// arguments) and waits until it holds every write the primary had
    /// acknowledged.
    ///
    /// The role is given with `REPLICAOF` once the server runs, not with
    /// `--replicaof` on its command line: a replica that is later promoted
    /// and then restarted must come back as a primary (empty, as every
    /// restart here), not as the replica of a server that may be its own
    /// replica by then.
    pub fn start_replica_of(primary: &RedisServer, config: ServerConfig) -> Result<RedisServer, ServerError> {
        let replica = RedisServer::start_with(config)?;
        replica.expect_ok(&["REPLICAOF", "127.0.0.1", &primary.port().to_string()])?;
        primary.await_replicas(primary.connected_replicas()?.max(1))?;
        Ok(replica)
    }

    /// On a replica: stops the stream of writes from its primary. The
    /// replica keeps its data and its role; it reconnects and is refused
    /// until [`RedisServer::restore_replication`].
    pub fn cut_replication(&self) -> Result<(), ServerError> {
        self.expect_ok(&["CONFIG", "SET", "masteruser", NO_SUCH_USER])?;
        self.expect_ok(&["CONFIG", "SET", "masterauth", "wrong"])?;
        // The live link is dropped; the reconnection fails on the credentials.
        self.command(&["CLIENT", "KILL", "TYPE", "master"])?;
        Ok(())
    }

    /// On a replica cut by [`RedisServer::cut_replication`]: relinks it to
    /// `primary` and waits until it has caught up with every write.
    pub fn restore_replication(&self, primary: &RedisServer) -> Result<(), ServerError> {
        self.expect_ok(&["CONFIG", "SET", "masteruser", ""])?;
        self.expect_ok(&["CONFIG", "SET", "masterauth", ""])?;
        // A refused replica retries once a second; pointing it at its
        // primary again connects at once (a partial resync where the
        // primary still has the backlog, else a full one).
        self.expect_ok(&["REPLICAOF", "NO", "ONE"])?;
        self.expect_ok(&["REPLICAOF", "127.0.0.1", &primary.port().to_string()])?;
        primary.await_replicas(primary.connected_replicas()?.max(1))
    }

    /// On a replica: makes it a primary (`REPLICAOF NO ONE`), keeping what it
    /// has. Writes it had not received are lost, as in a real failover.
    pub fn promote(&self) -> Result<(), ServerError> {
        self.expect_ok(&["REPLICAOF", "NO", "ONE"])
    }

    /// On a primary: waits until `replicas` replicas have acknowledged every
    /// write made so far and are receiving the stream of new ones (a write
    /// of its own, then `WAIT` on the same connection, until enough answer
    /// twice in a row).
    ///
    /// Twice, because one answer does not prove the stream flows. After a
    /// full sync the primary starts streaming to a replica only once that
    /// replica's first `REPLCONF ACK` finds it online; an ACK that arrives
    /// before the primary has noticed the end of the transfer (it checks on
    /// a timer) still counts for `WAIT` — so we read the server's code, and
    /// the symptom below is measured — and covers every write the snapshot
    /// included, the barrier's own too. The stream then starts with the
    /// replica's next ACK, up to a second later, and a `WAIT` in between
    /// times out (seen under parallel tests: `WAIT 1 150` answered 0 for
    /// ~600 ms after this barrier had passed). A second round's writes are
    /// newer than any snapshot, so only the stream can have delivered them.
    pub fn await_replicas(&self, replicas: usize) -> Result<(), ServerError> {
        let deadline = Instant::now() + BARRIER_LIMIT;
        let mut conn = Session::open(self.addr())?;
        // A `WAIT` asks online replicas for an acknowledgement at once; one
        // still syncing is asked nothing and answers at its next
        // once-a-second report. So the barrier waits for `online` first.
        while self.online_replicas()? < replicas {
            if Instant::now() >= deadline {
                return Err(ServerError::NotReady {
                    port: self.port(),
                    log: format!("{replicas} replica(s) were not online within {BARRIER_LIMIT:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut in_a_row = 0;
        loop {
            conn.call(&["SET", "rp-testkit:barrier", "1"])?;
            conn.call(&["DEL", "rp-testkit:barrier"])?;
            let acked = conn.call(&["WAIT", &replicas.to_string(), "100"])?;
            if acked.trim_start_matches(':').trim().parse::<usize>().is_ok_and(|n| n >= replicas) {
                in_a_row += 1;
                if in_a_row == 2 {
                    return Ok(());
                }
                continue;
            }
            in_a_row = 0;
            if Instant::now() >= deadline {
                return Err(ServerError::NotReady {
                    port: self.port(),
                    log: format!("{replicas} replica(s) did not acknowledge within {BARRIER_LIMIT:?} (WAIT: {acked})"),
                });
            }
            // A replica that is still connecting needs a moment.
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// How many replicas are connected to this server (`INFO replication`).
    pub fn connected_replicas(&self) -> Result<usize, ServerError> {
        let mut conn = Session::open(self.addr())?;
        let info = conn.call(&["INFO", "replication"])?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("connected_slaves:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0))
    }

    /// How many replicas have finished their sync (`state=online`).
    fn online_replicas(&self) -> Result<usize, ServerError> {
        let mut conn = Session::open(self.addr())?;
        let info = conn.call(&["INFO", "replication"])?;
        Ok(info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count())
    }

    fn expect_ok(&self, args: &[&str]) -> Result<(), ServerError> {
        let reply = self.command(args)?;
        if reply.starts_with("+OK") {
            Ok(())
        } else {
            Err(ServerError::NotReady { port: self.port(), log: format!("{}: {}", args.join(" "), reply.trim()) })
        }
    }
}

/// One connection, for the commands whose effect is per connection (`WAIT`
/// counts only the writes of the connection that sends it).
struct Session {
    stream: TcpStream,
}

impl Session {
    fn open(addr: SocketAddr) -> Result<Session, ServerError> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
        // A WAIT under a pinned clock never times out on the server: this
        // is the limit (seen once under a load of 6 on 2 cores: 5 s passed).
        stream.set_read_timeout(Some(BARRIER_LIMIT))?;
        Ok(Session { stream })
    }

    /// Sends one command and reads its reply: a line, or a bulk string's
    /// line and its body (enough for the replies used here).
    fn call(&mut self, args: &[&str]) -> Result<String, ServerError> {
        let port = self.stream.peer_addr().map_or(0, |a| a.port());
        self.exchange(args).map_err(|e| crate::in_context(e, port, args))
    }

    fn exchange(&mut self, args: &[&str]) -> std::io::Result<String> {
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{}\r\n", a.len(), a));
        }
        self.stream.write_all(request.as_bytes())?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n") {
            self.stream.read_exact(&mut byte)?;
            reply.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&reply).into_owned();
        if let Some(len) = head.strip_prefix('$').and_then(|n| n.trim().parse::<usize>().ok()) {
            let mut body = vec![0u8; len + 2];
            self.stream.read_exact(&mut body)?;
            return Ok(String::from_utf8_lossy(&body[..len]).into_owned());
        }
        Ok(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_replica_misses_writes_until_restored_and_a_promoted_one_keeps_what_it_had() {
        let primary = RedisServer::start().expect("start the primary");
        let replica = RedisServer::start_replica_of(&primary, ServerConfig::default()).expect("start a replica");
        primary.command(&["SET", "before", "1"]).unwrap();
        primary.await_replicas(1).unwrap();
        assert!(replica.command(&["GET", "before"]).unwrap().starts_with("$1"), "replicated while linked");

        replica.cut_replication().unwrap();
        primary.command(&["SET", "during", "1"]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(replica.command(&["GET", "during"]).unwrap(), "$-1\r\n", "a cut replica receives nothing");
        assert_eq!(primary.connected_replicas().unwrap(), 0);

        replica.restore_replication(&primary).unwrap();
        assert!(replica.command(&["GET", "during"]).unwrap().starts_with("$1"), "caught up once restored");

        replica.cut_replication().unwrap();
        primary.command(&["SET", "lost", "1"]).unwrap();
        replica.promote().unwrap();
        assert_eq!(replica.command(&["GET", "lost"]).unwrap(), "$-1\r\n", "the promoted replica never had it");
        assert_eq!(replica.command(&["SET", "after", "1"]).unwrap(), "+OK\r\n", "and takes writes");

        // A promoted replica that restarts comes back a primary, empty: its
        // role was never on its command line.
        let mut replica = replica;
        replica.restart().unwrap();
        assert_eq!(replica.command(&["SET", "restarted", "1"]).unwrap(), "+OK\r\n", "a primary again");
        assert_eq!(replica.command(&["EXISTS", "after"]).unwrap(), ":0\r\n", "and empty");
    }

    /// Once `restore_replication` returns, a new write is acknowledged at
    /// once: the barrier waited for the stream, not only for the snapshot.
    #[test]
    fn a_restored_replica_acknowledges_the_next_write_at_once() {
        let primary = RedisServer::start().expect("start the primary");
        let replica = RedisServer::start_replica_of(&primary, ServerConfig::default()).expect("start a replica");
        for round in 0..3 {
            replica.cut_replication().unwrap();
            primary.command(&["SET", "during", &round.to_string()]).unwrap();
            replica.restore_replication(&primary).unwrap();
            let mut conn = Session::open(primary.addr()).unwrap();
            conn.call(&["SET", "next", &round.to_string()]).unwrap();
            assert_eq!(conn.call(&["WAIT", "1", "150"]).unwrap(), ":1\r\n", "round {round}");
        }
    }
}
