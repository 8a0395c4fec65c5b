//! One replica's step times and memory: prefill and decode on a device at a tensor, pipeline
//! and expert degree, and how many tokens of KV cache fit beside the weights.
//!
//! A forward pass runs its weight GEMMs (a roofline of the weight bytes over the device's
//! bandwidth against the FLOPs over its sustained GEMM rate), then its attention as a separate
//! kernel (decode: the KV cache read at the bandwidth; prefill: the score FLOPs at the device's
//! flash-attention rate), plus the collectives of the degrees on the tier they cross and a
//! fitted per-block overhead ([`ServeFitted`]). The equations are in docs/cost-model.md,
//! "Serving".

use super::fitted::ServeFitted;
use crate::catalogue::Device;
use crate::workload::{ModelDims, param_count};
use loam_ir::types::{Engine, KvCache, Precision, ServePrecision};

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

    /// Weights of one routed expert over all MoE blocks (0 for dense models): the stored
    /// weights a token does not touch, spread over the experts it skips.
    pub fn expert_params(&self) -> f64 {
        let d = &self.dims;
        if d.experts <= d.top_k || d.experts <= 1 {
            return 0.0;
        }
        (self.params - self.active_params).max(0.0) / f64::from(d.experts - d.top_k)
    }

    /// Width of the attention's queries (heads × head width; MLA's nope + rope width).
    fn query_width(&self) -> f64 {
        let d = &self.dims;
        match &d.mla {
            Some(mla) => {
                f64::from(d.heads) * f64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim)
            }
            None => f64::from(d.heads) * f64::from(head_dim(d)),
        }
    }

    /// The context a token attends to and reads the KV cache of, averaged over blocks, when the
    /// sequence holds `context` tokens: sliding-window blocks stop at their window.
    pub fn attended_context(&self, context: f64) -> f64 {
        let d = &self.dims;
        let Some(window) = d.sliding_window else {
            return context;
        };
        let layers = f64::from(d.layers.max(1));
        let global = d
            .global_every
            .map_or(0.0, |n| f64::from(d.layers / n.max(1)));
        let sliding = (layers - global).max(0.0);
        (global * context + sliding * context.min(f64::from(window))) / layers
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
    /// The engine's efficiency where the replica runs: its site's calibration
    /// (`calibrate --fit`), 1.0 for the shipped constants.
    pub efficiency: f64,
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

/// Counted: the share of device memory vLLM takes by default (`gpu_memory_utilization` 0.9,
/// vLLM engine arguments); also MindIE's and TensorRT-LLM's (`kv_cache_free_gpu_mem_fraction`
/// 0.9, of the memory left after the weights, which this model treats alike).
pub const MEMORY_FRACTION: f64 = 0.9;

/// Counted: SGLang's default `mem_fraction_static` for a large device (0.88, SGLang server
/// arguments; the serving benchmark in the calibration file states it).
pub const SGLANG_MEMORY_FRACTION: f64 = 0.88;

/// Counted: LMDeploy TurboMind's `cache_max_entry_count` (0.8 of the free memory, LMDeploy
/// engine configuration).
pub const LMDEPLOY_MEMORY_FRACTION: f64 = 0.8;

/// Physical: activations of the largest prefill chunk, CUDA graphs and the engine's workspace
/// per device, an estimate from vLLM's start-up memory profile (2–4 GiB on 80 GB parts), not
/// fitted.
pub const WORKSPACE_BYTES: f64 = 3.0 * 1024.0 * 1024.0 * 1024.0;

/// Physical: latency of one small-message all-reduce inside a node (NVLink / xGMI): 5–10 µs in
/// nccl-tests and TensorRT-LLM's custom all-reduce; the upper end.
pub const ALL_REDUCE_LATENCY_S: f64 = 8e-6;

/// Physical: latency of one message across the scale-out network (InfiniBand / RoCE switch hop
/// and NIC, nccl-tests small messages), added per collective when a replica spans nodes.
pub const NETWORK_LATENCY_S: f64 = 5e-6;

/// The share of device memory `engine` takes for weights, workspace and KV cache.
pub fn memory_fraction(engine: Engine) -> f64 {
    match engine {
        Engine::Sglang => SGLANG_MEMORY_FRACTION,
        Engine::Lmdeploy => LMDEPLOY_MEMORY_FRACTION,
        Engine::Vllm | Engine::Trtllm | Engine::Mindie => MEMORY_FRACTION,
    }
}

fn head_dim(d: &ModelDims) -> u32 {
    d.head_dim.unwrap_or(d.hidden / d.heads.max(1))
}

/// Bytes of KV cache one token holds over all layers (keys and values; MLA's latent).
pub fn kv_bytes_per_token(model: &ServedModel) -> f64 {
    let d = &model.dims;
    let per_layer = match &d.mla {
        Some(mla) => f64::from(mla.kv_lora_rank + mla.qk_rope_head_dim),
        None => 2.0 * f64::from(d.kv_heads) * f64::from(head_dim(d)),
    };
    per_layer * f64::from(d.layers) * model.kv_cache.bytes()
}

/// How many ways one token's KV cache is split over a replica's devices: KV heads over tensor
/// ranks (replicated when there are fewer heads than ranks; MLA's latent is replicated), layers
/// over pipeline stages.
fn kv_split(model: &ServedModel, shape: &ReplicaShape<'_>) -> f64 {
    let heads = if model.dims.mla.is_some() {
        1
    } else {
        shape.tensor.min(model.dims.kv_heads.max(1)).max(1)
    };
    f64::from(heads) * f64::from(shape.pipeline.max(1))
}

/// The replica's memory on its devices.
pub fn replica_memory(model: &ServedModel, shape: &ReplicaShape<'_>) -> ReplicaMemory {
    let devices = f64::from(shape.devices().max(1));
    let weights_bytes = model.params * model.precision.weight_bytes() / devices;
    let fraction = memory_fraction(model.engine);
    let capacity = shape.device.memory_bytes.value * fraction;
    let kv_bytes = (capacity - weights_bytes - WORKSPACE_BYTES).max(0.0);
    let per_token = kv_bytes_per_token(model) / kv_split(model, shape);
    let kv_tokens = if per_token > 0.0 {
        kv_bytes / per_token
    } else {
        0.0
    };
    ReplicaMemory {
        weights_bytes,
        overhead_bytes: WORKSPACE_BYTES,
        kv_bytes,
        kv_tokens,
        memory_fraction: fraction,
        fits: kv_tokens >= f64::from(shape.max_model_len),
    }
}

/// Physical: the share of the fp4 dense peak an NVFP4 GEMM sustains on Blackwell, the mean of
/// cuBLASLt at 8192³ (5,239 of 9,000 TFLOP/s, 0.58; deepseek-ai/DeepGEMM#348, the cuBLAS
/// column) and vLLM's CUTLASS NVFP4 GEMM on Llama 3.1 8B shapes with the activations quantised
/// on the fly (3,039 TFLOP/s at 16,384 tokens, 0.34; vllm-project/vllm#20646): 0.46. It
/// replaces the catalogue's GEMM efficiency, which has no fp4 figure.
pub const FP4_GEMM_SHARE: f64 = 0.46;

/// GEMM FLOP/s one device sustains in the model's precision: int8 and int4 are weight-only
/// (16-bit GEMMs), fp4 runs at the device's fp4 peak times [`FP4_GEMM_SHARE`] (on a device
/// without one, at its fp8 rate).
fn gemm_rate(model: &ServedModel, device: &Device, fitted: &ServeFitted) -> f64 {
    let raw = match model.precision.compute() {
        Some(p) => {
            device
                .peak(p)
                .or_else(|| device.peak(Precision::Bf16))
                .unwrap_or(0.0)
                * device.efficiency.gemm(p)
        }
        None => match device.fp4_peak {
            Some(peak) => peak * FP4_GEMM_SHARE,
            None => {
                device
                    .peak(Precision::Fp8)
                    .or_else(|| device.peak(Precision::Bf16))
                    .unwrap_or(0.0)
                    * device.efficiency.gemm(Precision::Fp8)
            }
        },
    };
    (raw * fitted.gemm_share).max(1.0)
}

/// Attention FLOP/s one device sustains: the catalogue's causal flash-attention forward share
/// of its 16-bit peak (attention runs in 16 bits whatever the weights' precision).
fn attention_rate(device: &Device, fitted: &ServeFitted) -> f64 {
    let peak = device
        .peak(Precision::Bf16)
        .or_else(|| device.peak(Precision::Fp16))
        .unwrap_or(0.0);
    (peak * device.efficiency.attention_forward * fitted.gemm_share).max(1.0)
}

/// Bytes/s one device's weight and KV-cache reads reach.
fn read_rate(device: &Device, fitted: &ServeFitted) -> f64 {
    (device.memory_bandwidth * fitted.bandwidth_share).max(1.0)
}

/// Seconds of one collective moving `bytes` per rank over `ranks` ranks, on the scale-up fabric
/// or, when the ranks span nodes, the scale-out network: `factor` × bytes over the bandwidth
/// plus one latency.
fn collective_s(shape: &ReplicaShape<'_>, ranks: u32, factor: f64, bytes: f64) -> f64 {
    if ranks <= 1 {
        return 0.0;
    }
    let (bandwidth, latency) = if ranks > shape.devices_per_node.max(1) {
        (
            shape.scale_out_bandwidth,
            ALL_REDUCE_LATENCY_S + NETWORK_LATENCY_S,
        )
    } else {
        (
            shape.device.scale_up_bandwidth_bidir / 2.0,
            ALL_REDUCE_LATENCY_S,
        )
    };
    factor * bytes / bandwidth.max(1.0) + latency
}

/// Collective seconds per block of one forward pass over `tokens` tokens: two tensor-parallel
/// all-reduces of the activations and, for MoE, the expert all-to-all (dispatch and combine).
fn block_comm_s(model: &ServedModel, shape: &ReplicaShape<'_>, tokens: f64) -> f64 {
    let d = &model.dims;
    let activation = tokens * f64::from(d.hidden) * 2.0;
    let t = f64::from(shape.tensor.max(1));
    let all_reduce = collective_s(shape, shape.tensor, 2.0 * (t - 1.0) / t, activation);
    let e = f64::from(shape.expert.max(1));
    let all_to_all = if d.experts > 1 && shape.expert > 1 {
        2.0 * collective_s(
            shape,
            shape.expert,
            (e - 1.0) / e,
            activation * f64::from(d.top_k) / e,
        )
    } else {
        0.0
    };
    2.0 * all_reduce + all_to_all
}

/// Seconds of one pass through one pipeline stage of `tokens` tokens: the weight GEMMs (the
/// larger of reading `weight_bytes` and running `gemm_flops` per device), then the attention
/// kernel's `attention_s`, which runs after them and overlaps neither, then per block the
/// fitted overhead and the collectives, and a hop to the next stage.
fn stage_s(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    fitted: &ServeFitted,
    tokens: f64,
    weight_bytes: f64,
    gemm_flops: f64,
    attention_s: f64,
) -> f64 {
    let device = shape.device;
    let read = weight_bytes / read_rate(device, fitted);
    let compute = gemm_flops / gemm_rate(model, device, fitted);
    let blocks = f64::from(model.dims.layers) / f64::from(shape.pipeline.max(1));
    let per_block = fitted.block_overhead_s + block_comm_s(model, shape, tokens);
    let hop = if shape.pipeline > 1 {
        collective_s(shape, 2, 1.0, tokens * f64::from(model.dims.hidden) * 2.0)
    } else {
        0.0
    };
    read.max(compute) + attention_s + blocks * per_block + hop
}

/// [`prefill_s`] with explicit fitted constants (what the calibration fit varies).
pub fn prefill_s_with(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    fitted: &ServeFitted,
    tokens: f64,
    prompt: f64,
) -> f64 {
    let d = &model.dims;
    let devices = f64::from(shape.devices().max(1));
    let pipeline = f64::from(shape.pipeline.max(1));
    // Causal attention: QKᵀ and AV over half the prompt on average, per token and block, in
    // the flash-attention kernel at its own rate.
    let attention_flops =
        2.0 * f64::from(d.layers) * model.query_width() * model.attended_context(prompt) * tokens
            / devices;
    let attention_s = attention_flops / attention_rate(shape.device, fitted);
    let gemm_flops = 2.0 * model.active_params * tokens / devices;
    let weights = replica_memory(model, shape).weights_bytes;
    // A prompt passes every stage one after the other: pipeline stages add up.
    pipeline
        * stage_s(
            model,
            shape,
            fitted,
            tokens,
            weights,
            gemm_flops,
            attention_s,
        )
}

/// Seconds to prefill `tokens` prompt tokens of requests `prompt` tokens long on one replica.
pub fn prefill_s(model: &ServedModel, shape: &ReplicaShape<'_>, tokens: f64, prompt: f64) -> f64 {
    prefill_s_with(
        model,
        shape,
        &ServeFitted::SHIPPED.with_efficiency(shape.efficiency),
        tokens,
        prompt,
    )
}

/// Weight bytes one device reads per decode step of `tokens` tokens: the dense part always,
/// and of the routed experts those the step's tokens touch (`1 − (1 − k/E)^tokens` of them).
fn decode_weight_bytes(model: &ServedModel, shape: &ReplicaShape<'_>, tokens: f64) -> f64 {
    let d = &model.dims;
    let weights = replica_memory(model, shape).weights_bytes;
    let expert = model.expert_params();
    if expert <= 0.0 {
        return weights;
    }
    let experts = f64::from(d.experts);
    let routed =
        expert * experts * model.precision.weight_bytes() / f64::from(shape.devices().max(1));
    let untouched = 1.0 - f64::from(d.top_k) / experts;
    let touched = 1.0 - libm::pow(untouched.clamp(0.0, 1.0), tokens.max(1.0));
    (weights - routed).max(0.0) + routed * touched
}

/// [`decode_step_s`] with explicit fitted constants.
pub fn decode_step_s_with(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    fitted: &ServeFitted,
    batch: f64,
    context: f64,
) -> f64 {
    let d = &model.dims;
    let batch = batch.max(1.0);
    let pipeline = f64::from(shape.pipeline.max(1));
    // With pipeline stages, the batch is split into one micro-batch per stage in flight.
    let micro = (batch / pipeline).max(1.0);
    let attended = model.attended_context(context);
    let kv_per_device = kv_bytes_per_token(model) / kv_split(model, shape);
    let devices = f64::from(shape.devices().max(1));
    // The attention kernel reads every running sequence's KV cache once per step (its FLOPs,
    // QKᵀ and AV per cached token, matter only for very wide heads).
    let kv_read = micro * attended * kv_per_device / read_rate(shape.device, fitted);
    let attention_flops =
        4.0 * f64::from(d.layers) * model.query_width() * attended * micro / devices;
    let attention_s = kv_read.max(attention_flops / attention_rate(shape.device, fitted));
    let weights = decode_weight_bytes(model, shape, micro);
    let gemm_flops = 2.0 * model.active_params * micro / devices;
    pipeline
        * stage_s(
            model,
            shape,
            fitted,
            micro,
            weights,
            gemm_flops,
            attention_s,
        )
}

/// Seconds of one decode step of `batch` sequences holding `context` tokens each on average.
pub fn decode_step_s(
    model: &ServedModel,
    shape: &ReplicaShape<'_>,
    batch: f64,
    context: f64,
) -> f64 {
    decode_step_s_with(
        model,
        shape,
        &ServeFitted::SHIPPED.with_efficiency(shape.efficiency),
        batch,
        context,
    )
}

/// Seconds to move the KV cache of a `tokens`-token prompt over `bandwidth` bytes/s.
pub fn kv_transfer_s(model: &ServedModel, tokens: f64, bandwidth: f64) -> f64 {
    tokens * kv_bytes_per_token(model) / bandwidth.max(1.0)
}
