//! Parameter counts and FLOPs per token, with the FLOP convention named.

use super::{Layout, ModelDims};
use crate::types::{Arch, Mlp, Recompute};
use serde::Serialize;

/// Parameter counts of a model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamCount {
    /// Every stored parameter (all experts, embeddings, norms).
    pub total: f64,
    /// Parameters a token touches (`top_k` experts of each MoE layer; equals `total` for dense).
    pub active: f64,
    /// Input embedding (and the output head when untied).
    pub embedding: f64,
    /// Parameters of one transformer block (all experts).
    pub per_layer: f64,
    /// Parameters of one transformer block that one token touches.
    pub per_layer_active: f64,
    /// Of `per_layer`, the expert MLP weights (0 for dense).
    pub per_layer_experts: f64,
}

/// Parameters of one transformer block, in the parts the operator graph hands its attention
/// and MLP ops, so that the ops hold exactly what [`param_count`] counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockParams {
    /// QKV and output projections with GQA: `h·(2h + 2·kv_dim)`.
    pub(crate) attention_weights: f64,
    /// The MLP matrices of one expert: 3 or 2 of `h × ffn`.
    pub(crate) expert_weights: f64,
    /// One norm: the RMSNorm weight (Llama class), or the LayerNorm weight and bias (GPT class).
    pub(crate) norm: f64,
    /// QKV and output projection biases (GPT class; none for SwiGLU blocks).
    pub(crate) attention_biases: f64,
    /// MLP-in and MLP-out biases (GPT class; none for SwiGLU blocks).
    pub(crate) mlp_biases: f64,
    /// The MoE router (0 for dense).
    pub(crate) router: f64,
}

/// The parts of one block of `model` (see [`BlockParams`]).
pub(crate) fn block_params(model: &ModelDims) -> BlockParams {
    let h = f64::from(model.hidden);
    let f = f64::from(model.ffn);
    let kv = model.kv_dim();
    let (norm, attention_biases, mlp_biases) = match model.mlp {
        Mlp::Swiglu => (h, 0.0, 0.0),
        Mlp::Gelu => (
            2.0 * h,
            2.0 * h + 2.0 * kv,
            h + f * model.active_experts().max(1.0),
        ),
    };
    BlockParams {
        attention_weights: h * (2.0 * h + 2.0 * kv),
        expert_weights: model.mlp_matrices() * h * f,
        norm,
        attention_biases,
        mlp_biases,
        router: match model.arch {
            Arch::Dense => 0.0,
            Arch::Moe => h * model.total_experts(),
        },
    }
}

/// Counts parameters: attention with GQA, MLP (times experts for MoE, plus the router), two
/// norms, biases for GeLU (GPT-style) blocks (see [`BlockParams`]), the final norm, and the
/// embedding (doubled when untied).
pub fn param_count(model: &ModelDims) -> ParamCount {
    let block = block_params(model);
    let attn = block.attention_weights;
    let mlp_one = block.expert_weights;
    let norms = 2.0 * block.norm;
    let biases = block.attention_biases + block.mlp_biases;
    let router = block.router;
    let experts_total = mlp_one * model.total_experts();
    let experts_active = mlp_one * model.active_experts();
    let per_layer = attn + experts_total + norms + biases + router;
    let per_layer_active = attn + experts_active + norms + biases + router;
    let embed_one = model.embedding_params();
    let embedding = if model.tied_embeddings {
        embed_one
    } else {
        2.0 * embed_one
    };
    let layers = f64::from(model.layers);
    let final_norm = block.norm;
    ParamCount {
        total: layers * per_layer + embedding + final_norm,
        active: layers * per_layer_active + embedding + final_norm,
        embedding,
        per_layer,
        per_layer_active,
        per_layer_experts: match model.arch {
            Arch::Dense => 0.0,
            Arch::Moe => experts_total,
        },
    }
}

/// Which FLOP count a number follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FlopConvention {
    /// Model FLOPs, PaLM / Megatron-LM / Llama 3 convention: 3 × (2 × matmul parameters a token
    /// touches, output head included, input embedding lookup excluded) + 12·layers·hidden·seq for
    /// attention scores, no causal halving, no recomputation. Used for MFU.
    ModelPalm,
    /// Hardware FLOPs: model FLOPs plus the forward passes repeated by activation recomputation.
    HardwareWithRecompute,
}

/// FLOPs one token of training costs (forward + backward).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlopsPerToken {
    /// Model FLOPs ([`FlopConvention::ModelPalm`]).
    pub model: f64,
    /// Hardware FLOPs including recomputation ([`FlopConvention::HardwareWithRecompute`]).
    pub hardware: f64,
    /// Forward FLOPs of the dense matrix multiplications of all blocks (per token).
    pub block_gemm_forward: f64,
    /// Forward FLOPs of the attention core (`QKᵀ` and `AV`, no causal halving) of all blocks.
    pub attention_forward: f64,
    /// Forward FLOPs of the output head (`2·hidden·vocab`).
    pub head_forward: f64,
}

/// Forward FLOPs per token of the parts of the model, for [`flops_per_token`] and the ops of
/// the operator graph alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ForwardFlops {
    /// QKV and output projections of one block: `2·h·(2h + 2·kv_dim)`.
    pub(crate) attention_projections: f64,
    /// The attention core of one block (`QKᵀ` and `AV`, no causal halving): `4·s·h`.
    pub(crate) attention_core: f64,
    /// The MLP of one block over the experts a token runs.
    pub(crate) mlp: f64,
    /// The output head: `2·h·vocab`.
    pub(crate) head: f64,
}

impl ForwardFlops {
    /// The attention op of one block: projections and core.
    pub(crate) fn attention(&self) -> f64 {
        self.attention_projections + self.attention_core
    }
}

/// The forward FLOPs per token of `model`'s parts (see [`ForwardFlops`]).
pub(crate) fn forward_flops(model: &ModelDims) -> ForwardFlops {
    let h = f64::from(model.hidden);
    let f = f64::from(model.ffn);
    let s = f64::from(model.seq_len);
    ForwardFlops {
        attention_projections: 2.0 * h * (2.0 * h + 2.0 * model.kv_dim()),
        attention_core: 4.0 * s * h,
        mlp: 2.0 * model.mlp_matrices() * h * f * model.active_experts(),
        head: 2.0 * h * f64::from(model.vocab),
    }
}

/// FLOPs per token of training for `model` under `recompute` (see [`FlopConvention`]).
pub fn flops_per_token(model: &ModelDims, recompute: Recompute) -> FlopsPerToken {
    let layers = f64::from(model.layers);
    let forward = forward_flops(model);
    let block_gemm_forward = (forward.attention_projections + forward.mlp) * layers;
    let attention_forward = forward.attention_core * layers;
    let head_forward = forward.head;
    let model_flops = 3.0 * (block_gemm_forward + attention_forward + head_forward);
    let extra = match recompute {
        Recompute::None => 0.0,
        Recompute::Selective => attention_forward,
        Recompute::Full => block_gemm_forward + attention_forward,
    };
    FlopsPerToken {
        model: model_flops,
        hardware: model_flops + extra,
        block_gemm_forward,
        attention_forward,
        head_forward,
    }
}

/// Parameters one device holds before ZeRO sharding, on the rank of the pipeline that holds the
/// most: its blocks split over tensor (and expert) ranks, plus the embedding or output head.
pub fn params_per_device(model: &ModelDims, layout: &Layout) -> f64 {
    params_per_device_counted(model, &param_count(model), layout)
}

/// [`params_per_device`] with the model's [`param_count`] already worked out: the layout search
/// asks for thousands of layouts of one model.
pub(crate) fn params_per_device_counted(
    model: &ModelDims,
    count: &ParamCount,
    layout: &Layout,
) -> f64 {
    let t = f64::from(layout.tensor.max(1));
    let ep = f64::from(layout.expert.max(1));
    let dense_part = count.per_layer - count.per_layer_experts;
    let block = dense_part / t + count.per_layer_experts / (t * ep);
    let (ranks, n) = layout.stage_split(model.layers).ranks(layout.pipeline);
    ranks
        .iter()
        .take(n)
        .map(|r| {
            // The first rank holds the input embedding, the last the head; one rank both (once
            // when they are tied).
            let embed = match (r.embedding, r.head) {
                (true, true) => count.embedding,
                (true, false) | (false, true) => model.embedding_params(),
                (false, false) => 0.0,
            };
            f64::from(r.blocks) * block + embed / t
        })
        .fold(0.0, f64::max)
}
