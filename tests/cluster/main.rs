//! The primitives on a real Redis Cluster (3 primaries × 1 replica, started
//! per test by `redis_primitives_testkit::RedisCluster`), over redis-rs's
//! async cluster connection (`redis::cluster_async::ClusterConnection`,
//! which implements `aio::ConnectionLike` and so is a `Connection`):
//!
//! - `primitives`: every primitive behaves as on one server, and each
//!   name's keys share one slot (its hash tag), on whichever primary;
//! - `migration`: a slot moves to another primary under a running client:
//!   `MOVED`, `ASK` and `TRYAGAIN` are survived, tokens keep increasing;
//! - `failover`: a primary crashes after its replica missed writes; the
//!   promoted replica hands out a token again and the fenced store refuses
//!   it; the failover gap is measured and printed;
//! - `mitigations`: the same crash with an acknowledged lock (refused while
//!   the replica is cut, no token handed out twice) and with time-floored
//!   tokens (increasing across the failover), and how redis-rs routes the
//!   acknowledgement's `WAIT` (to every primary: read its module docs).
//!
//! Each test starts its own cluster (about 2.5 s, most of it the primaries'
//! own 2 s delay before they declare `cluster_state:ok`). Run with
//! `-- --nocapture` to see the measured numbers.

mod failover;
mod migration;
mod mitigations;
mod primitives;
mod support;
