//! Diagnostic codes of the catalogue phase.

super::codes! {}
