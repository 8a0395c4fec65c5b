//! One replica's step times and memory: prefill and decode on a device at a tensor, pipeline
//! and expert degree, and how many tokens of KV cache fit beside the weights.

use crate::catalogue::Device;
use crate::types::{Engine, KvCache, Precision, ServePrecision};
use crate::workload::{ModelDims, param_count};

/// A model as served: its dimensions and the precisions of its weights and KV cache.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedModel {
    /// The model's dimensions.
    pub dims: ModelDims,
    /// Every stored weight.
    pub params: f64,
    /// Weights one token touches (the routed experts' share for MoE).
    pub active_params: f64,
    /// Weight precision.
    pub precision: ServePrecision,
    /// KV-cache precision.
    pub kv_cache: KvCache,
    /// The engine.
    pub engine: Engine,
}

impl ServedModel {
    /// The model `dims` served in `precision` with a `kv_cache` on `engine`.
    pub fn new(
        dims: ModelDims,
        precision: ServePrecision,
        kv_cache: KvCache,
        engine: Engine,
    ) -> ServedModel {
        let count = param_count(&dims);
        ServedModel {
            dims,
            params: count.total,
            active_params: count.active,
            precision,
            kv_cache,
            engine,
        }
    }
}

/// One replica's shape: the device, its degrees and the engine's limits.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaShape<'a> {
    /// The device every rank runs on.
    pub device: &'a Device,
    /// Tensor-parallel degree.
    pub tensor: u32,
    /// Pipeline-parallel degree.
    pub pipeline: u32,
    /// Expert-parallel degree (1 for dense models), over the same devices as `tensor`.
    pub expert: u32,
    /// Most sequences batched at once (`max_num_seqs`).
    pub max_batch: u32,
    /// Longest context a request may use (`max_model_len`).
    pub max_model_len: u32,
    /// Devices of one node: a replica wider than this crosses the scale-out network.
    pub devices_per_node: u32,
    /// Scale-out bandwidth per device in bytes/s (NICs of a node over its devices).
    pub scale_out_bandwidth: f64,
}

impl ReplicaShape<'_> {
    /// Devices of one replica.
    pub fn devices(&self) -> u32 {
        self.tensor.saturating_mul(self.pipeline)
    }
}

/// What one device of a replica holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicaMemory {
    /// Weight bytes on the fullest device.
    pub weights_bytes: f64,
    /// Activation, graph and engine workspace bytes per device.
    pub overhead_bytes: f64,
    /// KV-cache bytes per device.
    pub kv_bytes: f64,
    /// Tokens of KV cache the whole replica holds.
    pub kv_tokens: f64,
    /// The share of device memory the engine is told to use (`--gpu-memory-utilization`).
    pub memory_fraction: f64,
    /// Whether the weights, the workspace and one longest request's KV cache fit.
    pub fits: bool,
}

/// The share of device memory the engine takes (vLLM's default `gpu_memory_utilization`).
/// Counted: vLLM's documented default.
pub const MEMORY_FRACTION: f64 = 0.9;

/// Bytes of KV cache one token holds over all layers (keys and values; MLA's latent).
pub fn kv_bytes_per_token(model: &ServedModel) -> f64 {
    let d = &model.dims;
    let per_layer = match &d.mla {
        Some(mla) => f64::from(mla.kv_lora_rank + mla.qk_rope_head_dim),
        None => {
            let head_dim = d.head_dim.unwrap_or(d.hidden / d.heads.max(1));
            2.0 * f64::from(d.kv_heads) * f64::from(head_dim)
        }
    };
    per_layer * f64::from(d.layers) * model.kv_cache.bytes()
}

/// The replica's memory on its devices.
pub fn replica_memory(model: &ServedModel, shape: &ReplicaShape<'_>) -> ReplicaMemory {
    let devices = f64::from(shape.devices().max(1));
    let weights_bytes = model.params * model.precision.weight_bytes() / devices;
    let capacity = shape.device.memory_bytes.value * MEMORY_FRACTION;
    // Activations of the largest prefill chunk and CUDA graphs: a few GiB per device.
    let overhead_bytes = 3.0 * 1024f64.powi(3);
    let kv_bytes = (capacity - weights_bytes - overhead_bytes).max(0.0);
    // KV heads split over tensor ranks, replicated when there are fewer heads than ranks.
    let kv_split = f64::from(shape.tensor.min(model.dims.kv_heads.max(1)).max(1))
        * f64::from(shape.pipeline.max(1));
    let per_token = kv_bytes_per_token(model) / kv_split;
    let kv_tokens = if per_token > 0.0 {
        kv_bytes / per_token
    } else {
        0.0
    };
    ReplicaMemory {
        weights_bytes,
        overhead_bytes,
        kv_bytes,
        kv_tokens,
        memory_fraction: MEMORY_FRACTION,
        fits: kv_tokens >= f64::from(shape.max_model_len),
    }
}

/// GEMM FLOP/s one device sustains in the model's precision.
fn gemm_rate(model: &ServedModel, device: &Device) -> f64 {
    let (peak, precision) = match model.precision.compute() {
        Some(p) => (device.peak(p).unwrap_or(0.0), p),
        None => (device.fp4_peak.unwrap_or(0.0), Precision::Fp8),
    };
    peak * device.efficiency.gemm(precision)
}

/// Tensor-parallel all-reduce time for `bytes` per rank.
fn all_reduce_s(shape: &ReplicaShape<'_>, bytes: f64) -> f64 {
    if shape.tensor <= 1 {
        return 0.0;
    }
    let t = f64::from(shape.tensor);
    let bandwidth = if shape.tensor > shape.devices_per_node {
        shape.scale_out_bandwidth
    } else {
        shape.device.scale_up_bandwidth_bidir / 2.0
    };
    2.0 * (t - 1.0) / t * bytes / bandwidth.max(1.0) + 8e-6
}

/// Seconds to prefill `tokens` prompt tokens of requests `prompt` tokens long on one replica.
pub fn prefill_s(model: &ServedModel, shape: &ReplicaShape<'_>, tokens: f64, prompt: f64) -> f64 {
    let d = &model.dims;
    let devices = f64::from(shape.devices().max(1));
    let linear = 2.0 * model.active_params * tokens;
    let attention = 2.0 * f64::from(d.layers) * f64::from(d.hidden) * prompt * tokens;
    let compute = (linear + attention) / (gemm_rate(model, shape.device) * devices);
    let weights = replica_memory(model, shape).weights_bytes / shape.device.memory_bandwidth;
    let comm = 2.0 * f64::from(d.layers) * all_reduce_s(shape, tokens * f64::from(d.hidden) * 2.0)
        / f64::from(shape.pipeline.max(1));
    compute.max(weights) + comm
}

/// Seconds of one decode step of `batch` sequences holding `context` tokens each on average.
pub fn decode_step_s(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    batch: f64,
    context: f64,
) -> f64 {
    let d = &model.dims;
    let devices = f64::from(shape.devices().max(1));
    let memory = replica_memory(model, shape);
    let kv_read = batch * context * kv_bytes_per_token(model) / devices;
    let read = (memory.weights_bytes + kv_read) / shape.device.memory_bandwidth;
    let compute = 2.0 * model.active_params * batch / (gemm_rate(model, shape.device) * devices);
    let comm = 2.0 * f64::from(d.layers) * all_reduce_s(shape, batch * f64::from(d.hidden) * 2.0);
    read.max(compute) + comm + 2e-3
}

/// Seconds to move the KV cache of a `tokens`-token prompt over `bandwidth` bytes/s.
pub fn kv_transfer_s(model: &ServedModel, tokens: f64, bandwidth: f64) -> f64 {
    tokens * kv_bytes_per_token(model) / bandwidth.max(1.0)
}
