//! Turning results into text for people and JSON for tools.

pub mod diagnostics;
pub mod github;
