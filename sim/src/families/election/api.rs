//! The public library operations the election workload calls, one
//! constant each (see [`crate::api::Api`]): what its actors record a call
//! by, its registry rows declare and its checkers find a call by.

use crate::api::Api;

/// `Election::run`.
pub(crate) const ELECTION_RUN: Api = Api::new("Election::run");
/// `Election::stop`.
pub(crate) const ELECTION_STOP: Api = Api::new("Election::stop");
/// `NaiveElection::run`.
pub(crate) const NAIVE_ELECTION_RUN: Api = Api::new("NaiveElection::run");
/// `NaiveElection::stop`.
pub(crate) const NAIVE_ELECTION_STOP: Api = Api::new("NaiveElection::stop");
/// `NaiveElection::write`.
pub(crate) const NAIVE_ELECTION_WRITE: Api = Api::new("NaiveElection::write");
