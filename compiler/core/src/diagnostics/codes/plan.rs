//! Diagnostic codes of the plan phase.

super::codes! {}
