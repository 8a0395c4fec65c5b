//! Fixture harness for loam's end-to-end tests (placeholder).
