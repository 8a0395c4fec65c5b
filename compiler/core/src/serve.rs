//! The serving cost model: what one replica of a model service does per second and how long
//! its requests wait, from the model, the device and the traffic (docs/serving.md).
//!
//! A replica runs prefill (every prompt token once, compute-bound, attention quadratic in the
//! prompt) and decode steps (every weight and every cached key and value read once per step,
//! bandwidth-bound at small batch, compute-bound at large), with continuous batching mixing
//! them; [`model`] times both on a device, [`queue`] turns those times into latency percentiles
//! at a request rate. The planner (`plan::service`) and `loam calibrate` on a serving file both
//! call only the functions re-exported here.

pub mod model;
pub mod queue;

pub use model::{
    ReplicaMemory, ReplicaShape, ServedModel, decode_step_s, kv_bytes_per_token, kv_transfer_s,
    prefill_s, replica_memory,
};
pub use queue::{Load, OperatingPoint, Traffic, disaggregated_point, operating_point};
