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
//!   it; the failover gap is measured and printed.
//!
//! Each test starts its own cluster (about 2.5 s, most of it the primaries'
//! own 2 s delay before they declare `cluster_state:ok`). Run with
//! `-- --nocapture` to see the measured numbers.

mod failover;
mod migration;
mod primitives;
mod support;
