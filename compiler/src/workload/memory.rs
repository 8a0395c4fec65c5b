//! Memory per device: model states under ZeRO 0–3 (Rajbhandari et al. 2020) and activations under
//! each recomputation mode (Korthikanti et al. 2022, re-derived for GQA, latent attention, SwiGLU,
//! experts and flash attention); the key/value cache a token adds.

use super::arch::{block_kinds, dense_data_ranks, expert_data_ranks, expert_tensor};
use super::params::{BlockShare, ParamCount, param_count};
use super::{Layout, ModelDims, StateRecipe, TrainSetup};
use loam_ir::types::{Optimizer, Recompute};
use serde::Serialize;

mod layout;
mod stash;
pub(crate) use layout::{LayoutMemory, PlacementMemory};
pub use stash::{GemmInputs, activation_bytes_per_layer};
pub(crate) use stash::{Stash, layer_bytes_per_token};
use stash::{layer_stash, selective_dropped_bytes_per_token};

/// Recomputation as a rank's memory and time see it: the mode and, under partial full
/// recomputation, the blocks of each model chunk it replays. The one place that says which of a
/// rank's blocks are recomputed ([`Recomputation::recomputed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recomputation {
    /// The mode.
    pub mode: Recompute,
    /// Under [`Recompute::Full`], the first blocks of each chunk that are recomputed; `None`:
    /// every block.
    pub per_chunk: Option<u32>,
    /// Model chunks per rank (the layout's virtual stages).
    pub chunks: u32,
}

impl From<Recompute> for Recomputation {
    /// `mode` on every block.
    fn from(mode: Recompute) -> Recomputation {
        Recomputation {
            mode,
            per_chunk: None,
            chunks: 1,
        }
    }
}

impl Recomputation {
    /// `layout`'s recomputation.
    pub fn of(layout: &Layout) -> Recomputation {
        Recomputation {
            mode: layout.recompute,
            per_chunk: layout.recompute_layers,
            chunks: layout.virtual_stages.max(1),
        }
    }

    /// Of `blocks` blocks a rank holds in its chunks, those full recomputation replays in the
    /// backward: all of them under plain full recomputation, the first `per_chunk` of each chunk
    /// under partial recomputation (Megatron-LM's block method: `_checkpointed_forward` in
    /// `megatron/core/transformer/transformer_block.py` checkpoints the layers
    /// `l < recompute_num_layers` of each model chunk and runs the rest plainly), none under
    /// selective or no recomputation. The chunks of one rank are taken as equal
    /// (`blocks / chunks` each): exact for the balanced split, whose chunks differ by one block
    /// at most.
    pub fn recomputed(&self, blocks: f64) -> f64 {
        match (self.mode, self.per_chunk) {
            (Recompute::Full, None) => blocks,
            (Recompute::Full, Some(k)) => {
                (f64::from(k) * f64::from(self.chunks.max(1))).min(blocks)
            }
            _ => 0.0,
        }
    }

    /// Whether only some blocks are recomputed whole.
    pub fn is_partial(&self) -> bool {
        self.mode == Recompute::Full && self.per_chunk.is_some()
    }
}

/// Bytes one device needs, by what they hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    /// Parameters as the state recipe keeps them ([`StateRecipe`]; the ZeRO-3 shard, gathered
    /// blocks are `comm_buffers`).
    pub weights: f64,
    /// Gradients as the state recipe accumulates them (fp32 under Megatron-Core and FSDP).
    pub gradients: f64,
    /// Optimizer state (master copy and moments, in the recipe's formats).
    pub optimizer: f64,
    /// Activations of the micro-batch being run: the stash of the rank's blocks, the working set
    /// of the block being recomputed (full recomputation), the inputs of the final norm and the
    /// LM head on the last rank.
    pub activations: f64,
    /// Activations of the other micro-batches the pipeline keeps in flight on this rank
    /// (1F1B's `min(p − rank, m) − 1`, more when interleaved).
    pub pipeline_stash: f64,
    /// Communication buffers: under ZeRO-3 the gathered parameters and gradients of the
    /// framework's prefetch ([`StateRecipe::gathered_bytes`]); otherwise one data-parallel
    /// gradient bucket ([`DP_BUCKET_BYTES`]).
    pub comm_buffers: f64,
    /// The fp32 logits the loss keeps for its backward, on the last rank.
    pub logits: f64,
    /// Sum of the above.
    pub total: f64,
    /// The pipeline rank whose memory this is, from 0, where the layout's ranks were compared
    /// (the rank needing the most).
    pub rank: Option<u32>,
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
        rank: None,
    };
}

/// Physical: bytes of the gradient bucket data-parallel training reduces at a time: PyTorch DDP's
/// `bucket_cap_mb = 25` default (Li et al. 2020, "PyTorch Distributed", §3.2.3). NCCL's own
/// buffers and the CUDA context are in the memory loam leaves free (`cost::reserved_memory`).
pub const DP_BUCKET_BYTES: f64 = 25.0 * 1024.0 * 1024.0;

/// What one pipeline rank holds, as the memory function reads it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageHolding {
    /// Transformer blocks, all the rank's chunks.
    pub blocks: f64,
    /// Whether it holds the input embedding.
    pub embedding: bool,
    /// Whether it holds the final norm, the LM head and the loss.
    pub head: bool,
    /// Micro-batches of all its blocks whose activations it holds at its peak, the running one
    /// included ([`crate::workload::RankLoad::in_flight`], [`Layout::in_flight`]).
    pub in_flight: f64,
}

/// Model-state bytes (weights, gradients, optimizer state) of `params` parameters under ZeRO
/// `zero` over `shards` data-parallel ranks, each state in `recipe`'s format
/// ([`StateRecipe::for_setup`]): with `w`, `g` and `K` its weight, gradient and optimizer bytes
/// per parameter, `(w + g + K)·Ψ` for stage 0, `wΨ + gΨ + KΨ/N` for stage 1, `wΨ + (g + K)Ψ/N`
/// for stage 2 and `(w + g + K)Ψ/N` for stage 3 (ZeRO paper §5, where DeepSpeed's recipe has
/// `w = g = 2`, `K = 12`). Returns `(weights, gradients, optimizer)`.
pub fn model_state_bytes(
    params: f64,
    zero: u8,
    shards: f64,
    recipe: &StateRecipe,
    optimizer: Optimizer,
) -> (f64, f64, f64) {
    let n = shards.max(1.0);
    let w = recipe.weights * params;
    let g = recipe.gradients * params;
    let o = recipe.optimizer_bytes(optimizer) * params;
    match zero {
        0 => (w, g, o),
        1 => (w, g, o / n),
        2 => (w, g / n, o / n),
        _ => (w / n, g / n, o / n),
    }
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
        Recomputation::of(layout),
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
        .breakdown(layout.zero, Recomputation::of(layout))
}

/// The part of [`stage_memory`] that neither the micro-batch, the ZeRO stage nor recomputation
/// changes: parameters per device and model-state bytes per parameter under each ZeRO stage.
/// The layout search works it out once per placement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageStates {
    /// One block of the heaviest kind on one device: dense weights split over tensor ranks,
    /// routed experts over `expert · expert_tensor` ranks, each with what trains.
    block: BlockShare,
    /// Every block of the model on one device, for a rank that holds them all (exact where the
    /// kinds differ: DeepSeek-V3's dense first blocks).
    all_blocks: BlockShare,
    /// Blocks of the model.
    layers: f64,
    /// The input embedding on one device (vocabulary-parallel over tensor ranks).
    embedding: f64,
    /// Of `embedding`, what trains.
    embedding_trainable: f64,
    /// The final norm (and what of it trains), on the rank holding the head.
    final_norm: (f64, f64),
    /// Whether the head shares the embedding matrix (one copy when a rank holds both).
    tied: bool,
    /// `(weights, gradients, optimizer)` bytes per trained dense parameter (sharded over the
    /// `data · context` ranks), by ZeRO stage 0..=3.
    dense: [[f64; 3]; 4],
    /// The same per trained routed-expert parameter (sharded over the expert-data-parallel ranks).
    experts: [[f64; 3]; 4],
    /// Weight bytes per frozen dense and per frozen routed parameter, by ZeRO stage: a frozen
    /// weight keeps only its training-precision copy, sharded under ZeRO-3.
    frozen: [[f64; 2]; 4],
    /// ZeRO-3's gathered parameters and unsharded gradients, as the ZeRO-3 framework's prefetch
    /// holds them ([`StateRecipe::gathered_bytes`] of one block).
    gathered: f64,
    /// [`DP_BUCKET_BYTES`] with more than one data-parallel rank, else nothing.
    bucket: f64,
    /// How the GEMM inputs are kept under each ZeRO stage ([`GemmInputs::of`]: the framework
    /// follows the stage when the spec names none).
    inputs_by_zero: [GemmInputs; 4],
}

/// Parameters one device of a rank holds, split as [`BlockShare`] (embedding included).
type Held = BlockShare;

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
        let experts_split = f64::from(layout.expert.max(1)) * f64::from(expert_tensor(layout));
        let (dense_ranks, expert_ranks) = (dense_data_ranks(layout), expert_data_ranks(layout));
        let per_param = |zero: u8, ranks: f64| {
            let recipe = StateRecipe::for_setup(setup, zero);
            let (w, g, o) = model_state_bytes(1.0, zero, ranks, &recipe, setup.optimizer);
            [w, g, o]
        };
        // Arrays written out rather than mapped: `array::map` is a tenth of this function's
        // instructions in the fuzz build, and this runs once per placement the walk sizes.
        let by_zero = |ranks: f64| {
            [
                per_param(0, ranks),
                per_param(1, ranks),
                per_param(2, ranks),
                per_param(3, ranks),
            ]
        };
        let dense = by_zero(dense_ranks);
        let experts = by_zero(expert_ranks);
        // A frozen weight has no master copy, gradient or moments in any recipe: its
        // training-precision copy alone, sharded under ZeRO-3.
        let elt = setup.precision.bytes();
        let frozen = [
            [elt, elt],
            [elt, elt],
            [elt, elt],
            [elt / dense_ranks.max(1.0), elt / expert_ranks.max(1.0)],
        ];
        let on_device = |share: BlockShare| BlockShare {
            dense: share.dense / t,
            routed: share.routed / experts_split,
            trainable_dense: share.trainable_dense / t,
            trainable_routed: share.trainable_routed / experts_split,
        };
        let block = on_device(BlockShare {
            dense: count.per_layer - count.per_layer_experts,
            routed: count.per_layer_experts,
            trainable_dense: count.per_layer_trainable - count.per_layer_trainable_experts,
            trainable_routed: count.per_layer_trainable_experts,
        });
        let embedding = model.embedding_params() / t;
        let shards = f64::from(layout.data.max(1)) * f64::from(layout.context.max(1));
        StageStates {
            block,
            all_blocks: on_device(count.blocks),
            layers: f64::from(model.layers),
            embedding,
            embedding_trainable: if count.embedding_trainable > 0.0 {
                embedding
            } else {
                0.0
            },
            final_norm: {
                let b = &count.blocks;
                (
                    (count.total - b.dense - b.routed - count.embedding).max(0.0),
                    (count.trainable
                        - b.trainable_dense
                        - b.trainable_routed
                        - count.embedding_trainable)
                        .max(0.0),
                )
            },
            tied: model.tied_embeddings,
            dense,
            experts,
            frozen,
            gathered: StateRecipe::for_setup(setup, 3)
                .gathered_bytes(block.dense + block.routed, setup.precision),
            bucket: if shards > 1.0 { DP_BUCKET_BYTES } else { 0.0 },
            inputs_by_zero: [
                GemmInputs::of(setup, 0),
                GemmInputs::of(setup, 1),
                GemmInputs::of(setup, 2),
                GemmInputs::of(setup, 3),
            ],
        }
    }

    /// Parameters one device of a rank holding `holding` keeps.
    #[inline]
    fn held(&self, holding: &StageHolding) -> Held {
        let blocks = if holding.blocks >= self.layers {
            self.all_blocks
        } else {
            BlockShare::default().add(self.block, holding.blocks)
        };
        // A tied head is the embedding matrix itself when one rank holds both; on a pipeline the
        // last rank keeps its own copy.
        let copies = f64::from(u8::from(holding.embedding))
            + f64::from(u8::from(holding.head && !(self.tied && holding.embedding)));
        let (norm, norm_trains) = if holding.head {
            self.final_norm
        } else {
            (0.0, 0.0)
        };
        Held {
            dense: blocks.dense + copies * self.embedding + norm,
            trainable_dense: blocks.trainable_dense
                + copies * self.embedding_trainable
                + norm_trains,
            ..blocks
        }
    }

    /// `(weights, gradients, optimizer)` bytes of what a rank holding `holding` keeps under
    /// ZeRO `zero`: trained parameters with their gradients and optimizer state, frozen ones
    /// with their weights alone.
    #[inline]
    fn bytes(&self, holding: &StageHolding, zero: u8) -> StateBytes {
        self.bytes_of(&self.held(holding), zero)
    }

    /// [`StageStates::bytes`] under every ZeRO stage, by stage: what a rank holds is worked
    /// out once for the four.
    #[inline]
    pub(crate) fn bytes_by_zero(&self, holding: &StageHolding) -> [StateBytes; 4] {
        let held = self.held(holding);
        // Written out rather than a closure mapped over `[0, 1, 2, 3]`: whether the compiler
        // inlined the mapped closure varied from build to build (a fifth more instructions in
        // `PlacementMemory::new` when it did not).
        [
            self.bytes_of(&held, 0),
            self.bytes_of(&held, 1),
            self.bytes_of(&held, 2),
            self.bytes_of(&held, 3),
        ]
    }

    /// [`StageStates::bytes`] of the parameters `held`.
    #[inline]
    fn bytes_of(&self, held: &Held, zero: u8) -> StateBytes {
        let z = usize::from(zero.min(3));
        let [dw, dg, do_] = self.dense.get(z).copied().unwrap_or([0.0; 3]);
        let [ew, eg, eo] = self.experts.get(z).copied().unwrap_or([0.0; 3]);
        let [fd, fe] = self.frozen.get(z).copied().unwrap_or([0.0; 2]);
        let (td, tr) = (held.trainable_dense, held.trainable_routed);
        let frozen = (held.dense - td).max(0.0) * fd + (held.routed - tr).max(0.0) * fe;
        [
            td * dw + tr * ew + frozen,
            td * dg + tr * eg,
            td * do_ + tr * eo,
        ]
    }
}

/// `[weights, gradients, optimizer]` bytes a rank keeps under one ZeRO stage.
pub(crate) type StateBytes = [f64; 3];

/// [`stage_memory`] of one layout shape for any rank, ZeRO stage and recomputation: the
/// activations per block under each recomputation mode worked out once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageMemory {
    states: StageStates,
    /// Activation bytes of one block for one micro-batch, by how the GEMM inputs are kept
    /// ([`GemmInputs::index`]) and recomputation mode (none, selective, full).
    per_block: [[f64; 3]; 2],
    /// One block's full stash, by how the GEMM inputs are kept: the working set of the block
    /// being recomputed under full recomputation.
    working_set: [f64; 2],
    /// Inputs of the final norm and the LM head.
    head_inputs: f64,
    /// fp32 logits of one micro-batch.
    logits: f64,
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
        per_token: Stash,
    ) -> StageMemory {
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
        let t = f64::from(layout.tensor.max(1));
        let replicated_div = if layout.sequence_parallel { t } else { 1.0 };
        let dropped = selective_dropped_bytes_per_token(model, setup.precision, t, replicated_div);
        let mut per_block = [[0.0; 3]; 2];
        let mut working_set = [0.0; 2];
        for inputs in GemmInputs::ALL {
            // A way no ZeRO stage of the job keeps is never read.
            if !states.inputs_by_zero.contains(&inputs) {
                continue;
            }
            let i = inputs.index();
            let per_token = per_token.get(i).copied().unwrap_or(0.0);
            let (kept, input_only) = layer_stash(model, layout, setup.precision, per_token);
            let dropped = tokens * dropped.get(i).copied().unwrap_or(0.0);
            if let (Some(block), Some(set)) = (per_block.get_mut(i), working_set.get_mut(i)) {
                *block = [kept + scores, (kept - dropped).max(input_only), input_only];
                *set = kept;
            }
        }
        StageMemory {
            states,
            per_block,
            working_set,
            head_inputs: 2.0 * tokens * f64::from(model.hidden) * setup.precision.bytes(),
            logits: logits_bytes(model, tokens, layout.tensor),
        }
    }

    /// How the GEMM inputs are kept under ZeRO `zero`.
    #[inline]
    pub(crate) fn inputs(&self, zero: u8) -> GemmInputs {
        self.states
            .inputs_by_zero
            .get(usize::from(zero.min(3)))
            .copied()
            .unwrap_or(GemmInputs::AsActivations)
    }

    /// Activation bytes of one block for one micro-batch with the GEMM inputs kept as `inputs`,
    /// by recomputation mode (none, selective, full).
    #[inline]
    fn per_block(&self, inputs: GemmInputs) -> [f64; 3] {
        self.per_block
            .get(inputs.index())
            .copied()
            .unwrap_or([0.0; 3])
    }

    /// One block's full stash with the GEMM inputs kept as `inputs`.
    #[inline]
    fn working_set(&self, inputs: GemmInputs) -> f64 {
        self.working_set.get(inputs.index()).copied().unwrap_or(0.0)
    }

    /// The memory of one rank holding `holding` under ZeRO `zero` and `recompute`.
    #[inline]
    pub(crate) fn rank(
        &self,
        holding: &StageHolding,
        zero: u8,
        recompute: impl Into<Recomputation>,
    ) -> MemoryBreakdown {
        let bytes = self.states.bytes(holding, zero);
        self.rank_with(bytes, holding, zero, recompute)
    }

    /// The model states of this shape's placement of a rank holding `holding` under ZeRO
    /// `zero` ([`StageStates::bytes`]).
    pub(crate) fn state_bytes(&self, holding: &StageHolding, zero: u8) -> StateBytes {
        self.states.bytes(holding, zero)
    }

    /// [`StageMemory::rank`] with the rank's model-state bytes under `zero` already worked out
    /// (by [`StageMemory::state_bytes`]): they depend on neither the micro-batch nor
    /// recomputation, so the search and the pipeline partition work them out once per placement.
    #[inline]
    pub(crate) fn rank_with(
        &self,
        [weights, gradients, optimizer]: StateBytes,
        holding: &StageHolding,
        zero: u8,
        recompute: impl Into<Recomputation>,
    ) -> MemoryBreakdown {
        let [activations, pipeline_stash, logits] =
            self.activations(holding, self.inputs(zero), recompute);
        breakdown(
            weights,
            gradients,
            optimizer,
            activations,
            pipeline_stash,
            self.comm_buffers(zero),
            logits,
        )
    }

    /// `[activations, pipeline_stash, logits]` of a rank holding `holding` under `recompute`,
    /// its GEMM inputs kept as `inputs`: the parts of its memory that, given those, no ZeRO stage
    /// changes. A block replayed whole keeps its input; the others keep what their mode keeps;
    /// one replayed block's full stash is live while its backward runs.
    #[inline]
    fn activations(
        &self,
        holding: &StageHolding,
        inputs: GemmInputs,
        recompute: impl Into<Recomputation>,
    ) -> [f64; 3] {
        let recompute = recompute.into();
        let per_block_by_mode = self.per_block(inputs);
        let replayed = recompute
            .recomputed(holding.blocks)
            .clamp(0.0, holding.blocks.max(0.0));
        let kept_mode = if recompute.mode == Recompute::Full {
            Recompute::None
        } else {
            recompute.mode
        };
        let per_block =
            |mode: Recompute| per_block_by_mode.get(mode.index()).copied().unwrap_or(0.0);
        let one = replayed * per_block(Recompute::Full)
            + (holding.blocks - replayed).max(0.0) * per_block(kept_mode);
        let mut activations = one;
        if replayed > 0.0 {
            activations += self.working_set(inputs);
        }
        let mut logits = 0.0;
        if holding.head {
            activations += self.head_inputs;
            logits = self.logits;
        }
        [
            activations,
            one * (holding.in_flight - 1.0).max(0.0),
            logits,
        ]
    }

    /// Communication buffers under ZeRO `zero`.
    #[inline]
    fn comm_buffers(&self, zero: u8) -> f64 {
        if zero >= 3 {
            self.states.gathered
        } else {
            self.states.bucket
        }
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
        rank: None,
    }
}
