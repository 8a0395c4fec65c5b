//! Memory per device: model states under ZeRO 0–3 (Rajbhandari et al. 2020) and activations under
//! each recomputation mode (Korthikanti et al. 2022, re-derived for GQA, latent attention, SwiGLU,
//! experts and flash attention); the key/value cache a token adds.

use super::arch::{BlockKind, block_kinds, dense_data_ranks, expert_data_ranks};
use super::params::{HeldParams, held_params, param_count};
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

/// Bytes per token of one block's stash with no recomputation (see [`activation_bytes_per_layer`]):
/// the heaviest block kind of the model (an MoE block when there is one).
fn per_token_layer_bytes(model: &ModelDims, elt: f64, t: f64, replicated_div: f64) -> f64 {
    block_kinds(model)
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|&(_, kind)| block_bytes_per_token(model, kind, elt, t, replicated_div))
        .fold(0.0, f64::max)
}

/// [`per_token_layer_bytes`] of one block of `kind`.
fn block_bytes_per_token(
    model: &ModelDims,
    kind: BlockKind,
    elt: f64,
    t: f64,
    replicated_div: f64,
) -> f64 {
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    let mask = if model.dropout { 1.0 } else { 0.0 };
    // Two norm inputs, the QKV input, the MLP input, and two dropout masks.
    let replicated = 2.0 * elt * h + elt * h + elt * h + 2.0 * mask * h;
    // Q, K, V and the attention output (flash attention keeps no scores).
    let (qk, v) = model.attention_head_dims();
    let attention = match &model.mla {
        // Grouped-query: `heads` query and output heads, `kv_heads` key and value heads.
        None => elt * (a * qk + f64::from(model.kv_heads) * (qk + v) + a * v),
        // Latent attention as Megatron-Core runs it: the up-projected per-head Q, K, V and the
        // output, plus the normed latents the up-projections read.
        Some(mla) => {
            let latents = f64::from(mla.q_lora_rank)
                + f64::from(mla.kv_lora_rank)
                + f64::from(mla.qk_rope_head_dim);
            elt * (2.0 * a * qk + 2.0 * a * v + latents)
        }
    };
    // Elements per unit of MLP width the activation keeps: gate and up outputs and their
    // product (SwiGLU), the activation's input and output (GeLU, squared ReLU).
    let per_width = match model.mlp {
        Mlp::Swiglu => 3.0,
        Mlp::Gelu | Mlp::SquaredRelu => 2.0,
    };
    let mlp = if kind.moe {
        // Routed experts see `top_k` copies of each token, padded to capacity; each copy keeps
        // its permuted input besides the expert's activations. Shared experts run every token.
        let routed = f64::from(model.top_k.max(1)) * model.capacity();
        let fe = model.expert_width();
        elt * (routed * (per_width * fe + h) + f64::from(model.shared_experts) * per_width * fe)
    } else {
        elt * per_width * f64::from(model.ffn)
    };
    replicated / replicated_div + (attention + mlp) / t
}

/// Bytes of the key/value cache one token adds, summed over every block, at `elt` bytes per
/// element: `2·kv_heads·head_dim` per block for grouped-query attention, `kv_lora_rank +
/// qk_rope_head_dim` under latent attention (the compressed latent and the shared rotary key,
/// DeepSeek-V2 §2.1.2). A sliding-window block keeps only its window: see [`kv_cache_bytes`].
pub fn kv_cache_bytes_per_token(model: &ModelDims, elt: f64) -> f64 {
    f64::from(model.layers) * kv_block_bytes_per_token(model, elt)
}

/// Bytes of the key/value cache of one sequence of `tokens` tokens: global blocks keep every
/// token, sliding-window blocks at most their window.
pub fn kv_cache_bytes(model: &ModelDims, tokens: f64, elt: f64) -> f64 {
    let per_block = kv_block_bytes_per_token(model, elt);
    block_kinds(model)
        .iter()
        .map(|&(n, kind)| {
            let kept = match (kind.sliding, model.sliding_window) {
                (true, Some(w)) => tokens.min(f64::from(w)),
                _ => tokens,
            };
            f64::from(n) * per_block * kept
        })
        .sum()
}

/// [`kv_cache_bytes_per_token`] of one block.
fn kv_block_bytes_per_token(model: &ModelDims, elt: f64) -> f64 {
    match &model.mla {
        Some(mla) => elt * (f64::from(mla.kv_lora_rank) + f64::from(mla.qk_rope_head_dim)),
        None => elt * 2.0 * model.kv_dim(),
    }
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
    let held = held_params(model, &count, layout);
    let (weights, gradients, optimizer) = state_bytes(setup, layout, &held);
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
/// holds (`held`): the only part that depends on the ZeRO stage, so the layout search works it
/// out once per stage and the activations once per recomputation mode.
pub(crate) fn state_bytes(
    setup: &TrainSetup,
    layout: &Layout,
    held: &HeldParams,
) -> (f64, f64, f64) {
    let precision = setup.precision;
    let (mut weights, gradients, optimizer) = held_state_bytes(held, layout, setup);
    if layout.zero >= 3 {
        // Two blocks gathered at a time (the current one and the prefetched next one).
        weights += 2.0 * held.block * precision.bytes();
    }
    (weights, gradients, optimizer)
}

/// [`model_state_bytes`] of what one device holds, sharded where each part is replicated: dense
/// weights over the `data · context` ranks, routed experts over the expert-data-parallel ranks
/// (`tensor · context · data / (expert · expert_tensor)`, Megatron-Core MoE parallel folding).
/// Frozen weights keep only their training-precision copy (sharded under ZeRO-3); gradients and
/// optimizer state exist for what trains.
pub(crate) fn held_state_bytes(
    held: &HeldParams,
    layout: &Layout,
    setup: &TrainSetup,
) -> (f64, f64, f64) {
    let (precision, optimizer) = (setup.precision, setup.optimizer);
    let dense_ranks = dense_data_ranks(layout);
    let expert_ranks = expert_data_ranks(layout);
    let state = |params: f64, ranks: f64| {
        model_state_bytes(params, layout.zero, ranks, precision, optimizer)
    };
    let trained_dense = state(held.trainable_dense, dense_ranks);
    let trained_routed = state(held.trainable_routed, expert_ranks);
    let frozen_dense = held.total - held.routed - held.trainable_dense;
    let frozen_routed = held.routed - held.trainable_routed;
    let frozen =
        state(frozen_dense.max(0.0), dense_ranks).0 + state(frozen_routed.max(0.0), expert_ranks).0;
    (
        trained_dense.0 + trained_routed.0 + frozen,
        trained_dense.1 + trained_routed.1,
        trained_dense.2 + trained_routed.2,
    )
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
