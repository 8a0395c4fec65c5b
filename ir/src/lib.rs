//! The loam Plan IR and what travels with it: the one vocabulary the compiler writes and the
//! backends, the report and the diff read.
//!
//! ```text
//!  loam-compiler ──writes──▶ loam-ir ◀──reads── loam-backends, loam-report, loam-diff
//! ```
//!
//! It holds the Plan IR ([`plan`]) and its findings, diagnostics with their registry of codes,
//! source spans, the closed vocabularies of specs ([`types`]), the names and checkpoint paths
//! manifests use, the number and layout formatting every output shares ([`display`]), and what
//! the backends and the report take from the catalogue besides the plans ([`cluster`]), and the
//! diff's totals the report draws ([`diff`]), and the time limit of a job's Slurm allocations
//! that the Slurm backend writes and the schedule plans with ([`slurm_limit`]). The
//! backends and the report depend on this crate and not on `loam-compiler`: they cannot reach
//! the planner, and they compile beside it.

pub mod checkpoint;
pub mod cluster;
pub mod diagnostics;
pub mod diff;
pub mod display;
pub mod findings;
pub mod names;
pub mod plan;
pub mod schedule;
pub mod slurm_limit;
pub mod span;
pub mod types;
pub mod units;
