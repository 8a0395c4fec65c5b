//! (placeholder: cost phase, not written yet)
