//! One module per subcommand.

pub mod check;
pub mod completions;
pub mod explain;
pub mod fmt;
