//! Memory per device: model states under ZeRO 0–3 (Rajbhandari et al. 2020) and activations under
//! each recomputation mode (Korthikanti et al. 2022, re-derived for GQA, SwiGLU and flash attention).

use super::params::{param_count, params_per_device};
use super::{Layout, ModelDims, TrainSetup};
use crate::types::{Mlp, Optimizer, Precision, Recompute};
use serde::Serialize;

/// Bytes one device needs, by what they hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    /// Parameters in the training precision (ZeRO-3: the shard plus two gathered layers).
    pub weights: f64,
    /// Gradients in the training precision.
    pub gradients: f64,
    /// Optimizer state (fp32 master copy and moments).
    pub optimizer: f64,
    /// Activations stashed for backward, for every in-flight micro-batch.
    pub activations: f64,
    /// Sum of the above.
    pub total: f64,
}

/// Model-state bytes (weights, gradients, optimizer state) of `params` parameters under ZeRO
/// `zero` over `shards` data-parallel ranks: `(2 + 2 + K)·Ψ` for stage 0, `2Ψ + 2Ψ + KΨ/N` for
/// stage 1, `2Ψ + (2 + K)Ψ/N` for stage 2 and `(2 + 2 + K)Ψ/N` for stage 3 (ZeRO paper §5).
/// Returns `(weights, gradients, optimizer)`.
pub fn model_state_bytes(
    params: f64,
    zero: u8,
    shards: f64,
    precision: Precision,
    optimizer: Optimizer,
) -> (f64, f64, f64) {
    let elt = precision.bytes();
    // In pure 32-bit training the weights are the master copy, so K loses its fp32 copy.
    let k = if elt >= 4.0 {
        optimizer.state_bytes_per_param() - 4.0
    } else {
        optimizer.state_bytes_per_param()
    };
    let n = shards.max(1.0);
    let w = elt * params;
    let g = elt * params;
    let o = k * params;
    match zero {
        0 => (w, g, o),
        1 => (w, g, o / n),
        2 => (w, g / n, o / n),
        _ => (w / n, g / n, o / n),
    }
}

/// Activation bytes one transformer block stashes for one micro-batch on one device, with
/// flash attention (no `s²` score tensors are kept).
///
/// For a GPT-style block (MHA, GeLU with `ffn = 4h`, dropout, 16-bit) this reproduces Korthikanti
/// et al. Table 2 without the `5as/h` term: `sbh(10 + 24/t)` with tensor parallelism and `34·sbh/t`
/// with sequence parallelism. Full recomputation keeps only the block input.
pub fn activation_bytes_per_layer(
    model: &ModelDims,
    layout: &Layout,
    precision: Precision,
    recompute: Recompute,
) -> f64 {
    let elt = precision.bytes();
    let t = f64::from(layout.tensor.max(1));
    let tokens =
        f64::from(layout.micro_batch) * f64::from(model.seq_len) / f64::from(layout.context.max(1));
    let h = f64::from(model.hidden);
    let replicated_div = if layout.sequence_parallel { t } else { 1.0 };
    if recompute == Recompute::Full {
        return tokens * elt * h / replicated_div;
    }
    tokens * per_token_layer_bytes(model, elt, t, replicated_div)
}

/// Bytes per token of one block's stash with no recomputation (see [`activation_bytes_per_layer`]).
fn per_token_layer_bytes(model: &ModelDims, elt: f64, t: f64, replicated_div: f64) -> f64 {
    let h = f64::from(model.hidden);
    let f = f64::from(model.ffn) * model.active_experts();
    let mask = if model.dropout { 1.0 } else { 0.0 };
    // Two norm inputs, the QKV input, the MLP input, and two dropout masks.
    let replicated = 2.0 * elt * h + elt * h + elt * h + 2.0 * mask * h;
    // Q, K, V and the attention output (flash attention keeps no scores).
    let attention = elt * h + 2.0 * elt * model.kv_dim() + elt * h;
    let mlp = match model.mlp {
        // Activation input and output.
        Mlp::Gelu => 2.0 * elt * f,
        // Gate and up outputs, and their product.
        Mlp::Swiglu => 3.0 * elt * f,
    };
    replicated / replicated_div + (attention + mlp) / t
}

/// Memory per device on the heaviest pipeline stage.
///
/// With 1F1B the first stage stashes `min(p, m)` micro-batches of its `layers/p` blocks;
/// interleaving multiplies that by `1 + (p−1)/(p·v)`. Full recomputation adds one block's
/// working set during its backward. The last stage also holds fp32 logits of one micro-batch.
pub fn memory_per_device(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
) -> MemoryBreakdown {
    let precision = setup.precision;
    let params = params_per_device(model, layout);
    let shards = f64::from(layout.data.max(1)) * f64::from(layout.context.max(1));
    let (mut weights, gradients, optimizer) =
        model_state_bytes(params, layout.zero, shards, precision, setup.optimizer);
    if layout.zero >= 3 {
        // Two blocks gathered at a time (the current one and the prefetched next one).
        let count = param_count(model);
        weights += 2.0 * count.per_layer / f64::from(layout.tensor.max(1)) * precision.bytes();
    }
    let p = f64::from(layout.pipeline.max(1));
    let v = f64::from(layout.virtual_stages.max(1));
    let m = layout.micro_batches(setup.global_batch);
    let layers_per_stage = f64::from(model.layers) / p;
    let in_flight = p.min(m).max(1.0);
    let interleave = if layout.virtual_stages > 1 {
        1.0 + (p - 1.0) / (p * v)
    } else {
        1.0
    };
    let mut per_layer = activation_bytes_per_layer(model, layout, precision, layout.recompute);
    if !setup.flash_attention && layout.recompute == Recompute::None {
        // Korthikanti's `5·a·s²·b` (scores, softmax output, dropout mask and output), split over
        // tensor ranks and context chunks.
        let s = f64::from(model.seq_len);
        per_layer += 5.0 * f64::from(model.heads) * s * s * f64::from(layout.micro_batch)
            / f64::from(layout.tensor.max(1))
            / f64::from(layout.context.max(1));
    }
    let mut first_stage = per_layer * layers_per_stage * in_flight * interleave;
    if layout.recompute == Recompute::Full {
        first_stage += activation_bytes_per_layer(model, layout, precision, Recompute::None);
    }
    let tokens =
        f64::from(layout.micro_batch) * f64::from(model.seq_len) / f64::from(layout.context.max(1));
    let logits = tokens * f64::from(model.vocab) / f64::from(layout.tensor.max(1)) * 4.0;
    let activations = if layout.pipeline <= 1 {
        first_stage + logits
    } else {
        let last = per_layer * layers_per_stage + logits;
        first_stage.max(last)
    };
    MemoryBreakdown {
        weights,
        gradients,
        optimizer,
        activations,
        total: weights + gradients + optimizer + activations,
    }
}
