//! The cost model: seconds per training step of a layout on a homogeneous cluster.
//!
//! step = micro-batches × (block compute + exposed tensor/context/expert communication + head)
//!      + pipeline bubble `(p−1)/v` stage-micro-batches + pipeline p2p
//!      + exposed data-parallel communication + optimizer step (memory-bound).
//!
//! Calibrated constants are few and physical; `docs/cost-model.md` says what each one means and
//! how it was set. Everything else comes from datasheets ([`DeviceFigures`], [`ClusterFigures`]).

mod compute;
mod network;
pub mod ops;

use crate::hardware::{ClusterFigures, DeviceFigures};
use crate::types::Precision;
use crate::workload::{
    FlopConvention, Layout, MemoryBreakdown, ModelDims, TrainSetup, comm_sizes, flops_per_token,
    memory_per_device,
};
use compute::{Rates, block_time, head_time};
use network::{Collective, Group, collective_time, p2p_time};
use serde::Serialize;

/// Calibrated: the fraction of datasheet dense peak that tensor cores sustain inside large GEMMs
/// (clock under power load, instruction issue, epilogues).
pub const GEMM_PEAK_FRACTION: f64 = 0.96;

/// Calibrated: FLOPs a GEMM kernel does per byte of DRAM traffic for its tiles at 2-byte
/// operands (set by tile size and L2 reuse). Devices whose `peak / memory bandwidth` nears it
/// lose efficiency, which is why H100 sustains a lower share of its peak than A100.
pub const GEMM_TILE_INTENSITY: f64 = 420.0;

/// Physical (nccl-tests): achieved bus bandwidth as a share of the datasheet link bandwidth.
pub const LINK_EFFICIENCY: f64 = 0.8;

/// Physical (nccl-tests small-message latency): seconds per ring step on the scale-up fabric.
pub const SCALE_UP_HOP_LATENCY_S: f64 = 2e-6;

/// Counted, not fitted: elements of `hidden` width read or written per token per block by
/// work outside GEMMs over forward and backward (two norms, two residual adds, two dropouts,
/// rotary/bias epilogues; forward 14, backward 28).
pub const NONGEMM_H_ELEMENTS: f64 = 42.0;

/// Counted: bytes the optimizer step reads and writes per parameter it updates, besides the
/// gradient read and weight write (fp32 master, m and v, each read and written).
pub const OPTIMIZER_STATE_TRAFFIC: f64 = 24.0;

/// Physical: share of device memory a training process can fill (CUDA context, NCCL buffers,
/// allocator fragmentation take the rest).
pub const USABLE_MEMORY_FRACTION: f64 = 0.9;

/// Peak FLOP/s attention kernels run at: FP8 GEMMs leave attention in 16-bit.
pub(crate) fn attention_peak(device: &DeviceFigures, precision: Precision) -> f64 {
    let wanted = if precision == Precision::Fp8 {
        Precision::Bf16
    } else {
        precision
    };
    device
        .peak_flops
        .get(&wanted)
        .or_else(|| device.peak_flops.get(&precision))
        .copied()
        .unwrap_or(0.0)
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
    let rates = Rates::new(&cluster.device, setup.precision).ok_or_else(|| {
        CostError::UnsupportedPrecision {
            device: cluster.device.id.clone(),
            precision: setup.precision,
        }
    })?;
    let t = f64::from(layout.tensor.max(1));
    let cp = f64::from(layout.context.max(1));
    let d = f64::from(layout.data.max(1));
    let ep = f64::from(layout.expert.max(1));
    let p = f64::from(layout.pipeline.max(1));
    let v = f64::from(layout.virtual_stages.max(1));
    let m = layout.micro_batches(setup.global_batch).max(1.0);
    let layers_per_stage = f64::from(model.layers) / p;
    let sizes = comm_sizes(model, setup, layout);

    let block = block_time(model, layout, &rates, setup.flash_attention);
    let head = head_time(model, layout, &rates);

    // Tensor parallel: blocking collectives on the critical path of every block.
    let tp_group = Group {
        size: t,
        stride: 1.0,
    };
    let tp_kind = if layout.sequence_parallel {
        Collective::Gather
    } else {
        Collective::AllReduce
    };
    let tp_one = match tp_kind {
        // Sequence parallelism splits each all-reduce into a reduce-scatter and an all-gather.
        Collective::Gather => 2.0 * collective_time(tp_kind, sizes.tp_buffer, tp_group, cluster),
        _ => collective_time(tp_kind, sizes.tp_buffer, tp_group, cluster),
    };
    let tp_layer = sizes.tp_per_layer * tp_one;
    // Context parallel: K/V ring steps hide under the attention core they feed.
    let cp_step = p2p_time(sizes.cp_kv_buffer, t, cluster);
    let cp_layer = if layout.context > 1 {
        let ring = (cp - 1.0) * cp_step;
        let fwd = (ring - block.attention_forward).max(0.0);
        let bwd = (2.0 * ring - 2.0 * block.attention_forward).max(0.0);
        let replay = if block.recompute > 0.0 { fwd } else { 0.0 };
        fwd + bwd + replay
    } else {
        0.0
    };
    // Expert parallel: dispatch and combine all-to-alls, forward and backward.
    let ep_group = Group {
        size: ep,
        stride: t * cp,
    };
    let ep_layer = 4.0 * collective_time(Collective::AllToAll, sizes.ep_buffer, ep_group, cluster);
    let comm_layer = tp_layer + cp_layer + ep_layer;

    // Data parallel over data × context ranks, stride t.
    let dp_group = Group {
        size: d * cp,
        stride: t,
    };
    let grad_rs = collective_time(Collective::Gather, sizes.dp_grad_buffer, dp_group, cluster);
    let lps = layers_per_stage.max(1.0);
    let (dp_per_mb, dp_step) = match layout.zero {
        0 | 1 => {
            // Bucketed reduction overlaps the last micro-batch's backward except its last bucket;
            // ZeRO-1 gathers updated parameters under the next forward the same way.
            let window = (block.backward + block.recompute) * (lps - 1.0);
            let reduce = 2.0 * grad_rs;
            let exposed = (reduce - window).max(reduce / lps);
            (0.0, exposed)
        }
        2 => {
            // Gradients are reduce-scattered every micro-batch under its backward.
            let window = (block.backward + block.recompute) * (lps - 1.0);
            let exposed = (grad_rs - window).max(grad_rs / lps);
            let gather_window = block.forward * (lps - 1.0);
            (exposed, (grad_rs - gather_window).max(grad_rs / lps))
        }
        _ => {
            // FSDP: per block, gather weights before forward and backward (prefetched under the
            // previous block) and reduce-scatter gradients under the backward.
            let ag_layer = grad_rs / lps;
            let fwd = (ag_layer - block.forward).max(0.0);
            let bwd = (2.0 * ag_layer - block.backward - block.recompute).max(0.0);
            ((fwd + bwd) * lps + ag_layer, 0.0)
        }
    };

    let stage_mb = layers_per_stage * (block.total() + comm_layer) + head;
    let steady = m * stage_mb;
    let bubble = (p - 1.0) / v * stage_mb;
    let pp_comm = if layout.pipeline > 1 {
        let stride = t * cp * d;
        2.0 * v * m * p2p_time(sizes.pp_buffer, stride, cluster)
    } else {
        0.0
    };
    let data_comm = m * dp_per_mb + dp_step;

    let memory = memory_per_device(model, setup, layout);
    let shards = if layout.zero >= 1 { d * cp } else { 1.0 };
    let elt = setup.precision.bytes();
    let params_local = sizes.dp_grad_buffer / elt;
    let optimizer = params_local / shards * (OPTIMIZER_STATE_TRAFFIC + 2.0 * elt)
        / cluster.device.memory_bandwidth;

    let step = steady + bubble + pp_comm + data_comm + optimizer;
    let breakdown = StepBreakdown {
        compute: m * (layers_per_stage * block.total() + head),
        tensor_comm: m * layers_per_stage * comm_layer,
        pipeline_bubble: bubble,
        data_comm,
        other: pp_comm + optimizer,
    };
    let tokens_per_s = setup.tokens_per_step(model) / step;
    let devices = layout.devices() as f64;
    let per_device = tokens_per_s / devices;
    let flops = flops_per_token(model, layout.recompute);
    let model_flops_s = per_device * flops.model;
    Ok(StepEstimate {
        step_time_s: step,
        breakdown,
        tokens_per_s,
        tokens_per_s_per_device: per_device,
        model_tflops_per_device: model_flops_s / 1e12,
        mfu: model_flops_s / rates.gemm_peak,
        hfu: per_device * flops.hardware / rates.gemm_peak,
        flops_convention: FlopConvention::ModelPalm,
        model_flops_per_token: flops.model,
        hardware_flops_per_token: flops.hardware,
        memory_per_device_bytes: memory.total,
        memory,
        comm_bytes_per_step: sizes.per_step,
    })
}

/// Bytes a layout may use on `device` (see [`USABLE_MEMORY_FRACTION`]).
pub fn usable_memory(device: &DeviceFigures) -> f64 {
    device.memory_bytes * USABLE_MEMORY_FRACTION
}

#[cfg(test)]
mod tests;
