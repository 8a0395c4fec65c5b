//! The loam compiler core: everything between job-spec text and the Plan IR.
//!
//! ```text
//!  *.loam ──parse──▶ AST ──check──▶ typed Job ──plan──▶ Plan IR ──▶ (loam-backends)
//!  syntax            spans  check      ▲           plan
//!                                      │
//!                          catalogue (YAML text, loaded here)
//! ```
//!
//! The core is pure: it never touches the file system, the environment, the terminal or the
//! clock. The CLI reads files and hands their text in; the core returns values together with
//! the diagnostics it collected.

pub mod admission;
pub mod calibrate;
pub mod catalogue;
pub mod check;
pub mod cost;
pub mod fmt;
pub mod hardware;
pub mod parallel;
pub mod plan;
pub mod project;
pub mod runs;
pub mod schedule;
pub mod serve;
pub mod suggest;
pub mod syntax;
pub mod units;
pub mod workload;
