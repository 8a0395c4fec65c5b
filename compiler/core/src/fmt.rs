//! (placeholder: fmt phase, not written yet)
