//! Diagnostic codes of the emit phase.

super::codes! {}
