//! Diagnostic codes of the check phase.

super::codes! {}
