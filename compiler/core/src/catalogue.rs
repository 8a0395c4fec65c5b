//! (placeholder: catalogue phase, not written yet)
