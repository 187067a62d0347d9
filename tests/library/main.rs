//! The library's tests against real redis-server processes, one binary
//! (one link on a 2-core CI), one module per area. Each test starts its
//! own servers on ephemeral loopback ports (`support`) and stops them.

mod support;

mod arguments;
mod documented_edges;
mod election;
mod exact;
mod faults;
mod fencing;
mod foreign_keys;
mod guarded;
mod job_queue;
mod limiter_state;
mod lock;
mod module_experiment;
mod native;
mod no_spawn;
mod rate_limit;
mod redlock;
mod replication;
mod retry;
mod server_errors;
