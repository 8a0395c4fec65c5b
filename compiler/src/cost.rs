//! The cost model: seconds per training step of a layout on a homogeneous cluster.
//!
//! step = micro-batches × slowest rank (its blocks' compute and exposed tensor/context/expert
//!        communication, plus the embedding on the first rank and the head on the last)
//!      + pipeline bubble `(p−1)/v` of that rank's micro-batch + pipeline p2p
//!      + exposed data-parallel communication + optimizer step (memory-bound).
//!
//! Calibrated constants are few and physical; `docs/cost-model.md` says what each one means and
//! how it was set. Everything else comes from datasheets ([`DeviceFigures`], [`ClusterFigures`]).

mod compute;
mod nccl;
mod network;
pub mod ops;
pub(crate) mod pipeline_step;
mod stages;
pub mod transport;

use crate::hardware::{ClusterFigures, DeviceFigures};
use crate::workload::{
    FlopConvention, Layout, MemoryBreakdown, ModelDims, TrainSetup, memory_per_device,
};
use loam_ir::types::Precision;
pub(crate) use network::{
    Collective, Group, collective_time, p2p_time, scale_up_devices, uplink_slowdown,
};
use serde::Serialize;
pub use stages::StageSeconds;
pub(crate) use stages::{Costing, KernelShare, StageCache};

/// Kernels a forward pass of `layout`'s blocks launches on `cluster` when every block waits for
/// its launches there rather than for the device ([`KERNEL_LAUNCH_S`] each); `None` when the
/// device's work is longer or the device lacks the precision.
pub(crate) fn launch_bound(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
    cluster: &ClusterFigures,
) -> Option<f64> {
    let rates = compute::Rates::new(cluster, setup.precision)?;
    compute::launch_bound_forward(model, layout, &rates, setup.flash_attention)
}

/// The fastest FLOP/s any kernel of the cost model runs at on `cluster` under `precision`
/// (`None` when the device has no peak for it): no costed step does its model FLOPs faster, so
/// it bounds a step from below.
pub(crate) fn fastest_flops(cluster: &ClusterFigures, precision: Precision) -> Option<f64> {
    let rates = compute::Rates::new(cluster, precision)?;
    // The output head runs in 16-bit under FP8.
    let head = compute::Rates::new(cluster, compute::sixteen_bit(precision)).unwrap_or(rates);
    Some(rates.fastest().max(head.fastest()))
}

/// Device-seconds `tokens` trained tokens of `model` take at least: their model FLOPs at
/// `fastest` FLOP/s ([`fastest_flops`]); `None` without a positive rate or finite FLOPs. The
/// floor under a data split's share and under a capped walk's placements.
pub(crate) fn least_device_seconds(
    model: &crate::workload::ModelDims,
    tokens: f64,
    fastest: Option<f64>,
) -> Option<f64> {
    let flops =
        crate::workload::flops_per_token(model, loam_ir::types::Recompute::None).model * tokens;
    fastest
        .filter(|rate| *rate > 0.0 && flops.is_finite())
        .map(|rate| flops / rate)
}

/// The cost model's fitted constants: the only numbers set by matching published runs
/// (`docs/cost-model.md`, "Constants" lists every constant with its kind). They live in one value
/// so that `loam calibrate --cross-validate` can refit them with a source family left out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FittedConstants {
    /// Share of a device's best measured GEMM throughput ([`crate::hardware::Efficiency`]) that
    /// the GEMMs of a training step sustain: their shapes are not the sweep's best, and clocks
    /// sag under the power of a whole step rather than one kernel.
    pub gemm_sustained: f64,
    /// Compute slowed by communication running beside it, as a share of the communication time
    /// it hides: collectives take SMs and memory bandwidth from the kernels they overlap.
    pub overlap_contention: f64,
    /// Seconds every training step spends outside the modelled kernels and collectives: data
    /// loading, logging, kernel launches of the optimizer a site's stack adds each step. Zero
    /// in the shipped model; only a site's calibration (`loam calibrate --fit`, `fixed_s`) sets
    /// it, and the step functions add it once, in the breakdown's `other`.
    pub step_overhead_s: f64,
}

impl FittedConstants {
    /// The values loam ships, fitted on the shared calibration file.
    pub const SHIPPED: FittedConstants = FittedConstants {
        gemm_sustained: 0.88,
        overlap_contention: 0.45,
        step_overhead_s: 0.0,
    };
}

impl Default for FittedConstants {
    fn default() -> FittedConstants {
        FittedConstants::SHIPPED
    }
}

/// Physical (nccl-tests): achieved bus bandwidth as a share of the datasheet link bandwidth.
pub const LINK_EFFICIENCY: f64 = 0.8;

/// Physical (nccl-tests small-message latency): seconds of a send over the scale-up fabric
/// (point-to-point and all-to-all; collectives take NCCL's own step latencies, [`nccl`]).
pub const SCALE_UP_HOP_LATENCY_S: f64 = 2e-6;

/// Counted, not fitted: elements of `hidden` width read or written per token per block by
/// work outside GEMMs over forward and backward (two norms, two residual adds, two dropouts,
/// rotary/bias epilogues; forward 14, backward 28).
pub const NONGEMM_H_ELEMENTS: f64 = 42.0;

/// Physical (facebookresearch/HolisticTraceAnalysis, `docs/source/features/cuda_kernel_launch_stats.rst`:
/// "the launch time on the CPU side is between 5-20 microseconds" in PyTorch training traces):
/// host seconds one kernel launch takes, the lower end. An eager trainer launches each kernel of
/// a block from the CPU, so a pass over a block takes at least its kernels times this.
pub const KERNEL_LAUNCH_S: f64 = 5e-6;

/// Counted (the kernels of one dense block's forward pass as Megatron-Core's Transformer Engine
/// layer runs it, 16-bit, tensor degree 1, no dropout): the norm and QKV GEMM, rotary embedding
/// of the queries and of the keys, the fused attention core, the output projection, the residual
/// add, the second norm, FC1, the activation, FC2 and the residual add.
pub const BLOCK_KERNELS_FORWARD: f64 = 12.0;

/// Counted (the same block's backward pass): input- and weight-gradient GEMMs of FC2, FC1, the
/// output projection and QKV (eight), the activation's backward, each norm's backward and its
/// weight-gradient reduction (four), the attention core's preprocess and main kernels (two),
/// the rotary embedding's backward for queries and keys (two) and the two residual gradient adds.
pub const BLOCK_KERNELS_BACKWARD: f64 = 19.0;

/// Counted (Megatron-Core's MoE layer with its all-to-all dispatcher and grouped GEMMs, at
/// least): kernels an MoE block's forward launches beyond a dense block's. Its MLP runs the router
/// GEMM, the top-k softmax, the permutation, the dispatch all-to-all, grouped FC1, the
/// activation, grouped FC2, the combine all-to-all and the unpermutation: 9 for the dense FC1,
/// activation and FC2.
pub const MOE_EXTRA_KERNELS_FORWARD: f64 = 6.0;

/// Counted (the same, backward): the router GEMM's two gradients, the softmax's, the
/// permutation's, two all-to-alls, the grouped GEMMs' four and the activation's, the
/// unpermutation's: 12 for the dense MLP's five.
pub const MOE_EXTRA_KERNELS_BACKWARD: f64 = 7.0;

/// Counted (Megatron-Core's tensor-parallel layers): collectives one pass of a block launches
/// over the tensor group, two all-reduces (after the output projection and FC2 forward, of the
/// QKV and FC1 input gradients backward), each an all-gather and a reduce-scatter under sequence
/// parallelism.
pub const TENSOR_COLLECTIVES_PER_PASS: f64 = 2.0;

/// Counted (Transformer Engine's FP8 linears): cast kernels an FP8 block's forward adds, the
/// inputs of the output projection and FC2 (the QKV and FC1 inputs are cast by the norm kernel
/// before them).
pub const FP8_CAST_KERNELS_FORWARD: f64 = 2.0;

/// Counted (the same, backward): the output gradient of each of the four linears, cast and
/// transposed in one kernel each.
pub const FP8_CAST_KERNELS_BACKWARD: f64 = 4.0;

/// Counted: bytes the optimizer step reads and writes per parameter it updates, besides the
/// gradient read and weight write (fp32 master, m and v, each read and written).
pub const OPTIMIZER_STATE_TRAFFIC: f64 = 24.0;

/// Physical: bytes the CUDA context of a training process takes on its device: the driver's
/// structures and the kernels loaded so far, about 400 MB with lazy module loading (CUDA ≥ 11.7,
/// PyTorch's default; pytorch/pytorch#109888, and 120–550 MB by device in ggml-org/llama.cpp#20595),
/// rounded up for the library handles and workspaces (cuBLAS, cuDNN) a trainer creates.
pub const CUDA_CONTEXT_BYTES: f64 = 512.0 * 1024.0 * 1024.0;

/// Counted: bytes of the buffers one NCCL channel keeps per connection at NCCL's defaults: the
/// Simple protocol's `NCCL_BUFFSIZE` (4 MiB), LL128's `NCCL_LL128_ELEMS_PER_THREAD ·
/// NCCL_LL128_MAX_NTHREADS · NCCL_STEPS · 8` (120 · 640 · 8 · 8 = 4,915,200 B) and LL's
/// `NCCL_LL_LINES_PER_THREAD · NCCL_LL_MAX_NTHREADS · NCCL_STEPS · 16` (8 · 512 · 8 · 16 =
/// 524,288 B) (NVIDIA/nccl `src/include/device.h`; the NCCL environment-variable documentation).
pub const NCCL_CHANNEL_CONNECTION_BYTES: f64 = 4_194_304.0 + 4_915_200.0 + 524_288.0;

/// Counted: connections a channel keeps per communicator: the ring's previous rank and the
/// tree's parent and child (NCCL builds both for an all-reduce; NVIDIA/nccl#986: memory grows
/// with channels and algorithms, not with ranks beyond two nodes).
pub const NCCL_CONNECTIONS_PER_CHANNEL: f64 = 3.0;

/// Counted: NCCL communicators a training process fills buffers in: its data-parallel group and
/// one model-parallel group (tensor, pipeline, context or expert). NVIDIA/nccl#864 measured about
/// 1.2 GB of NCCL memory per communicator on one node of eight GPUs once an all-reduce ran.
pub const NCCL_COMMUNICATORS: f64 = 2.0;

/// Physical: scale-up bandwidth one NCCL channel carries, one direction, bytes/s: Hopper runs
/// 32 channels (NVIDIA/nccl#1685: channels 00 to 31 per pair of H100s) over 450 GB/s, about
/// 14 GB/s each; NCCL's own per-channel NVLink figures are 20–20.6 GB/s (`SM80_NVLINK_BW`,
/// `SM90_NVLINK_BW` in `src/graph/topo.h`) before protocol overhead.
pub const NCCL_BYTES_PER_S_PER_CHANNEL: f64 = 14e9;

/// Counted: NCCL's channel bounds: at least 2 (its `MINCHANNELS` on PCIe), at most 32
/// (`MAXCHANNELS` used by default on Hopper).
pub const NCCL_CHANNELS: (f64, f64) = (2.0, 32.0);

/// Physical: share of device memory the caching allocator holds reserved but unallocated at a
/// training peak: a full 80 GB H100 (79.18 GiB) reported 1.83 GiB so beside 75.31 GiB allocated,
/// 2.3 % of the device (vllm-project/compressed-tensors#587). Training stacks run the allocator
/// with `expandable_segments` (llm-foundry's default since mosaicml/llm-foundry#1278, torchtitan's
/// launcher), which keeps it there rather than the tens of percent of a fragmented heap (ZeRO-R,
/// Rajbhandari et al. 2020 §6.3).
pub const ALLOCATOR_FRAGMENTATION: f64 = 0.023;

/// Seconds of a pipeline stage's gradient reduction `reduce` left exposed after its last
/// micro-batch: bucketed reduction runs under that micro-batch's backward (`backward` seconds
/// over the stage's `ops` ops) except the last op's bucket, slowing the compute it hides under
/// by `contention` of itself ([`stages::exposed`]). Heterogeneous pipelines, planned or
/// calibrated, expose their stages' reductions by this rule.
pub(crate) fn exposed_reduction(reduce: f64, backward: f64, ops: f64, contention: f64) -> f64 {
    let window = backward * (ops - 1.0) / ops;
    stages::exposed(reduce, window, contention).max(reduce / ops)
}

/// Seconds of one step, split as the Plan JSON reports them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepBreakdown {
    /// Block and head compute of every micro-batch (recomputation included).
    pub compute: f64,
    /// Exposed tensor-, context- and expert-parallel communication.
    pub tensor_comm: f64,
    /// Pipeline fill and drain.
    pub pipeline_bubble: f64,
    /// Exposed data-parallel (gradient, ZeRO) communication.
    pub data_comm: f64,
    /// Optimizer step and pipeline point-to-point transfers.
    pub other: f64,
}

/// What the cost model predicts for one layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepEstimate {
    /// Seconds per optimizer step.
    pub step_time_s: f64,
    /// Where the step time goes.
    pub breakdown: StepBreakdown,
    /// Tokens per second, whole job.
    pub tokens_per_s: f64,
    /// Tokens per second per device.
    pub tokens_per_s_per_device: f64,
    /// Model TFLOP/s per device under `flops_convention`.
    pub model_tflops_per_device: f64,
    /// Model FLOPs utilisation: model FLOP/s per device over the precision's dense peak.
    pub mfu: f64,
    /// Hardware FLOPs utilisation (recomputation counted).
    pub hfu: f64,
    /// The convention of `model_tflops_per_device` and `mfu`.
    pub flops_convention: FlopConvention,
    /// Model FLOPs per token.
    pub model_flops_per_token: f64,
    /// Hardware FLOPs per token (recomputation included).
    pub hardware_flops_per_token: f64,
    /// Bytes per device on the heaviest stage.
    pub memory_per_device_bytes: f64,
    /// Those bytes by what they hold.
    pub memory: MemoryBreakdown,
    /// Bytes one device moves per step over TP, PP, DP, CP and EP.
    pub comm_bytes_per_step: [f64; 5],
}

impl StepEstimate {
    /// An estimate of nothing, all zeros: a slot to fill.
    pub(crate) fn blank() -> StepEstimate {
        let memory = MemoryBreakdown::NONE;
        StepEstimate {
            step_time_s: 0.0,
            breakdown: StepBreakdown {
                compute: 0.0,
                tensor_comm: 0.0,
                pipeline_bubble: 0.0,
                data_comm: 0.0,
                other: 0.0,
            },
            tokens_per_s: 0.0,
            tokens_per_s_per_device: 0.0,
            model_tflops_per_device: 0.0,
            mfu: 0.0,
            hfu: 0.0,
            flops_convention: FlopConvention::ModelCausal,
            model_flops_per_token: 0.0,
            hardware_flops_per_token: 0.0,
            memory_per_device_bytes: 0.0,
            memory,
            comm_bytes_per_step: [0.0; 5],
        }
    }
}

/// Why a layout cannot be costed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostError {
    /// The device has no peak figure for the precision.
    #[error("device `{device}` does not support {precision}")]
    UnsupportedPrecision {
        /// Device id.
        device: String,
        /// Requested precision.
        precision: Precision,
    },
}

/// Predicts one training step of `layout` on `cluster`. Divisibility and memory are the
/// planner's business (`crate::plan::search`); this function costs whatever it is given.
pub fn estimate(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
    cluster: &ClusterFigures,
) -> Result<StepEstimate, CostError> {
    let costing = Costing::new(model, setup, cluster)?;
    let kernel = costing.kernel(layout);
    let placement = costing.placement(layout, &costing.params_per_device(layout));
    let shape = costing.shape(layout, &kernel, &placement);
    let replay = costing.replay(&shape, layout);
    let memory = memory_per_device(model, setup, layout);
    let mut estimate = StepEstimate::blank();
    costing.step(&shape, &replay, layout, memory, &mut estimate);
    Ok(estimate)
}

/// What one pipeline rank (one model chunk when interleaved) of `layout` spends on one
/// micro-batch when it holds `blocks` blocks, the embedding when `embedding` and the head when
/// `head`: the sum [`estimate`] paces the step with, the forward pass and the collectives apart,
/// and the send to the next stage. The Plan IR's stage times come from here.
pub fn stage_seconds(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
    cluster: &ClusterFigures,
    blocks: u64,
    embedding: bool,
    head: bool,
) -> Result<StageSeconds, CostError> {
    let costing = Costing::new(model, setup, cluster)?;
    Ok(costing.stage(layout, blocks as f64, embedding, head))
}

/// Bytes a layout may use on `device`: its memory less what a training process holds besides
/// its tensors ([`reserved_memory`]). The one place that says what a layout may use: the search,
/// the pair plans, the checker's fit, slices and calibration all compare with it.
pub fn usable_memory(device: &DeviceFigures) -> f64 {
    (device.memory_bytes - reserved_memory(device)).max(0.0)
}

/// Bytes a training process holds on `device` outside its tensors: the CUDA context
/// ([`CUDA_CONTEXT_BYTES`]), NCCL's buffers (channels for the device's scale-up bandwidth ×
/// [`NCCL_CHANNEL_CONNECTION_BYTES`] × connections × communicators) and the allocator's
/// fragmentation ([`ALLOCATOR_FRAGMENTATION`] of its memory). Devices of other vendors run their
/// own runtime and collective library (HCCL, RCCL, Habana's HCCL) with the same buffer scheme;
/// no separate figure is published for them.
pub fn reserved_memory(device: &DeviceFigures) -> f64 {
    let (fewest, most) = NCCL_CHANNELS;
    let channels = (device.scale_up_bandwidth / NCCL_BYTES_PER_S_PER_CHANNEL).clamp(fewest, most);
    let nccl = channels
        * NCCL_CHANNEL_CONNECTION_BYTES
        * NCCL_CONNECTIONS_PER_CHANNEL
        * NCCL_COMMUNICATORS;
    CUDA_CONTEXT_BYTES + nccl + ALLOCATOR_FRAGMENTATION * device.memory_bytes
}

#[cfg(test)]
mod stage_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod usable_tests;
