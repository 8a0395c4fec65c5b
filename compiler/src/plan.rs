//! Planning: from a checked job and the catalogue to the Plan IR.

mod explain;
pub mod goodput;
pub(crate) mod node;
mod objective;
pub mod pair;
mod placement;
pub mod planner;
mod plausibility;
mod request;
mod schedule;
pub mod search;
pub mod service;
mod single;
mod slices;
mod stages;
mod uncertainty;
pub mod validate;

pub use planner::{plan_job, plan_job_on};
pub(crate) use single::rejection_text;
pub use stages::stage_ranges;

#[cfg(test)]
mod tests;
