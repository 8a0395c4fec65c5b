//! Planning: from a checked job and the catalogue to the Plan IR.

mod build;
mod explain;
pub mod hetero;
pub mod ir;
mod mixed;
mod objective;
pub mod planner;
mod schedule;
mod slices;
pub mod search;
mod stages;

pub use build::money as thousands;
pub use stages::stage_ranges;
pub use planner::{plan_document, plan_job};

#[cfg(test)]
mod tests;
