//! The loam command-line interface (placeholder).
