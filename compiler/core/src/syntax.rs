//! (placeholder: syntax phase, not written yet)
