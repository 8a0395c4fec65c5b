//! Memory per device: model states under ZeRO 0–3 (Rajbhandari et al. 2020) and activations under
//! each recomputation mode (Korthikanti et al. 2022, re-derived for GQA, SwiGLU and flash attention).

use super::params::{ParamCount, param_count};
use super::{Layout, ModelDims, TrainSetup};
use crate::types::{Mlp, Optimizer, Precision, Recompute};
use serde::Serialize;

/// Bytes one device needs, by what they hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    /// Parameters in the training precision (the ZeRO-3 shard; gathered blocks are
    /// `comm_buffers`).
    pub weights: f64,
    /// Gradients in the training precision.
    pub gradients: f64,
    /// Optimizer state (fp32 master copy and moments).
    pub optimizer: f64,
    /// Activations of the micro-batch being run: the stash of the rank's blocks, the working set
    /// of the block being recomputed (full recomputation), the inputs of the final norm and the
    /// LM head on the last rank.
    pub activations: f64,
    /// Activations of the other micro-batches the pipeline keeps in flight on this rank
    /// (1F1B's `min(p − rank, m) − 1`, more when interleaved).
    pub pipeline_stash: f64,
    /// Communication buffers: under ZeRO-3 two gathered blocks of weights and one of gradients;
    /// otherwise one data-parallel gradient bucket ([`DP_BUCKET_BYTES`]).
    pub comm_buffers: f64,
    /// The fp32 logits the loss keeps for its backward, on the last rank.
    pub logits: f64,
    /// Sum of the above.
    pub total: f64,
}

impl MemoryBreakdown {
    /// Nothing held.
    pub const NONE: MemoryBreakdown = MemoryBreakdown {
        weights: 0.0,
        gradients: 0.0,
        optimizer: 0.0,
        activations: 0.0,
        pipeline_stash: 0.0,
        comm_buffers: 0.0,
        logits: 0.0,
        total: 0.0,
    };
}

/// Bytes of the gradient bucket data-parallel training reduces at a time: PyTorch DDP's
/// `bucket_cap_mb = 25` default (Li et al. 2020, "PyTorch Distributed", §3.2.3). NCCL's own
/// buffers and the CUDA context are in the memory loam leaves free
/// (`cost::USABLE_MEMORY_FRACTION`).
pub const DP_BUCKET_BYTES: f64 = 25.0 * 1024.0 * 1024.0;

/// What one pipeline rank holds, as the memory function reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageHolding {
    /// Transformer blocks, all the rank's chunks.
    pub blocks: f64,
    /// Whether it holds the input embedding.
    pub embedding: bool,
    /// Whether it holds the final norm, the LM head and the loss.
    pub head: bool,
    /// Micro-batches whose activations it holds at its peak, the running one included
    /// ([`Layout::in_flight`]).
    pub in_flight: f64,
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

/// Memory per device of one pipeline rank: `holding`'s blocks, embedding and head, under
/// `layout`'s tensor, context, data and expert degrees, ZeRO stage, recomputation and
/// micro-batch, in `setup`'s precision. The one memory function: single-type plans (through
/// [`memory_per_device`] and the layout search's [`LayoutMemory`]), both kinds of plans over two
/// groups and the checker's fit all compute a rank's memory here.
pub fn stage_memory(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
    holding: &StageHolding,
) -> MemoryBreakdown {
    let count = param_count(model);
    let per_token = layer_bytes_per_token(model, setup.precision, layout);
    let states = StageStates::new(model, &count, setup, layout);
    StageMemory::new(states, model, setup, layout, per_token).rank(
        holding,
        layout.zero,
        layout.recompute,
    )
}

/// Memory per device on the rank of `layout`'s pipeline that needs the most ([`stage_memory`]
/// of the first, the last and the heaviest middle ranks of its split).
pub fn memory_per_device(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
) -> MemoryBreakdown {
    let count = param_count(model);
    let per_token = layer_bytes_per_token(model, setup.precision, layout);
    let states = StageStates::new(model, &count, setup, layout);
    LayoutMemory::new(states, model, setup, layout, per_token)
        .breakdown(layout.zero, layout.recompute)
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

/// The part of [`stage_memory`] that neither the micro-batch, the ZeRO stage nor recomputation
/// changes: parameters per device and model-state bytes per parameter under each ZeRO stage.
/// The layout search works it out once per placement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageStates {
    /// Dense parameters of one block on one device (split over tensor ranks).
    block_dense: f64,
    /// Expert parameters of one block on one device (split over tensor and expert ranks).
    block_experts: f64,
    /// The input embedding on one device (vocabulary-parallel over tensor ranks).
    embedding: f64,
    /// Whether the head shares the embedding matrix (one copy when a rank holds both).
    tied: bool,
    /// `(weights, gradients, optimizer)` bytes per dense parameter, by ZeRO stage 0..=3.
    dense: [[f64; 3]; 4],
    /// The same per expert parameter.
    experts: [[f64; 3]; 4],
    /// ZeRO-3's gathered blocks: two of weights (the running one and the prefetched next, as
    /// FSDP and DeepSpeed prefetch one ahead) and one of unsharded gradients before its
    /// reduce-scatter (Zhao et al. 2023, "PyTorch FSDP", §3.2).
    gathered: f64,
    /// [`DP_BUCKET_BYTES`] with more than one data-parallel rank, else nothing.
    bucket: f64,
}

impl StageStates {
    /// The states of `layout`'s tensor, context, data and expert degrees; `count` is the
    /// model's [`param_count`].
    pub(crate) fn new(
        model: &ModelDims,
        count: &ParamCount,
        setup: &TrainSetup,
        layout: &Layout,
    ) -> StageStates {
        let t = f64::from(layout.tensor.max(1));
        let ep = f64::from(layout.expert.max(1));
        let shards = f64::from(layout.data.max(1)) * f64::from(layout.context.max(1));
        let per_param = |zero: u8| {
            let (w, g, o) = model_state_bytes(1.0, zero, shards, setup.precision, setup.optimizer);
            [w, g, o]
        };
        let dense = [per_param(0), per_param(1), per_param(2), per_param(3)];
        let block_dense = (count.per_layer - count.per_layer_experts) / t;
        let block_experts = count.per_layer_experts / (t * ep);
        StageStates {
            block_dense,
            block_experts,
            embedding: model.embedding_params() / t,
            tied: model.tied_embeddings,
            dense,
            experts: dense,
            gathered: 3.0 * (block_dense + block_experts) * setup.precision.bytes(),
            bucket: if shards > 1.0 { DP_BUCKET_BYTES } else { 0.0 },
        }
    }

    /// Dense parameters one device of a rank holding `holding` keeps (the experts apart).
    fn dense_params(&self, holding: &StageHolding) -> f64 {
        let embedding = if holding.embedding {
            self.embedding
        } else {
            0.0
        };
        // A tied head is the embedding matrix itself when one rank holds both; on a pipeline the
        // last rank keeps its own copy.
        let head = if holding.head && !(self.tied && holding.embedding) {
            self.embedding
        } else {
            0.0
        };
        holding.blocks * self.block_dense + embedding + head
    }
}

/// [`stage_memory`] of one layout shape for any rank, ZeRO stage and recomputation: the
/// activations per block under each recomputation mode worked out once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageMemory {
    states: StageStates,
    /// Activation bytes of one block for one micro-batch, by recomputation mode (none,
    /// selective, full).
    per_block: [f64; 3],
    /// One block's full stash: the working set of the block being recomputed under full
    /// recomputation.
    working_set: f64,
    /// Inputs of the final norm and the LM head.
    head_inputs: f64,
    /// fp32 logits of one micro-batch.
    logits: f64,
}

/// The position of `recompute` in (none, selective, full).
fn mode_index(recompute: Recompute) -> usize {
    match recompute {
        Recompute::None => 0,
        Recompute::Selective => 1,
        Recompute::Full => 2,
    }
}

impl StageMemory {
    /// The memory of `layout`'s shape (its tensor, context and expert degrees, micro-batch and
    /// sequence parallelism; `states` of its placement); `per_token` is its
    /// [`layer_bytes_per_token`].
    #[inline]
    pub(crate) fn new(
        states: StageStates,
        model: &ModelDims,
        setup: &TrainSetup,
        layout: &Layout,
        per_token: f64,
    ) -> StageMemory {
        let (kept, input_only) = layer_stash(model, layout, setup.precision, per_token);
        let scores = if setup.flash_attention {
            0.0
        } else {
            // Korthikanti's `5·a·s²·b` (scores, softmax output, dropout mask and output), split
            // over tensor ranks and context chunks; selective recomputation drops exactly these.
            let s = f64::from(model.seq_len);
            5.0 * f64::from(model.heads) * s * s * f64::from(layout.micro_batch)
                / f64::from(layout.tensor.max(1))
                / f64::from(layout.context.max(1))
        };
        let tokens = layout.micro_batch_tokens(model.seq_len);
        StageMemory {
            states,
            per_block: [kept + scores, kept, input_only],
            working_set: kept,
            head_inputs: 2.0 * tokens * f64::from(model.hidden) * setup.precision.bytes(),
            logits: logits_bytes(model, tokens, layout.tensor),
        }
    }

    /// The memory of one rank holding `holding` under ZeRO `zero` and `recompute`.
    #[inline]
    pub(crate) fn rank(
        &self,
        holding: &StageHolding,
        zero: u8,
        recompute: Recompute,
    ) -> MemoryBreakdown {
        let states = &self.states;
        let z = usize::from(zero.min(3));
        let [dw, dg, do_] = states.dense.get(z).copied().unwrap_or([0.0; 3]);
        let [ew, eg, eo] = states.experts.get(z).copied().unwrap_or([0.0; 3]);
        let dense = states.dense_params(holding);
        let experts = holding.blocks * states.block_experts;
        let per_block = self
            .per_block
            .get(mode_index(recompute))
            .copied()
            .unwrap_or(0.0);
        let one = holding.blocks * per_block;
        let mut activations = one;
        if recompute == Recompute::Full && holding.blocks > 0.0 {
            activations += self.working_set;
        }
        let mut logits = 0.0;
        if holding.head {
            activations += self.head_inputs;
            logits = self.logits;
        }
        let comm_buffers = if zero >= 3 {
            states.gathered
        } else {
            states.bucket
        };
        breakdown(
            dense * dw + experts * ew,
            dense * dg + experts * eg,
            dense * do_ + experts * eo,
            activations,
            one * (holding.in_flight - 1.0).max(0.0),
            comm_buffers,
            logits,
        )
    }
}

/// [`stage_memory`] of every rank of one layout that can need the most: the first, the last and
/// the heaviest middle ones of its split ([`crate::workload::StageSplit::ranks`]), with their
/// micro-batches in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LayoutMemory {
    unit: StageMemory,
    ranks: [StageHolding; 4],
    count: usize,
}

impl LayoutMemory {
    /// The ranks of `layout` (every field but ZeRO and recomputation read).
    #[inline]
    pub(crate) fn new(
        states: StageStates,
        model: &ModelDims,
        setup: &TrainSetup,
        layout: &Layout,
        per_token: f64,
    ) -> LayoutMemory {
        let unit = StageMemory::new(states, model, setup, layout, per_token);
        let m = layout.micro_batches(setup.global_batch);
        let (loads, count) = layout.stage_split(model.layers).ranks(layout.pipeline);
        let ranks = loads.map(|r| StageHolding {
            blocks: f64::from(r.blocks),
            embedding: r.embedding,
            head: r.head,
            in_flight: layout.in_flight(r.rank, m),
        });
        LayoutMemory { unit, ranks, count }
    }

    /// The breakdown of the rank needing the most memory under `zero` and `recompute` (the
    /// earliest of equals).
    #[inline]
    pub(crate) fn breakdown(&self, zero: u8, recompute: Recompute) -> MemoryBreakdown {
        let mut worst: Option<MemoryBreakdown> = None;
        for holding in self.ranks.iter().take(self.count) {
            let memory = self.unit.rank(holding, zero, recompute);
            if worst.is_none_or(|w| memory.total > w.total) {
                worst = Some(memory);
            }
        }
        worst.unwrap_or(MemoryBreakdown::NONE)
    }
}

/// The breakdown of its parts, summed in one fixed order.
fn breakdown(
    weights: f64,
    gradients: f64,
    optimizer: f64,
    activations: f64,
    pipeline_stash: f64,
    comm_buffers: f64,
    logits: f64,
) -> MemoryBreakdown {
    MemoryBreakdown {
        weights,
        gradients,
        optimizer,
        activations,
        pipeline_stash,
        comm_buffers,
        logits,
        total: weights
            + gradients
            + optimizer
            + activations
            + pipeline_stash
            + comm_buffers
            + logits,
    }
}
