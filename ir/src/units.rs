//! The byte unit the Plan IR and every message give memory in.

/// Bytes in a GiB: the one unit every message and the Plan JSON give memory in, as devices
/// report it (`nvidia-smi`, `npu-smi` and `hl-smi` count binary units; HBM is sold in them).
pub const GIB: f64 = 1_073_741_824.0;
