//! Diagnostic codes of the syntax phase.

super::codes! {}
