//! Planning: from a checked job and the catalogue to the Plan IR.

mod build;
mod explain;
pub mod findings;
pub mod hetero;
mod hetero_data;
pub mod ir;
mod mixed;
mod objective;
pub mod planner;
mod schedule;
pub mod search;
mod slices;
mod stages;

pub use planner::plan_job;
pub use stages::stage_ranges;

#[cfg(test)]
mod tests;
