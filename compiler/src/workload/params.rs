//! Parameter counts and FLOPs per token, with the FLOP convention named.
//!
//! Both follow from one list of weight matrices per block kind ([`block_matrices`]): attention
//! (grouped-query with any head width, or DeepSeek's latent attention), the MLP (dense, routed
//! and shared experts, router) and LoRA adapters, so parameters, FLOPs and the operator graph
//! never disagree.

use super::arch::{BlockKind, Part, block_kinds, expert_tensor};
use super::{Layout, ModelDims};
use loam_ir::types::{Mlp, Recompute};
use serde::Serialize;

/// Parameter counts of a model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamCount {
    /// Every stored parameter (all experts, embeddings, norms, LoRA adapters).
    pub total: f64,
    /// Parameters a token touches (`top_k` routed experts of each MoE block and the shared ones;
    /// equals `total` for dense models).
    pub active: f64,
    /// Input embedding (and the output head when untied).
    pub embedding: f64,
    /// Parameters of the heaviest transformer block (an MoE block when there is one; all
    /// experts).
    pub per_layer: f64,
    /// Parameters of the heaviest transformer block that one token touches.
    pub per_layer_active: f64,
    /// Of `per_layer`, the routed experts' weights and adapters (0 for dense).
    pub per_layer_experts: f64,
    /// Parameters that train: all of them, or what freezing and LoRA leave.
    pub trainable: f64,
    /// Of `per_layer`, what trains.
    pub per_layer_trainable: f64,
    /// Of `per_layer_trainable`, routed-expert weights and adapters.
    pub per_layer_trainable_experts: f64,
    /// All blocks together, split as [`BlockShare`].
    pub(crate) blocks: BlockShare,
    /// Of `embedding`, what trains.
    pub embedding_trainable: f64,
}

/// Block parameters split by the group that shards them and by whether they train.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub(crate) struct BlockShare {
    /// Everything but routed experts (split over tensor ranks).
    pub(crate) dense: f64,
    /// Routed experts and their adapters (split over expert ranks).
    pub(crate) routed: f64,
    /// Of `dense`, what trains.
    pub(crate) trainable_dense: f64,
    /// Of `routed`, what trains.
    pub(crate) trainable_routed: f64,
}

impl BlockShare {
    pub(crate) fn add(self, other: BlockShare, times: f64) -> BlockShare {
        BlockShare {
            dense: self.dense + times * other.dense,
            routed: self.routed + times * other.routed,
            trainable_dense: self.trainable_dense + times * other.trainable_dense,
            trainable_routed: self.trainable_routed + times * other.trainable_routed,
        }
    }
}

/// One weight matrix of a block: `input × output`, stored `stored` times (experts) and run by a
/// token `run` times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Matrix {
    pub(crate) input: f64,
    pub(crate) output: f64,
    pub(crate) stored: f64,
    pub(crate) run: f64,
    /// Attention, MLP or router.
    pub(crate) part: Part,
    /// A routed expert's matrix: sharded over expert ranks, padded by the capacity factor.
    pub(crate) routed: bool,
    /// Split over tensor ranks along its input (Megatron's row-parallel output projections)
    /// rather than its output.
    pub(crate) row_parallel: bool,
    /// Matrices of one input fused side by side into this one GEMM, as Megatron runs them (Q, K
    /// and V: 3; SwiGLU's gate and up: 2): each keeps its own LoRA adapter.
    pub(crate) pieces: f64,
}

impl Matrix {
    fn new(input: f64, output: f64, part: Part) -> Matrix {
        Matrix {
            input,
            output,
            stored: 1.0,
            run: 1.0,
            part,
            routed: false,
            row_parallel: false,
            pieces: 1.0,
        }
    }

    fn fused(self, pieces: f64) -> Matrix {
        Matrix { pieces, ..self }
    }

    fn row(self) -> Matrix {
        Matrix {
            row_parallel: true,
            ..self
        }
    }

    fn times(self, stored: f64, run: f64) -> Matrix {
        Matrix {
            stored,
            run,
            ..self
        }
    }

    /// Weights of one copy.
    pub(crate) fn size(&self) -> f64 {
        self.input * self.output
    }

    /// LoRA adapter weights of one copy at `rank`: `rank · (input + output)` for each matrix
    /// fused into it.
    pub(crate) fn adapter(&self, rank: f64) -> f64 {
        rank * (self.pieces * self.input + self.output)
    }
}

/// The attention matrices of a block. Grouped-query attention with head width `d`: `q` `h ×
/// heads·d`, `k` and `v` `h × kv_heads·d` (fused into one QKV GEMM), `o` `heads·d × h`. Latent attention (DeepSeek-V2
/// §2.1, the module layout of the DeepSeek-V3 Hugging Face code): `q_a` `h × q_rank` and `q_b`
/// `q_rank × heads·(nope + rope)` (or one `h × heads·(nope + rope)` without `q_lora_rank`),
/// `kv_a` `h × (kv_rank + rope)`, `kv_b` `kv_rank × heads·(nope + v)`, `o` `heads·v × h`.
fn attention_matrices(model: &ModelDims, out: &mut Vec<Matrix>) {
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    let m = |i, o| Matrix::new(i, o, Part::Attention);
    match &model.mla {
        None => {
            let d = model.head_dim();
            let g = f64::from(model.kv_heads);
            out.extend([m(h, a * d + 2.0 * g * d).fused(3.0), m(a * d, h).row()]);
        }
        Some(mla) => {
            let q_rank = f64::from(mla.q_lora_rank);
            let kv_rank = f64::from(mla.kv_lora_rank);
            let nope = f64::from(mla.qk_nope_head_dim);
            let rope = f64::from(mla.qk_rope_head_dim);
            let v = f64::from(mla.v_head_dim);
            if mla.q_lora_rank > 0 {
                out.extend([m(h, q_rank), m(q_rank, a * (nope + rope))]);
            } else {
                out.push(m(h, a * (nope + rope)));
            }
            out.extend([
                m(h, kv_rank + rope),
                m(kv_rank, a * (nope + v)),
                m(a * v, h).row(),
            ]);
        }
    }
}

/// The matrices of one MLP of width `f`: gate and up fused (SwiGLU) or up, then down.
fn mlp_matrices(model: &ModelDims, f: f64) -> [Matrix; 2] {
    let h = f64::from(model.hidden);
    let m = |i, o| Matrix::new(i, o, Part::Mlp);
    let up = match model.mlp {
        Mlp::Swiglu => m(h, 2.0 * f).fused(2.0),
        Mlp::Gelu | Mlp::SquaredRelu => m(h, f),
    };
    [up, m(f, h).row()]
}

/// Every weight matrix of a block of `kind`.
pub(crate) fn block_matrices(model: &ModelDims, kind: BlockKind) -> Vec<Matrix> {
    let mut out = Vec::with_capacity(12);
    attention_matrices(model, &mut out);
    if kind.moe {
        let fe = model.expert_width();
        let experts = f64::from(model.experts.max(1));
        let top_k = f64::from(model.top_k.max(1));
        let shared = f64::from(model.shared_experts);
        for m in mlp_matrices(model, fe) {
            out.push(Matrix {
                routed: true,
                ..m.times(experts, top_k)
            });
            if shared > 0.0 {
                out.push(m.times(shared, shared));
            }
        }
        out.push(Matrix::new(f64::from(model.hidden), experts, Part::Router));
    } else {
        out.extend(mlp_matrices(model, f64::from(model.ffn)));
    }
    out
}

/// Parameters of one block of one kind, by the part that holds them, so that the operator graph
/// holds exactly what [`param_count`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct BlockParams {
    /// Attention matrices and their biases.
    pub(crate) attention: f64,
    /// The attention pre-norm, and the latent norms of MLA.
    pub(crate) attention_norms: f64,
    /// A dense MLP or the shared experts, with biases.
    pub(crate) mlp_dense: f64,
    /// Every routed expert, with biases.
    pub(crate) mlp_routed: f64,
    /// The `top_k` routed experts a token runs.
    pub(crate) mlp_routed_active: f64,
    /// The MLP pre-norm.
    pub(crate) mlp_norm: f64,
    /// The MoE router (0 for dense blocks).
    pub(crate) router: f64,
    /// LoRA adapters on the attention matrices.
    pub(crate) lora_attention: f64,
    /// LoRA adapters on the dense MLP or shared experts.
    pub(crate) lora_mlp_dense: f64,
    /// LoRA adapters of every routed expert.
    pub(crate) lora_routed: f64,
    /// LoRA adapters of the `top_k` routed experts a token runs.
    pub(crate) lora_routed_active: f64,
}

impl BlockParams {
    /// The attention op's parameters: projections, norms, adapters.
    pub(crate) fn attention_op(&self) -> f64 {
        self.attention + self.attention_norms + self.lora_attention
    }

    /// The MLP op's parameters: MLP or experts, router, norm, adapters.
    pub(crate) fn mlp_op(&self) -> f64 {
        self.mlp_dense
            + self.mlp_routed
            + self.mlp_norm
            + self.router
            + self.lora_mlp_dense
            + self.lora_routed
    }

    /// Every parameter of the block.
    pub(crate) fn total(&self) -> f64 {
        self.attention_op() + self.mlp_op()
    }

    /// What one token touches.
    pub(crate) fn active(&self) -> f64 {
        self.total() - self.mlp_routed - self.lora_routed
            + self.mlp_routed_active
            + self.lora_routed_active
    }

    /// The block's parameters split by sharding group and training under `model.trainable`.
    fn share(&self, model: &ModelDims) -> BlockShare {
        let t = &model.trainable;
        let on = |part: Part, n: f64| if t.trains(part) { n } else { 0.0 };
        let lora_dense = self.lora_attention + self.lora_mlp_dense;
        BlockShare {
            dense: self.total() - self.mlp_routed - self.lora_routed,
            routed: self.mlp_routed + self.lora_routed,
            trainable_dense: on(Part::Attention, self.attention)
                + on(Part::Mlp, self.mlp_dense)
                + on(Part::Router, self.router)
                + on(Part::Norm, self.attention_norms + self.mlp_norm)
                + lora_dense,
            trainable_routed: on(Part::Mlp, self.mlp_routed) + self.lora_routed,
        }
    }
}

/// One norm's parameters: the RMSNorm weight (Llama class), or the LayerNorm weight and bias
/// (GPT class, GeLU blocks).
fn norm(model: &ModelDims, width: f64) -> f64 {
    match model.mlp {
        Mlp::Gelu => 2.0 * width,
        Mlp::Swiglu | Mlp::SquaredRelu => width,
    }
}

/// The parameters of one block of `kind` (see [`BlockParams`]).
pub(crate) fn block_params(model: &ModelDims, kind: BlockKind) -> BlockParams {
    let h = f64::from(model.hidden);
    let mut p = BlockParams {
        attention_norms: norm(model, h),
        mlp_norm: norm(model, h),
        ..BlockParams::default()
    };
    if let Some(mla) = &model.mla {
        // The RMSNorms on the query and key/value latents.
        p.attention_norms += f64::from(mla.q_lora_rank) + f64::from(mla.kv_lora_rank);
    }
    let rank_attention = model.trainable.lora_rank(Part::Attention);
    let rank_mlp = model.trainable.lora_rank(Part::Mlp);
    for m in block_matrices(model, kind) {
        let stored = m.stored * m.size();
        match (m.part, m.routed) {
            (Part::Attention, _) => {
                p.attention += stored;
                p.lora_attention += m.stored * m.adapter(rank_attention);
            }
            (Part::Router, _) => p.router += stored,
            (_, true) => {
                p.mlp_routed += stored;
                p.mlp_routed_active += m.run * m.size();
                p.lora_routed += m.stored * m.adapter(rank_mlp);
                p.lora_routed_active += m.run * m.adapter(rank_mlp);
            }
            (_, false) => {
                p.mlp_dense += stored;
                p.lora_mlp_dense += m.stored * m.adapter(rank_mlp);
            }
        }
    }
    if model.mlp == Mlp::Gelu {
        // GPT-class biases: the q, k, v and output projections, the MLP in and out of every
        // expert. Latent attention has none.
        if model.mla.is_none() {
            let d = model.head_dim();
            p.attention += f64::from(model.heads) * d + 2.0 * f64::from(model.kv_heads) * d + h;
        }
        if kind.moe {
            let fe = model.expert_width();
            p.mlp_routed += f64::from(model.experts.max(1)) * (fe + h);
            p.mlp_routed_active += f64::from(model.top_k.max(1)) * (fe + h);
            p.mlp_dense += f64::from(model.shared_experts) * (fe + h);
        } else {
            p.mlp_dense += f64::from(model.ffn) + h;
        }
    }
    p
}

/// Counts parameters: every block by its kind (dense first blocks, MoE blocks), the final norm,
/// and the embedding (doubled when untied), with what trains under `model.trainable`.
pub fn param_count(model: &ModelDims) -> ParamCount {
    let mut total_blocks = 0.0;
    let mut active_blocks = 0.0;
    let mut blocks = BlockShare::default();
    let mut heaviest: Option<(BlockParams, BlockShare)> = None;
    for (count, kind) in block_kinds(model) {
        if count == 0 {
            continue;
        }
        let n = f64::from(count);
        let p = block_params(model, kind);
        let share = p.share(model);
        total_blocks += n * p.total();
        active_blocks += n * p.active();
        blocks = blocks.add(share, n);
        if heaviest.is_none_or(|(h, _)| p.total() > h.total()) {
            heaviest = Some((p, share));
        }
    }
    let (heavy, heavy_share) = heaviest.unwrap_or_default();
    let t = &model.trainable;
    let embed_one = model.embedding_params();
    let (embedding, embedding_trainable) = if model.tied_embeddings {
        let trains = t.trains(Part::Embedding) && t.trains(Part::LmHead);
        (embed_one, if trains { embed_one } else { 0.0 })
    } else {
        let on = |part| if t.trains(part) { embed_one } else { 0.0 };
        (2.0 * embed_one, on(Part::Embedding) + on(Part::LmHead))
    };
    let final_norm = norm(model, f64::from(model.hidden));
    let final_norm_trainable = if t.trains(Part::Norm) {
        final_norm
    } else {
        0.0
    };
    ParamCount {
        total: total_blocks + embedding + final_norm,
        active: active_blocks + embedding + final_norm,
        embedding,
        per_layer: heavy.total(),
        per_layer_active: heavy.active(),
        per_layer_experts: heavy_share.routed,
        trainable: blocks.trainable_dense
            + blocks.trainable_routed
            + embedding_trainable
            + final_norm_trainable,
        per_layer_trainable: heavy_share.trainable_dense + heavy_share.trainable_routed,
        per_layer_trainable_experts: heavy_share.trainable_routed,
        blocks,
        embedding_trainable,
    }
}

/// Which FLOP count a number follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FlopConvention {
    /// Model FLOPs: 3 × (2 × matmul parameters a token touches, output head included, input
    /// embedding lookup excluded) + the causal attention core (`QKᵀ` and `AV` over the keys each
    /// query sees: half the sequence on average, or its window in a sliding-window block, as
    /// the timing charges it), no recomputation, no capacity padding. A frozen weight costs 4
    /// instead of 6 FLOPs per parameter: its weight gradient is never computed. Used for MFU.
    /// PaLM's convention counts the masked half too; at 128K tokens that doubles the attention
    /// term and overstates MFU.
    ModelCausal,
    /// Hardware FLOPs: model FLOPs plus the forward passes repeated by activation recomputation
    /// and the padded expert slots of a capacity factor.
    HardwareWithRecompute,
}

/// FLOPs one token of training costs (forward + backward).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlopsPerToken {
    /// Model FLOPs ([`FlopConvention::ModelCausal`]).
    pub model: f64,
    /// Hardware FLOPs including recomputation ([`FlopConvention::HardwareWithRecompute`]).
    pub hardware: f64,
    /// Forward FLOPs of the dense matrix multiplications of all blocks (per token).
    pub block_gemm_forward: f64,
    /// Forward FLOPs of the causal attention core (`QKᵀ` and `AV`) of all blocks.
    pub attention_forward: f64,
    /// Forward FLOPs of the output head (`2·hidden·vocab`).
    pub head_forward: f64,
}

/// Forward FLOPs per token of the parts of one block (or of the mean block, see
/// [`forward_flops`]), for [`flops_per_token`] and the ops of the operator graph alike.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct ForwardFlops {
    /// Attention projections (and their adapters): `2 ×` their weights.
    pub(crate) attention_projections: f64,
    /// The attention core (`QKᵀ` over the query/key width and `AV` over the value width, no
    /// causal halving): `2·heads·(d_qk + d_v)·keys`.
    pub(crate) attention_core: f64,
    /// The MLP over the experts a token runs (routed and shared), the router, adapters.
    pub(crate) mlp: f64,
    /// The output head: `2·h·vocab`.
    pub(crate) head: f64,
    /// Of the above, the forward FLOPs of frozen weights: their weight gradient is skipped.
    pub(crate) frozen: f64,
    /// Forward FLOPs of the padded expert slots a capacity factor adds (hardware only).
    pub(crate) padding: f64,
}

impl ForwardFlops {
    /// The attention op of one block: projections and core.
    pub(crate) fn attention(&self) -> f64 {
        self.attention_projections + self.attention_core
    }
}

/// Keys a query attends to on average in a causal kernel, which skips the masked half: `s/2`
/// over the whole sequence, `w − w²/2s` in a window of `w` (every query past the first `w` sees
/// `w` keys). Both the model-FLOP count and the flash-attention timing use it, so MFU counts
/// the work the timing charges.
pub(crate) fn causal_keys(model: &ModelDims, kind: BlockKind) -> f64 {
    let s = f64::from(model.seq_len);
    match (kind.sliding, model.sliding_window) {
        (true, Some(w)) if f64::from(w) < s => {
            let w = f64::from(w);
            w - w * w / (2.0 * s)
        }
        _ => s / 2.0,
    }
}

/// Keys each query of a block of `kind` meets when the scores are materialised: the sequence,
/// or the window of a sliding-window block, masked half included.
pub(crate) fn attended_keys(model: &ModelDims, kind: BlockKind) -> f64 {
    let s = f64::from(model.seq_len);
    match (kind.sliding, model.sliding_window) {
        (true, Some(w)) => s.min(f64::from(w)),
        _ => s,
    }
}

/// The forward FLOPs per token of one block of `kind` (the head left at 0).
pub(crate) fn block_forward_flops(model: &ModelDims, kind: BlockKind) -> ForwardFlops {
    let t = &model.trainable;
    let rank_attention = t.lora_rank(Part::Attention);
    let rank_mlp = t.lora_rank(Part::Mlp);
    let mut f = ForwardFlops::default();
    for m in block_matrices(model, kind) {
        let base = 2.0 * m.run * m.size();
        if !t.trains(m.part) {
            f.frozen += base;
        }
        match m.part {
            Part::Attention => f.attention_projections += base + 2.0 * m.adapter(rank_attention),
            _ => {
                let adapters = if m.part == Part::Mlp {
                    2.0 * m.run * m.adapter(rank_mlp)
                } else {
                    0.0
                };
                f.mlp += base + adapters;
                if m.routed {
                    f.padding += (model.capacity() - 1.0) * (base + adapters);
                }
            }
        }
    }
    let (qk, v) = model.attention_head_dims();
    f.attention_core = 2.0 * f64::from(model.heads) * (qk + v) * causal_keys(model, kind);
    f
}

/// The forward FLOPs per token of `model`'s mean block and head (see [`ForwardFlops`]):
/// `layers ×` the block figures are the whole model's.
pub(crate) fn forward_flops(model: &ModelDims) -> ForwardFlops {
    let layers = f64::from(model.layers.max(1));
    let mut sum = ForwardFlops::default();
    for (count, kind) in block_kinds(model) {
        if count == 0 {
            continue;
        }
        let n = f64::from(count) / layers;
        let b = block_forward_flops(model, kind);
        sum.attention_projections += n * b.attention_projections;
        sum.attention_core += n * b.attention_core;
        sum.mlp += n * b.mlp;
        sum.frozen += n * b.frozen;
        sum.padding += n * b.padding;
    }
    sum.head = 2.0 * f64::from(model.hidden) * f64::from(model.vocab);
    sum
}

/// Forward FLOPs per token of the output head when it is frozen (0 when it trains).
fn frozen_head(model: &ModelDims, head: f64) -> f64 {
    let t = &model.trainable;
    let trains = if model.tied_embeddings {
        t.trains(Part::LmHead) && t.trains(Part::Embedding)
    } else {
        t.trains(Part::LmHead)
    };
    if trains { 0.0 } else { head }
}

/// FLOPs per token of training for `model` under `recompute` (see [`FlopConvention`]): forward
/// `2P`, input gradient `2P`, weight gradient `2P` for the weights that train.
pub fn flops_per_token(model: &ModelDims, recompute: Recompute) -> FlopsPerToken {
    let layers = f64::from(model.layers);
    let forward = forward_flops(model);
    let block_gemm_forward = (forward.attention_projections + forward.mlp) * layers;
    let attention_forward = forward.attention_core * layers;
    let head_forward = forward.head;
    let frozen = forward.frozen * layers + frozen_head(model, head_forward);
    let model_flops = 3.0 * (block_gemm_forward + attention_forward + head_forward) - frozen;
    let padding = 3.0 * forward.padding * layers;
    let extra = match recompute {
        Recompute::None => 0.0,
        Recompute::Selective => attention_forward,
        Recompute::Full => block_gemm_forward + attention_forward + forward.padding * layers,
    };
    FlopsPerToken {
        model: model_flops,
        hardware: model_flops + padding + extra,
        block_gemm_forward,
        attention_forward,
        head_forward,
    }
}

/// Parameters one device holds before ZeRO sharding, split by the group that shards them and by
/// whether they train.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct HeldParams {
    /// Every parameter held.
    pub(crate) total: f64,
    /// Of `total`, routed-expert weights and adapters: sharded over the expert-data-parallel
    /// group, the rest over the data × context ranks.
    pub(crate) routed: f64,
    /// Of `total`, the parameters that train outside routed experts.
    pub(crate) trainable_dense: f64,
    /// Of `routed`, the ones that train.
    pub(crate) trainable_routed: f64,
    /// One (the heaviest) block as this device holds it: what ZeRO-3 gathers at a time.
    pub(crate) block: f64,
}

impl HeldParams {
    /// Parameters that train.
    pub(crate) fn trainable(&self) -> f64 {
        self.trainable_dense + self.trainable_routed
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
    held_params(model, count, layout).total
}

/// [`params_per_device_counted`] split as [`HeldParams`], on the rank of the pipeline that holds
/// the most. Dense weights split over the tensor ranks; routed experts over `expert ·
/// expert_tensor` ranks ([`expert_tensor`]). A rank holding every block holds them exactly; on a
/// pipeline each rank's blocks are taken as the heaviest block kind (an MoE block: the dense
/// first blocks sit on the first rank, where this over-counts them a little).
pub(crate) fn held_params(model: &ModelDims, count: &ParamCount, layout: &Layout) -> HeldParams {
    let t = f64::from(layout.tensor.max(1));
    let experts_split = f64::from(layout.expert.max(1)) * f64::from(expert_tensor(layout));
    let heavy = BlockShare {
        dense: count.per_layer - count.per_layer_experts,
        routed: count.per_layer_experts,
        trainable_dense: count.per_layer_trainable - count.per_layer_trainable_experts,
        trainable_routed: count.per_layer_trainable_experts,
    };
    let block = heavy.dense / t + heavy.routed / experts_split;
    let one = model.embedding_params();
    let one_trains = if count.embedding_trainable > 0.0 {
        one
    } else {
        0.0
    };
    let (ranks, n) = layout.stage_split(model.layers).ranks(layout.pipeline);
    let mut best = HeldParams::default();
    for r in ranks.iter().take(n) {
        let (blocks, embed, embed_trainable) = if r.blocks >= model.layers {
            // Everything outside the blocks: the embeddings and the final norm.
            let b = &count.blocks;
            (
                count.blocks,
                count.total - b.dense - b.routed,
                count.trainable - b.trainable_dense - b.trainable_routed,
            )
        } else {
            // The first rank holds the input embedding, the last the head; one rank both (once
            // when they are tied).
            let copies = match (r.embedding, r.head) {
                (true, true) if model.tied_embeddings => 1.0,
                (true, true) => 2.0,
                (true, false) | (false, true) => 1.0,
                (false, false) => 0.0,
            };
            (
                BlockShare::default().add(heavy, f64::from(r.blocks)),
                copies * one,
                copies * one_trains,
            )
        };
        let routed = blocks.routed / experts_split;
        let held = HeldParams {
            total: blocks.dense / t + routed + embed / t,
            routed,
            trainable_dense: blocks.trainable_dense / t + embed_trainable / t,
            trainable_routed: blocks.trainable_routed / experts_split,
            block,
        };
        if held.total > best.total {
            best = held;
        }
    }
    best
}
