//! (placeholder: calibrate phase, not written yet)
