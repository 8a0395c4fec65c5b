//! The workload model: what a training job asks of the hardware, from the model dims alone.
//!
//! Pure functions of [`ModelDims`], [`Layout`] and [`TrainSetup`]: parameter counts, FLOPs per
//! token under a named convention, memory per device and the bytes each parallel dimension moves.
//! Nothing here knows about a device; the cost model (`crate::cost`) turns these into seconds.
//! Formulas and their sources: `docs/cost-model.md`.

mod arch;
mod comm;
pub mod layout;
mod memory;
pub mod ops;
mod params;
pub mod routing;
pub mod schedule;
mod split;
mod states;

pub use arch::{BlockKind, Lora, Mla, Part, Trainable, block_kinds, expert_tensor};
pub(crate) use arch::{dense_data_ranks, expert_data_ranks};
pub(crate) use comm::{
    CommBuffers, CommShape, FULL_REPLAY_TP_COLLECTIVES, comm_buffers, comm_shape, tp_buffer,
    tp_collectives, tp_per_layer,
};
pub use comm::{CommSizes, comm_sizes};
pub use layout::{Layout, Pins};
pub use memory::{
    DP_BUCKET_BYTES, GemmInputs, MemoryBreakdown, Recomputation, StageHolding,
    activation_bytes_per_layer, kv_cache_bytes, kv_cache_bytes_per_token, memory_per_device,
    model_state_bytes, stage_memory,
};
pub(crate) use memory::{
    LayoutMemory, PlacementMemory, StageMemory, StageStates, Stash, layer_bytes_per_token,
    logits_bytes,
};
pub use ops::{Op, OpGraph, OpKind, op_graph};
pub use params::{
    FlopConvention, FlopsPerToken, ParamCount, flops_per_token, param_count, params_per_device,
};
pub(crate) use params::{
    HeldParams, attended_keys, block_matrices, causal_keys, forward_flops, held_params,
};
pub use routing::{ExpertDispatch, ExpertGroups, ExpertOverlap, expert_overlap_runs};
pub use split::{RECORDED_RANKS, RankLoad, StageSplit, chunk_blocks};
pub use states::{Framework, StateOverrides, StateRecipe};

use loam_ir::types::{Arch, Mlp, Optimizer, Precision};
use serde::Serialize;

/// The shape of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelDims {
    /// Transformer blocks.
    pub layers: u32,
    /// Model (residual stream) width.
    pub hidden: u32,
    /// MLP inner width (per expert for MoE).
    pub ffn: u32,
    /// Attention (query) heads.
    pub heads: u32,
    /// Key/value heads (`heads` for MHA, fewer for GQA, 1 for MQA).
    pub kv_heads: u32,
    /// Vocabulary size.
    pub vocab: u32,
    /// Training sequence length in tokens.
    pub seq_len: u32,
    /// MLP shape.
    pub mlp: Mlp,
    /// Dense or mixture of experts.
    pub arch: Arch,
    /// Experts per MoE layer (1 for dense).
    pub experts: u32,
    /// Experts each token runs (1 for dense).
    pub top_k: u32,
    /// Whether the output head shares the input embedding matrix.
    pub tied_embeddings: bool,
    /// Whether training applies dropout (GPT-3-era models do, Llama-class models do not); dropout
    /// masks cost one byte per element of activation memory.
    pub dropout: bool,
    /// Width of one attention head when it is not `hidden / heads` (Qwen3: 64 heads × 128 over a
    /// hidden size of 4096); `None` = `hidden / heads`. Ignored under [`Mla`].
    pub head_dim: Option<u32>,
    /// DeepSeek multi-head latent attention instead of grouped-query attention.
    pub mla: Option<Mla>,
    /// Attention window in tokens of the sliding-window blocks; `None` = every block attends to
    /// the whole sequence.
    pub sliding_window: Option<u32>,
    /// With a sliding window: every `n`th block (blocks `n−1`, `2n−1`, …) attends to the whole
    /// sequence; `None` = every block slides.
    pub global_every: Option<u32>,
    /// Hidden size of one routed (and shared) expert; `None` = `ffn`.
    pub expert_ffn: Option<u32>,
    /// Experts every token runs besides the routed ones, each of `expert_ffn` (DeepSeek: 1).
    pub shared_experts: u32,
    /// The first blocks of an MoE model that are dense, with an MLP of `ffn` (DeepSeek-V3: 3).
    pub dense_layers: u32,
    /// Expert capacity factor: each expert computes (and exchanges) `capacity_factor ×` its
    /// balanced share of tokens, padding included; `None` = dropless, balanced routing.
    pub capacity_factor: Option<f64>,
    /// Group-limited routing (`expert_groups`, `groups_per_token`); `None` = a token may pick
    /// any of the experts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_groups: Option<ExpertGroups>,
    /// Which weights train (all of them unless frozen or under LoRA).
    pub trainable: Trainable,
}

impl ModelDims {
    /// A dense model with the given dims, untied embeddings and no dropout (Llama-class defaults).
    #[allow(clippy::too_many_arguments)]
    pub fn dense(
        layers: u32,
        hidden: u32,
        ffn: u32,
        heads: u32,
        kv_heads: u32,
        vocab: u32,
        seq_len: u32,
        mlp: Mlp,
    ) -> Self {
        ModelDims {
            layers,
            hidden,
            ffn,
            heads,
            kv_heads,
            vocab,
            seq_len,
            mlp,
            arch: Arch::Dense,
            experts: 1,
            top_k: 1,
            tied_embeddings: false,
            dropout: false,
            head_dim: None,
            mla: None,
            sliding_window: None,
            global_every: None,
            expert_ffn: None,
            shared_experts: 0,
            dense_layers: 0,
            expert_groups: None,
            capacity_factor: None,
            trainable: Trainable::default(),
        }
    }

    /// This model as a mixture of `experts` experts of which each token runs `top_k` (every other
    /// MoE field at its default: no shared experts, no dense blocks, dropless).
    pub fn with_experts(self, experts: u32, top_k: u32) -> Self {
        ModelDims {
            arch: Arch::Moe,
            experts,
            top_k,
            ..self
        }
    }

    /// This model with heads of width `head_dim`.
    pub fn with_head_dim(self, head_dim: u32) -> Self {
        ModelDims {
            head_dim: Some(head_dim),
            ..self
        }
    }

    /// This model with multi-head latent attention.
    pub fn with_mla(self, mla: Mla) -> Self {
        ModelDims {
            mla: Some(mla),
            kv_heads: self.heads,
            ..self
        }
    }

    /// This model with what trains.
    pub fn with_trainable(self, trainable: Trainable) -> Self {
        ModelDims { trainable, ..self }
    }

    /// Parameters of the input embedding (and of an untied output head): `vocab · hidden`.
    pub fn embedding_params(&self) -> f64 {
        f64::from(self.vocab) * f64::from(self.hidden)
    }

    /// Width of one attention head: `head_dim` when given, else `hidden / heads`.
    pub fn head_dim(&self) -> f64 {
        match self.head_dim {
            Some(d) => f64::from(d),
            None => f64::from(self.hidden) / f64::from(self.heads.max(1)),
        }
    }

    /// Total width of the key (or value) projection: `kv_heads · head_dim`.
    pub fn kv_dim(&self) -> f64 {
        f64::from(self.kv_heads) * self.head_dim()
    }

    /// Per-head widths of the attention core: `(query·key, value)`; `(head_dim, head_dim)` for
    /// grouped-query attention, `(nope + rope, v_head_dim)` under MLA.
    pub fn attention_head_dims(&self) -> (f64, f64) {
        match &self.mla {
            Some(mla) => (
                f64::from(mla.qk_nope_head_dim) + f64::from(mla.qk_rope_head_dim),
                f64::from(mla.v_head_dim),
            ),
            None => (self.head_dim(), self.head_dim()),
        }
    }

    /// Hidden size of one routed or shared expert.
    pub fn expert_width(&self) -> f64 {
        f64::from(self.expert_ffn.unwrap_or(self.ffn))
    }

    /// Expert computation per routed token over the balanced share: the capacity factor, or 1
    /// when dropless.
    pub fn capacity(&self) -> f64 {
        self.capacity_factor.unwrap_or(1.0).max(1.0)
    }

    /// Experts each token runs (1 for dense models).
    pub fn active_experts(&self) -> f64 {
        match self.arch {
            Arch::Dense => 1.0,
            Arch::Moe => f64::from(self.top_k.max(1)),
        }
    }

    /// Experts stored per MoE layer (1 for dense models).
    pub fn total_experts(&self) -> f64 {
        match self.arch {
            Arch::Dense => 1.0,
            Arch::Moe => f64::from(self.experts.max(1)),
        }
    }

    /// Number of `hidden × ffn` matrices in one MLP (3 for SwiGLU, 2 for GeLU and squared ReLU).
    pub fn mlp_matrices(&self) -> f64 {
        match self.mlp {
            Mlp::Swiglu => 3.0,
            Mlp::Gelu | Mlp::SquaredRelu => 2.0,
        }
    }
}

/// What the training run does per step and in total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSetup {
    /// Sequences per optimizer step.
    pub global_batch: u32,
    /// Arithmetic precision of the GEMMs.
    pub precision: Precision,
    /// Optimizer (decides optimizer-state bytes).
    pub optimizer: Optimizer,
    /// Total training tokens.
    pub tokens: f64,
    /// Whether attention runs as a fused flash kernel (no `s²` scores in memory). Modern stacks
    /// do; GPT-3-era Megatron materialised the scores to apply dropout to them.
    pub flash_attention: bool,
    /// State formats the spec pins over its framework's recipe ([`StateRecipe`]).
    pub states: StateOverrides,
    /// How the stack sends an MoE layer's tokens to their experts' ranks.
    #[serde(skip_serializing_if = "ExpertDispatch::is_all_to_all")]
    pub expert_dispatch: ExpertDispatch,
    /// Which schedule hides one micro-batch's expert all-to-alls under another's compute
    /// ([`expert_overlap_runs`]).
    #[serde(skip)]
    pub expert_overlap: ExpertOverlap,
}

impl TrainSetup {
    /// Whether `layout`'s expert all-to-alls run beside another micro-batch's compute under this
    /// run's schedule and framework ([`expert_overlap_runs`]): what the step, the plan's
    /// `layout.expert_overlap` and its note read.
    pub fn expert_overlap_on(&self, layout: &layout::Layout) -> bool {
        expert_overlap_runs(
            self.expert_overlap,
            self.states.framework,
            layout.pipeline,
            layout.virtual_stages,
            layout.expert,
            layout.recompute == loam_ir::types::Recompute::Full,
        )
    }

    /// Tokens per optimizer step.
    pub fn tokens_per_step(&self, model: &ModelDims) -> f64 {
        f64::from(self.global_batch) * f64::from(model.seq_len)
    }

    /// Optimizer steps of the whole run: its tokens over the tokens of one step (a step of no
    /// tokens counted as one token, so the count stays finite).
    pub fn steps(&self, model: &ModelDims) -> f64 {
        self.tokens / self.tokens_per_step(model).max(1.0)
    }

    /// Seconds to train the run's tokens at `tokens_per_s`: the one expression of a layout's
    /// training time, which the search's totals and the floor of a step both use.
    pub(crate) fn seconds_at(&self, tokens_per_s: f64) -> f64 {
        self.tokens / tokens_per_s
    }
}

#[cfg(test)]
mod frontier_tests;
#[cfg(test)]
mod recompute_tests;
#[cfg(test)]
mod tests;
