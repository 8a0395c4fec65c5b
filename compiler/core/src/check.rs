//! (placeholder: check phase, not written yet)
