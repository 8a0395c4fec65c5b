//! The pest grammar of the loam language (placeholder until the grammar lands).
