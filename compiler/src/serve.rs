//! The serving cost model: what one replica of a model service does per second and how long
//! its requests wait, from the model, the device and the traffic (docs/serving.md; the
//! equations and every constant in docs/cost-model.md, "Serving").
//!
//! A replica runs prefill (every prompt token once, compute-bound, attention quadratic in the
//! prompt) and decode steps (every weight and every cached key and value read once per step,
//! bandwidth-bound at small batch, compute-bound at large), with continuous batching mixing
//! them; [`model`] times both on a device, [`queue`] turns those times into latency percentiles
//! at a request rate, [`fitted`] holds the three constants fitted on the inference
//! calibration file. The planner (`plan::service`) and `loam calibrate` on a serving file both
//! call only the functions re-exported here.

pub mod fitted;
pub mod model;
pub mod queue;

#[cfg(test)]
mod tests;

pub use fitted::ServeFitted;
pub use model::{
    FP4_GEMM_SHARE, ReplicaMemory, ReplicaShape, ServedModel, decode_step_s, decode_step_s_with,
    kv_bytes_per_token, kv_transfer_s, memory_fraction, prefill_s, prefill_s_with, replica_memory,
};
pub use queue::{
    Load, OperatingPoint, Traffic, disaggregated_point, disaggregated_point_with, operating_point,
    operating_point_with, wait_quantile_s,
};
