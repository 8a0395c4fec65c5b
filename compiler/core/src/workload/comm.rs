//! The bytes each parallel dimension moves: buffer sizes of single collectives and their counts.
//!
//! Sizes are the full buffer `S` of one collective as nccl-tests defines it; the cost model turns
//! them into time on the tier the group crosses (ring factors `2(n−1)/n`, `(n−1)/n`).

use super::params::params_per_device;
use super::{Layout, ModelDims, TrainSetup};
use crate::types::{Arch, Recompute};
use serde::Serialize;

/// Communication one device takes part in during one training step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CommSizes {
    /// Bytes of one TP all-reduce (or reduce-scatter + all-gather pair with sequence
    /// parallelism): the block activation `b·s/cp · h` (SC21 §3.2).
    pub tp_buffer: f64,
    /// TP collectives per block per micro-batch: 2 forward + 2 backward, +2 with full
    /// recomputation (the forward is replayed), +1 all-gather re-do with selective + SP.
    pub tp_per_layer: f64,
    /// Bytes sent at one pipeline-stage boundary per micro-batch per direction: `b·s/cp · h`.
    pub pp_buffer: f64,
    /// Gradient bytes this device reduces over data-parallel ranks each step (or each
    /// micro-batch under ZeRO-3); gradients are reduced in the training precision.
    pub dp_grad_buffer: f64,
    /// Parameter bytes gathered per ZeRO-3 all-gather of the whole stage (0 below stage 3).
    pub dp_param_buffer: f64,
    /// Bytes of K and V one ring step of context parallelism passes on, per block, forward.
    pub cp_kv_buffer: f64,
    /// Bytes of one MoE all-to-all (dispatch or combine) per block per micro-batch.
    pub ep_buffer: f64,
    /// Bytes this device moves in one step, by dimension (TP, PP, DP, CP, EP), for reports.
    pub per_step: [f64; 5],
}

/// Sizes of the collectives a layout causes.
pub fn comm_sizes(model: &ModelDims, setup: &TrainSetup, layout: &Layout) -> CommSizes {
    let elt = setup.precision.bytes();
    let t = f64::from(layout.tensor.max(1));
    let cp = f64::from(layout.context.max(1));
    let d = f64::from(layout.data.max(1));
    let ep = f64::from(layout.expert.max(1));
    let p = f64::from(layout.pipeline.max(1));
    let v = f64::from(layout.virtual_stages.max(1));
    let m = layout.micro_batches(setup.global_batch);
    let h = f64::from(model.hidden);
    let tokens = f64::from(layout.micro_batch) * f64::from(model.seq_len) / cp;
    let layers_per_stage = f64::from(model.layers) / p;
    let tp_buffer = tokens * h * elt;
    let tp_per_layer = 4.0
        + match layout.recompute {
            Recompute::Full => 2.0,
            Recompute::Selective if layout.sequence_parallel => 1.0,
            _ => 0.0,
        };
    let params = params_per_device(model, layout);
    let dp_grad_buffer = params * elt;
    let dp_param_buffer = if layout.zero >= 3 { params * elt } else { 0.0 };
    let cp_kv_buffer = 2.0 * tokens * model.kv_dim() * elt / t;
    let ep_buffer = match model.arch {
        Arch::Dense => 0.0,
        Arch::Moe => tokens * model.active_experts() * h * elt / t,
    };
    let ring = |n: f64| if n > 1.0 { (n - 1.0) / n } else { 0.0 };
    let tp_step = m * layers_per_stage * tp_per_layer * tp_buffer * ring(t);
    let pp_step = if layout.pipeline > 1 {
        2.0 * m * v * tp_buffer / t
    } else {
        0.0
    };
    let dp_step = if layout.zero >= 3 {
        m * 3.0 * dp_grad_buffer * ring(d * cp)
    } else {
        2.0 * dp_grad_buffer * ring(d * cp)
    };
    let cp_step = m * layers_per_stage * 3.0 * cp_kv_buffer * (cp - 1.0);
    let ep_step = m * layers_per_stage * 4.0 * ep_buffer * ring(ep);
    CommSizes {
        tp_buffer,
        tp_per_layer,
        pp_buffer: tp_buffer / t,
        dp_grad_buffer,
        dp_param_buffer,
        cp_kv_buffer,
        ep_buffer,
        per_step: [tp_step, pp_step, dp_step, cp_step, ep_step],
    }
}
