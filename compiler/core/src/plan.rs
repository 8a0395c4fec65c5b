//! (placeholder: plan phase, not written yet)
