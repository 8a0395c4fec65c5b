//! Planning: from a checked job and the catalogue to the Plan IR.

mod build;
pub mod hetero;
pub mod ir;
pub mod planner;
pub mod search;

pub use build::{money as thousands, stage_ranges};
pub use planner::{plan_document, plan_job};

#[cfg(test)]
mod tests;
