//! One module per subcommand.

pub mod calibrate;
pub mod catalogue;
pub mod check;
pub mod completions;
pub mod diff;
pub mod emit;
pub mod explain;
pub mod fmt;
pub mod lsp;
pub mod plan;
pub mod report;
pub mod runs;
pub mod schedule;
pub mod schema;
