//! Seconds and activation bytes of each op of the operator graph on one device type, for the
//! heterogeneous pipeline planner.
//!
//! Built from the same primitives as the homogeneous step model ([`block_time`], the GEMM
//! timing of [`Rates`], the tensor-parallel collectives of [`tensor_comm_per_layer`]), so a
//! stage costs what the same layers cost in [`super::estimate`]. A block's time is split between
//! its attention and MLP ops by their share of the block's FLOPs. Precision-sensitive ops never run in fp8: in an fp8 job they
//! run in bf16, and a device hosts an op only if it supports the op's precision.

use super::compute::{HeadTime, Rates, block_time, embedding_time};
use super::network::tensor_comm_per_layer;
use super::stages::tensor_exposed;
use crate::hardware::ClusterFigures;
use crate::workload::{
    FULL_REPLAY_TP_COLLECTIVES, GemmInputs, Layout, ModelDims, OpGraph, OpKind, TrainSetup,
    activation_bytes_per_layer, forward_flops, logits_bytes, tp_buffer, tp_per_layer,
};
use loam_ir::types::{Precision, Recompute};

/// What one op costs one device for one micro-batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpCost {
    /// Forward, backward and recomputation seconds, with its exposed tensor-parallel collectives.
    pub seconds: f64,
    /// Backward seconds alone (the window gradient reduction hides under).
    pub backward: f64,
    /// Forward seconds alone, with the forward's tensor-parallel collectives.
    pub forward: f64,
    /// Of `seconds`, the exposed tensor-parallel collectives.
    pub tensor_comm: f64,
    /// Activation bytes stashed for the backward pass.
    pub stash_bytes: f64,
    /// Whether the device can run the op at the precision the op needs.
    pub hostable: bool,
}

/// An op the device cannot run.
const UNHOSTABLE: OpCost = OpCost {
    seconds: f64::INFINITY,
    backward: f64::INFINITY,
    forward: f64::INFINITY,
    tensor_comm: 0.0,
    stash_bytes: 0.0,
    hostable: false,
};

/// The precision an op runs in: sensitive ops never in fp8.
pub fn op_precision(job: Precision, sensitive: bool) -> Precision {
    if sensitive && job == Precision::Fp8 {
        Precision::Bf16
    } else {
        job
    }
}

/// How one device group runs its ops.
#[derive(Debug, Clone, Copy)]
pub struct OpSetting {
    /// Tensor-parallel degree inside the node.
    pub tensor: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// Activation recomputation.
    pub recompute: Recompute,
}

/// The cost of every op of `graph` on `cluster`'s device under `setting`, in chain order.
/// Heterogeneous plans split norms and dropout over the tensor group (sequence parallelism).
pub fn op_costs(
    graph: &OpGraph,
    model: &ModelDims,
    setup: &TrainSetup,
    cluster: &ClusterFigures,
    setting: OpSetting,
) -> Vec<OpCost> {
    let layout = Layout {
        tensor: setting.tensor,
        micro_batch: setting.micro_batch,
        recompute: setting.recompute,
        sequence_parallel: setting.tensor > 1,
        ..Layout::single()
    };
    op_costs_of_layout(graph, model, setup, cluster, &layout)
}

/// [`op_costs`] under `layout`'s tensor degree, micro-batch, recomputation and sequence
/// parallelism (its other fields are not read): the calibration of published heterogeneous
/// runs times their stages this way, with sequence parallelism as each run had it.
pub(crate) fn op_costs_of_layout(
    graph: &OpGraph,
    model: &ModelDims,
    setup: &TrainSetup,
    cluster: &ClusterFigures,
    layout: &Layout,
) -> Vec<OpCost> {
    let device = &cluster.device;
    let supports = |p: Precision| device.peak_flops.contains_key(&p);
    let layout = *layout;
    let t = f64::from(layout.tensor.max(1));
    let tokens = layout.micro_batch_tokens(model.seq_len);
    let h = f64::from(model.hidden);

    // One block at the job's precision (and at bf16 for blocks marked sensitive in fp8 jobs).
    let block_at = |precision: Precision| {
        let rates = Rates::new(cluster, precision)?;
        let block = block_time(model, &layout, &rates, setup.flash_attention);
        let buffer = tp_buffer(model, &layout, precision);
        let tp = tensor_comm_per_layer(&layout, model.layers, buffer, cluster);
        // The forward runs two of a block's collectives (after the attention and the MLP),
        // the ones a full replay repeats.
        let tp_forward = tp * FULL_REPLAY_TP_COLLECTIVES / tp_per_layer(&layout, model.layers);
        let inputs = GemmInputs::of(setup, layout.zero);
        let stash = activation_bytes_per_layer(model, &layout, precision, inputs, layout.recompute);
        Some((block, tp, tp_forward, stash, rates))
    };
    let forward = forward_flops(model);
    let attention_flops = forward.attention();
    let attention_share = attention_flops / (attention_flops + forward.mlp).max(1.0);

    let job = setup.precision;
    let plain = block_at(job);
    let careful = block_at(op_precision(job, true));
    graph
        .ops()
        .map(|op| {
            let precision = op_precision(job, op.sensitive);
            if !supports(precision) {
                return UNHOSTABLE;
            }
            let block = if op.sensitive { careful } else { plain };
            let Some((block, tp, tp_forward, stash, rates)) = block else {
                return UNHOSTABLE;
            };
            let elt = precision.bytes();
            let bw = rates.memory_bandwidth;
            let mut tensor_comm = 0.0;
            let (seconds, backward, forward, stash_bytes) = match op.kind {
                OpKind::Attention | OpKind::Mlp => {
                    let share = if op.kind == OpKind::Attention {
                        attention_share
                    } else {
                        1.0 - attention_share
                    };
                    // Selective recomputation replays only the attention core.
                    let replay = match layout.recompute {
                        Recompute::Selective if op.kind == OpKind::Attention => block.recompute,
                        Recompute::Selective => 0.0,
                        _ => block.recompute * share,
                    };
                    // The op's share of the block's collectives, each pass's beside its share
                    // of the tensor-split GEMMs when they overlap (a whole replay repeats the
                    // forward's, beside its GEMMs again).
                    let contention = cluster.fitted.overlap_contention;
                    let forward_tp = tensor_exposed(
                        &layout,
                        tp_forward / 2.0,
                        block.tensor_gemm_forward * share,
                        contention,
                    );
                    let replayed_gemms = if layout.recompute == Recompute::Full {
                        block.tensor_gemm_forward
                    } else {
                        0.0
                    };
                    let backward_tp = tensor_exposed(
                        &layout,
                        (tp - tp_forward) / 2.0,
                        (block.tensor_gemm_backward + replayed_gemms) * share,
                        contention,
                    );
                    tensor_comm = forward_tp + backward_tp;
                    let seconds = (block.forward + block.backward) * share + replay + tensor_comm;
                    let forward = block.forward * share + forward_tp;
                    (seconds, block.backward * share, forward, stash / 2.0)
                }
                // A gather forward and a scatter-add backward of one row per token.
                OpKind::Embedding => {
                    let s = embedding_time(model, tokens, elt, &rates);
                    (s, 2.0 * s / 3.0, s / 3.0, 0.0)
                }
                // Read, normalise and write, forward and backward.
                OpKind::FinalNorm => {
                    let s = 6.0 * tokens * h * elt / t / bw;
                    (s, 2.0 * s / 3.0, s / 3.0, tokens * h * elt)
                }
                OpKind::LmHead => {
                    let head = HeadTime::new(model, tokens, layout.tensor, &rates);
                    (
                        head.logits(),
                        head.logits_backward(),
                        head.logits_forward,
                        tokens * h * elt,
                    )
                }
                // The logits themselves are the stash.
                OpKind::Loss => {
                    let s = HeadTime::new(model, tokens, layout.tensor, &rates).loss;
                    (
                        s,
                        s / 2.0,
                        s / 2.0,
                        logits_bytes(model, tokens, layout.tensor),
                    )
                }
            };
            OpCost {
                seconds,
                backward,
                forward,
                tensor_comm,
                stash_bytes,
                hostable: true,
            }
        })
        .collect()
}
