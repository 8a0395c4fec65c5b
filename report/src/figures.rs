//! The figures, one module per kind of picture; each returns a [`crate::figure::Figure`] with its
//! caption, text alternative and table, or `None` when the plan has nothing to draw.

pub mod alternatives;
pub mod bars;
pub mod data;
pub mod diff;
pub mod gantt;
pub mod heatmap;
pub mod placement;
pub mod scatter;
pub mod schedule;
pub mod service;
pub mod step;
