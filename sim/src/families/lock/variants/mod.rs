//! The lock family's variants other than `lock` itself: each file is one
//! set of [`LockWorkload`](super::LockWorkload) settings (a lock, a store,
//! a fault every seed gets) and says what that variant breaks or holds.

pub mod counter_loss;
pub mod failover;
pub mod fencing;
pub mod naive;
pub mod unfenced;
