//! Checks of typed jobs and services against the catalogue (codes L21xx): names that resolve,
//! what the allowed devices can do, software, counts, quotas and whether the model fits at all.
//!
//! The catalogue itself (loading, the model, lookups, the digest, the reports) lives in
//! [`crate::catalogue`], below this module; [`eligible`] is also the planner's rule for where a
//! job or a service may run.

mod capability;
mod check_job;
mod check_service;
pub mod eligible;
mod fit;
mod software;

pub use check_job::check_job;
pub use check_service::check_service;
