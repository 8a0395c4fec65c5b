//! (placeholder: workload phase, not written yet)
