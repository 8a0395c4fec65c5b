//! Memory per device: model states under ZeRO 0–3 (Rajbhandari et al. 2020) and activations under
//! each recomputation mode (Korthikanti et al. 2022, re-derived for GQA, SwiGLU and flash attention).

use super::params::{param_count, params_per_device_counted};
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
    let per_token = layer_bytes_per_token(model, precision, layout);
    let (kept, input_only) = layer_stash(model, layout, precision, per_token);
    if recompute == Recompute::Full {
        input_only
    } else {
        kept
    }
}

/// [`activation_bytes_per_layer`] without recomputation and under full recomputation, from the
/// layout's [`layer_bytes_per_token`].
fn layer_stash(
    model: &ModelDims,
    layout: &Layout,
    precision: Precision,
    per_token: f64,
) -> (f64, f64) {
    let elt = precision.bytes();
    let t = f64::from(layout.tensor.max(1));
    let tokens = layout.micro_batch_tokens(model.seq_len);
    let h = f64::from(model.hidden);
    let replicated_div = if layout.sequence_parallel { t } else { 1.0 };
    (tokens * per_token, tokens * elt * h / replicated_div)
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

/// Bytes of the fp32 logits of `tokens` tokens with the vocabulary split over `tensor` ranks:
/// what the loss keeps for its backward on the last pipeline stage.
pub(crate) fn logits_bytes(model: &ModelDims, tokens: f64, tensor: u32) -> f64 {
    tokens * f64::from(model.vocab) / f64::from(tensor.max(1)) * 4.0
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
    let count = param_count(model);
    let params = params_per_device_counted(model, &count, layout);
    let (weights, gradients, optimizer) = state_bytes(setup, layout, params, count.per_layer);
    let activations = stage_activation_bytes(model, setup, layout);
    breakdown(weights, gradients, optimizer, activations)
}

/// The breakdown of the four parts, summed in one fixed order.
pub(crate) fn breakdown(
    weights: f64,
    gradients: f64,
    optimizer: f64,
    activations: f64,
) -> MemoryBreakdown {
    MemoryBreakdown {
        weights,
        gradients,
        optimizer,
        activations,
        total: weights + gradients + optimizer + activations,
    }
}

/// Weight, gradient and optimizer bytes of [`memory_per_device`], from the parameters one device
/// holds (`params`) and those of one block (`per_layer`): the only part that depends on the ZeRO
/// stage, so the layout search works it out once per stage and the activations once per
/// recomputation mode.
pub(crate) fn state_bytes(
    setup: &TrainSetup,
    layout: &Layout,
    params: f64,
    per_layer: f64,
) -> (f64, f64, f64) {
    let precision = setup.precision;
    let shards = f64::from(layout.data.max(1)) * f64::from(layout.context.max(1));
    let (mut weights, gradients, optimizer) =
        model_state_bytes(params, layout.zero, shards, precision, setup.optimizer);
    if layout.zero >= 3 {
        // Two blocks gathered at a time (the current one and the prefetched next one).
        weights += 2.0 * per_layer / f64::from(layout.tensor.max(1)) * precision.bytes();
    }
    (weights, gradients, optimizer)
}

/// Activation bytes of [`memory_per_device`]: the only part that depends on recomputation.
fn stage_activation_bytes(model: &ModelDims, setup: &TrainSetup, layout: &Layout) -> f64 {
    let per_token = layer_bytes_per_token(model, setup.precision, layout);
    StageActivations::new(model, setup, layout, per_token).bytes(layout.recompute)
}

/// Bytes per token of one block's stash with no recomputation, under `layout`'s tensor degree and
/// sequence parallelism (nothing else of the layout changes it).
pub(crate) fn layer_bytes_per_token(
    model: &ModelDims,
    precision: Precision,
    layout: &Layout,
) -> f64 {
    let t = f64::from(layout.tensor.max(1));
    let replicated_div = if layout.sequence_parallel { t } else { 1.0 };
    per_token_layer_bytes(model, precision.bytes(), t, replicated_div)
}

/// The activation bytes of one layout under every recomputation mode, with what the modes share
/// worked out once: the layout search asks for up to three modes of each layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageActivations {
    /// [`activation_bytes_per_layer`] without recomputation.
    kept: f64,
    /// [`activation_bytes_per_layer`] under full recomputation.
    input_only: f64,
    /// Materialised attention scores per block, without flash attention.
    scores: Option<f64>,
    layers_per_stage: f64,
    in_flight: f64,
    interleave: f64,
    logits: f64,
    pipelined: bool,
}

impl StageActivations {
    /// The activations of `layout` whatever its recomputation; `per_token` is its
    /// [`layer_bytes_per_token`].
    #[inline]
    pub(crate) fn new(
        model: &ModelDims,
        setup: &TrainSetup,
        layout: &Layout,
        per_token: f64,
    ) -> StageActivations {
        let p = f64::from(layout.pipeline.max(1));
        let v = f64::from(layout.virtual_stages.max(1));
        let m = layout.micro_batches(setup.global_batch);
        let tokens = layout.micro_batch_tokens(model.seq_len);
        let (kept, input_only) = layer_stash(model, layout, setup.precision, per_token);
        let scores = if setup.flash_attention {
            None
        } else {
            // Korthikanti's `5·a·s²·b` (scores, softmax output, dropout mask and output), split
            // over tensor ranks and context chunks.
            let s = f64::from(model.seq_len);
            Some(
                5.0 * f64::from(model.heads) * s * s * f64::from(layout.micro_batch)
                    / f64::from(layout.tensor.max(1))
                    / f64::from(layout.context.max(1)),
            )
        };
        StageActivations {
            kept,
            input_only,
            scores,
            layers_per_stage: layout.layers_per_stage(model.layers),
            in_flight: p.min(m).max(1.0),
            interleave: if layout.virtual_stages > 1 {
                1.0 + (p - 1.0) / (p * v)
            } else {
                1.0
            },
            logits: logits_bytes(model, tokens, layout.tensor),
            pipelined: layout.pipeline > 1,
        }
    }

    /// The bytes under `recompute`.
    pub(crate) fn bytes(&self, recompute: Recompute) -> f64 {
        let layers_per_stage = self.layers_per_stage;
        let mut per_layer = if recompute == Recompute::Full {
            self.input_only
        } else {
            self.kept
        };
        if let (Recompute::None, Some(scores)) = (recompute, self.scores) {
            per_layer += scores;
        }
        let mut first_stage = per_layer * layers_per_stage * self.in_flight * self.interleave;
        if recompute == Recompute::Full {
            first_stage += self.kept;
        }
        if self.pipelined {
            let last = per_layer * layers_per_stage + self.logits;
            first_stage.max(last)
        } else {
            first_stage + self.logits
        }
    }
}
