//! Turning results into text for people and JSON for tools.

pub mod admission;
pub mod diagnostics;
pub mod folded;
pub mod github;
pub mod plan_html;
pub mod plan_markdown;
pub mod plan_table;
pub mod service_table;
