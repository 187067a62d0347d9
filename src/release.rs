//! `Release`: what became of the release that ends `with_lock`.
//!
//! By the time `with_lock` or `with_lock_guarded` releases, the body has
//! already run and produced its output: that work happened, whatever the
//! release does. Returning `Err` from a failed release would drop the output
//! and tell the caller "nothing happened" (issue 13). So the release's fate
//! is a value beside the output, and a failed or unanswered release is one
//! of its cases, not an error of the whole call.

use crate::error::Error;

/// The fate of the compare-and-delete that ends a `with_lock` call.
#[derive(Debug)]
pub enum Release {
    /// Our lease was still there and has been deleted: the name is free.
    Released,
    /// Nothing of ours was there: the lease had expired (and perhaps passed
    /// to someone else, whose lease was left untouched). The body outlived
    /// its protection; its writes are only as safe as their fencing.
    AlreadyGone,
    /// The release got no clear answer: it timed out (it may still run),
    /// the connection dropped, or Redis answered with an error. Our lease
    /// may still be held; it expires by itself after its TTL.
    Unknown(Error),
}

impl Release {
    /// True for [`Release::Released`].
    pub fn is_released(&self) -> bool {
        matches!(self, Release::Released)
    }

    /// Maps the reply of [`crate::Lock::release`].
    pub(crate) fn from_reply(reply: Result<bool, Error>) -> Release {
        match reply {
            Ok(true) => Release::Released,
            Ok(false) => Release::AlreadyGone,
            Err(e) => Release::Unknown(e),
        }
    }
}
