//! `Connection`: what every primitive needs from the caller's connection.
//!
//! The library never opens a socket. Callers hand in a
//! `redis::aio::MultiplexedConnection`, a `ConnectionManager` (which
//! reconnects), or, in the simulation, a multiplexed connection built over
//! `turmoil::net::TcpStream`. Primitives clone it per call; for the
//! multiplexed kinds a clone is a cheap handle onto the same socket.

/// A cloneable async Redis connection that can move between tasks.
pub trait Connection: redis::aio::ConnectionLike + Clone + Send + Sync + 'static {}

impl<C> Connection for C where C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static {}
