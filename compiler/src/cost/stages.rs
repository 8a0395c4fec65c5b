//! The cost model in stages. [`estimate`](super::estimate) runs them one after the other; the
//! layout search runs each only as often as the layout fields it reads change, which is what
//! makes a search over thousands of layouts cheap.
//!
//! | stage | reads |
//! | --- | --- |
//! | [`Costing::new`] | model, run, cluster |
//! | [`Costing::kernel`] | tensor, context, expert degree; micro-batch; sequence parallelism |
//! | [`Costing::placement`] | tensor, context, expert, pipeline, data degree; virtual stages; split |
//! | [`Costing::shape`] | a kernel and a placement of one layout |
//! | [`Costing::replay`] | recomputation |
//! | [`Costing::step`] | ZeRO stage (and the memory, worked out by the caller) |
//!
//! Every number is the same expression on the same operands, evaluated in the same order, as in
//! one straight pass: results are bit-identical whichever way they are reached.

use super::compute::{BlockTime, HeadTime, Rates, block_time, embedding_time, sixteen_bit};
use super::network::{
    Collective, Group, collective_time, expert_exchange_time, p2p_time, tensor_collective_time,
};
use super::pipeline_step::optimizer_seconds;
use super::{CostError, StepBreakdown, StepEstimate};
use crate::hardware::ClusterFigures;
use crate::workload::{
    CommBuffers, CommShape, FULL_REPLAY_TP_COLLECTIVES, FlopConvention, FlopsPerToken, Layout,
    MemoryBreakdown, ModelDims, ParamCount, Recomputation, StateRecipe, TrainSetup, comm_buffers,
    comm_shape, flops_per_token, param_count, tp_collectives, tp_per_layer,
};
use crate::workload::{
    Framework, HeldParams, block_kinds, dense_data_ranks, expert_data_ranks, expert_overlap_runs,
    expert_tensor, held_params,
};
use loam_ir::types::Recompute;

mod cache;
mod data;
pub(crate) use cache::{KernelShare, StageCache};
use data::Windows;

/// The cost model bound to one model, run and cluster.
#[derive(Debug, Clone)]
pub(crate) struct Costing<'a> {
    model: &'a ModelDims,
    setup: &'a TrainSetup,
    cluster: &'a ClusterFigures,
    rates: Rates,
    /// The output head's rates: 16-bit in FP8 jobs.
    head_rates: Rates,
    count: ParamCount,
    /// FLOPs per token under each recomputation mode, by [`Recompute::index`].
    flops: [FlopsPerToken; 3],
    tokens_per_step: f64,
}

/// One block and the collectives around it, without recomputation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernel {
    block: BlockTime,
    /// The final norm, LM head and loss of one micro-batch (the last rank's extra work).
    head: f64,
    /// Of `head`, the forward: the logits GEMM and half of the loss.
    head_forward: f64,
    /// The input embedding of one micro-batch (the first rank's extra work).
    embedding: f64,
    buffers: CommBuffers,
    /// One tensor-parallel collective of a block.
    tp_one: f64,
    /// Forward context-parallel ring time the attention core does not hide (0 without context
    /// parallelism).
    cp_forward: f64,
    /// The same in the backward.
    cp_backward: f64,
    /// Expert-parallel all-to-alls of a block.
    ep_layer: f64,
}

impl Kernel {
    /// Seconds a block's tensor-parallel collectives add to its forward and to its backward
    /// under whole-block recomputation `mode` ([`tp_collectives`]): the forward runs the two a
    /// full replay repeats (after the attention and after the MLP), the backward the rest,
    /// each pass beside its own tensor-split GEMMs ([`tensor_exposed`]).
    fn tensor_passes(&self, layout: &Layout, mode: Recompute, contention: f64) -> (f64, f64) {
        let collectives = tp_collectives(mode, layout.sequence_parallel);
        let forward = tensor_exposed(
            layout,
            FULL_REPLAY_TP_COLLECTIVES * self.tp_one,
            self.block.tensor_gemm_forward,
            contention,
        );
        let backward = tensor_exposed(
            layout,
            (collectives - FULL_REPLAY_TP_COLLECTIVES) * self.tp_one,
            self.block.tensor_gemm_backward,
            contention,
        );
        (forward, backward)
    }

    /// Seconds of the embedding and of the head and loss per micro-batch, on a rank that holds
    /// them as `embedding` and `head` say.
    fn ends(&self, embedding: bool, head: bool) -> f64 {
        let embedding = if embedding { self.embedding } else { 0.0 };
        embedding + if head { self.head } else { 0.0 }
    }
}

/// The ranks that can pace a layout's pipeline and its bubble: what a step's floor
/// ([`Costing::step_floor`]) reads of its [`Placement`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// The ranks that can pace the pipeline (the first, the last, the middle one with the most
    /// blocks): their blocks and whether they hold the embedding and the head.
    ranks: [(f64, bool, bool); 3],
    /// How many of `ranks` there are.
    rank_count: usize,
    /// `(p − 1) / v`.
    bubble_share: f64,
}

impl Pacing {
    /// The ranks of `ranks` there are.
    fn ranks(&self) -> impl Iterator<Item = &(f64, bool, bool)> {
        self.ranks.iter().take(self.rank_count)
    }
}

/// Pipeline stages and data-parallel ranks of a layout: what does not depend on its micro-batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    pacing: Pacing,
    /// The most blocks a rank holds, at least 1.
    lps: f64,
    /// Gradient reduce-scatter in buckets (`Framework::collective_params`: Megatron-Core's, or
    /// DeepSpeed's where the spec names it): dense gradients over the data-parallel group,
    /// routed-expert gradients over the expert-data-parallel group.
    grad_rs: f64,
    /// All-gather of one block's weights, frozen ones included (ZeRO-3, before its forward and
    /// its backward).
    block_ag: f64,
    /// Reduce-scatter of one block's gradients (ZeRO-3, under its backward).
    block_rs: f64,
    /// All-gather of the updated trainable weights after a sharded optimizer step (ZeRO-1/2),
    /// in the same buckets as `grad_rs`.
    param_ag: f64,
    /// Pipeline ranks `p`.
    stages: f64,
    /// Model chunks per rank `v`.
    chunks: f64,
    /// Optimizer-step seconds with the optimizer state whole.
    optimizer_whole: f64,
    /// The same with the state sharded over the data-parallel (and, for routed experts, the
    /// expert-data-parallel) ranks (ZeRO ≥ 1).
    optimizer_sharded: f64,
    /// Parameters one device holds before ZeRO sharding.
    params: HeldParams,
}

/// A [`Kernel`] and a [`Placement`] of one layout together.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Micro-batches per step (at least 1).
    m: f64,
    devices: f64,
    pp_comm: f64,
    comm: CommShape,
    kernel: Kernel,
    placement: Placement,
}

/// A [`Shape`] under one recomputation mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Replay {
    /// Tensor-parallel bytes per step.
    tp_step: f64,
    steady: f64,
    bubble: f64,
    compute: f64,
    tensor_comm: f64,
    /// The compute data-parallel communication hides under.
    windows: Windows,
    flops: FlopsPerToken,
}

/// What each block of a rank costs one micro-batch under one recomputation mode
/// ([`Costing::per_block`]).
#[derive(Debug, Clone, Copy)]
struct PerBlock {
    /// The mean block of the rank, its replayed share included.
    block: BlockTime,
    /// A block that is not replayed whole.
    kept: BlockTime,
    /// Its exposed tensor-, context- and expert-parallel communication.
    kept_comm: f64,
    /// The communication replaying a block whole adds.
    replay_comm: f64,
    /// A block's forward compute, what replaying it whole adds besides `replay_comm`.
    whole_forward: f64,
    /// A kept block's forward pass with its collectives.
    forward: f64,
}

impl PerBlock {
    /// Seconds of a rank of `blocks` blocks, `replayed` of them replayed whole, with `extra`
    /// seconds of embedding and head: the one sum the step's pace and the stage times share.
    #[inline]
    fn seconds(&self, blocks: f64, replayed: f64, extra: f64) -> f64 {
        blocks * (self.kept.total() + self.kept_comm)
            + replayed * (self.whole_forward + self.replay_comm)
            + extra
    }
}

/// One stage's seconds for one micro-batch ([`Costing::stage`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageSeconds {
    /// Forward and backward, recomputation and exposed collectives included.
    pub seconds: f64,
    /// Of `seconds`, the forward pass with its collectives.
    pub forward: f64,
    /// Of `seconds`, the tensor-, context- and expert-parallel collectives.
    pub tensor_comm: f64,
}

/// The share of `model`'s blocks that are MoE blocks (and run expert all-to-alls).
fn moe_share(model: &ModelDims) -> f64 {
    let moe: u32 = block_kinds(model)
        .iter()
        .filter(|(_, kind)| kind.moe)
        .map(|(n, _)| n)
        .sum();
    f64::from(moe) / f64::from(model.layers.max(1))
}

/// Seconds `comm` adds to a step when it runs beside `window` seconds of compute: whatever does
/// not fit under the window, plus the slowdown the hidden part inflicts on the compute it
/// overlaps ([`FittedConstants::overlap_contention`](crate::cost::FittedConstants)).
pub(crate) fn exposed(comm: f64, window: f64, contention: f64) -> f64 {
    let hidden = comm.min(window.max(0.0));
    (comm - hidden) + contention * hidden
}

/// Seconds `comm` of tensor-parallel collectives add to a pass of a block whose tensor-split
/// GEMMs take `gemms` seconds: all of it when they block. Under `layout.tensor_overlap` the
/// collectives are cut into `t` chunks (the tensor degree) that run beside the GEMMs they feed
/// and drain (Transformer Engine's userbuffers behind Megatron-Core's `--tp-comm-overlap`,
/// Wang et al. 2022, "Overlap Communication with Dependent Computation via Decomposition in
/// Large Deep Learning Models"; torchtitan's async tensor parallelism): one chunk stays exposed
/// (counted: the first all-gather chunk has no GEMM before it, the last reduce-scatter chunk
/// none after it), and of the other `t − 1` what [`exposed`] leaves beside the GEMMs, with the
/// contention every overlap in the model pays.
pub(crate) fn tensor_exposed(layout: &Layout, comm: f64, gemms: f64, contention: f64) -> f64 {
    if layout.tensor_overlap {
        let t = f64::from(layout.tensor.max(1));
        comm / t + exposed(comm - comm / t, gemms, contention)
    } else {
        comm
    }
}

impl<'a> Costing<'a> {
    /// The cost model of `model` and `setup` on `cluster`; an error when the device has no peak
    /// figure for the run's precision.
    pub(crate) fn new(
        model: &'a ModelDims,
        setup: &'a TrainSetup,
        cluster: &'a ClusterFigures,
    ) -> Result<Costing<'a>, CostError> {
        let rates = Rates::new(cluster, setup.precision).ok_or_else(|| {
            CostError::UnsupportedPrecision {
                device: cluster.device.id.clone(),
                precision: setup.precision,
            }
        })?;
        let head_rates = Rates::new(cluster, sixteen_bit(setup.precision)).unwrap_or(rates);
        Ok(Costing {
            model,
            setup,
            cluster,
            rates,
            head_rates,
            count: param_count(model),
            flops: [
                flops_per_token(model, Recompute::None),
                flops_per_token(model, Recompute::Selective),
                flops_per_token(model, Recompute::Full),
            ],
            tokens_per_step: setup.tokens_per_step(model),
        })
    }

    /// Whether `layout`'s expert all-to-alls run beside another micro-batch's compute: the one
    /// rule the step, the stage times and the search's floors share ([`expert_overlap_runs`]).
    pub(crate) fn expert_overlap_runs(&self, layout: &Layout) -> bool {
        self.setup.expert_overlap_on(layout)
    }

    /// [`Costing::expert_overlap_runs`] whatever is recomputed: what a floor over every
    /// recomputation may assume.
    pub(crate) fn overlap_schedule_runs(&self, layout: &Layout) -> bool {
        expert_overlap_runs(
            self.setup.expert_overlap,
            self.setup.states.framework,
            layout.pipeline,
            layout.virtual_stages,
            layout.expert,
            false,
        )
    }

    /// Parameters one device of `layout` holds before ZeRO sharding.
    pub(crate) fn params_per_device(&self, layout: &Layout) -> HeldParams {
        held_params(self.model, &self.count, layout)
    }

    /// Reads `layout`'s tensor, context and expert degrees, micro-batch and sequence parallelism.
    pub(crate) fn kernel(&self, layout: &Layout) -> Kernel {
        let (model, cluster) = (self.model, self.cluster);
        let t = f64::from(layout.tensor.max(1));
        let cp = f64::from(layout.context.max(1));
        let ep = f64::from(layout.expert.max(1));
        let buffers = comm_buffers(model, self.setup, layout);
        let block = block_time(model, layout, &self.rates, self.setup.flash_attention)
            .with_recompute(Recompute::None);
        let tokens = layout.micro_batch_tokens(model.seq_len);
        let head_parts = HeadTime::new(model, tokens, layout.tensor, &self.head_rates);
        let head = head_parts.total();
        let head_forward = head_parts.logits_forward + head_parts.loss / 2.0;
        let embedding = embedding_time(model, tokens, self.setup.precision.bytes(), &self.rates);

        // Tensor parallel: blocking collectives on the critical path of every block; how many
        // depends on recomputation, so [`Costing::replay`] counts them.
        let tp_one = tensor_collective_time(layout, buffers.tp, cluster);
        // Context parallel: K/V ring steps hide under the attention core they feed.
        let (cp_forward, cp_backward) = if layout.context > 1 {
            let ring = (cp - 1.0) * p2p_time(buffers.cp_kv, t, cluster);
            let contention = cluster.fitted.overlap_contention;
            (
                exposed(ring, block.attention_forward, contention),
                exposed(2.0 * ring, 2.0 * block.attention_forward, contention),
            )
        } else {
            (0.0, 0.0)
        };
        // Expert parallel: dispatch and combine all-to-alls, forward and backward, in the MoE
        // blocks (the mean block carries their share). Folded onto the grid with expert tensor
        // parallelism 1, the expert group is `expert` consecutive ranks: inside a node while it
        // fits one, else over the NICs. How much of it a pipeline hides: [`Costing::replay`].
        let ep_group = Group {
            size: ep,
            stride: f64::from(expert_tensor(layout)),
        };
        let ep_layer =
            4.0 * expert_exchange_time(
                buffers.ep,
                ep_group,
                cluster,
                model,
                self.setup.expert_dispatch,
            ) * moe_share(model);
        Kernel {
            block,
            head,
            head_forward,
            embedding,
            buffers,
            tp_one,
            cp_forward,
            cp_backward,
            ep_layer,
        }
    }

    /// Reads `layout`'s pipeline, its virtual stages and how it splits the blocks.
    pub(crate) fn pacing(&self, layout: &Layout) -> Pacing {
        let p = f64::from(layout.pipeline.max(1));
        let v = f64::from(layout.virtual_stages.max(1));
        let (loads, count) = layout.stage_split(self.model.layers).ranks(layout.pipeline);
        let [a, b, c, ..] = loads.map(|r| (f64::from(r.blocks), r.embedding, r.head));
        Pacing {
            ranks: [a, b, c],
            rank_count: count.min(3),
            bubble_share: (p - 1.0) / v,
        }
    }

    /// Reads `layout`'s tensor, context and expert degrees, pipeline, virtual stages and data
    /// degree; `params` are its [`Costing::params_per_device`].
    pub(crate) fn placement(&self, layout: &Layout, params: &HeldParams) -> Placement {
        let cluster = self.cluster;
        let t = f64::from(layout.tensor.max(1));
        let p = f64::from(layout.pipeline.max(1));
        let v = f64::from(layout.virtual_stages.max(1));
        let split = layout.stage_split(self.model.layers);
        let lps = f64::from(split.max_blocks()).max(1.0);
        let elt = self.setup.precision.bytes();
        // Dense weights are replicated over data × context ranks, stride t; routed experts over
        // the expert-data-parallel ranks, which sit `expert · expert_tensor` apart (Megatron-Core
        // folds experts onto the grid as expert-tensor × expert × expert-data, innermost first).
        let dense_ranks = dense_data_ranks(layout);
        let expert_ranks = expert_data_ranks(layout);
        let dp_group = Group {
            size: dense_ranks,
            stride: t,
        };
        let edp_group = Group {
            size: expert_ranks,
            stride: f64::from(layout.expert.max(1)) * f64::from(expert_tensor(layout)),
        };
        let dense_weights = params.total - params.routed;
        // Gradients are reduced in the recipe's format (fp32 for bf16 and fp8: Megatron-Core's
        // `grad_reduce_in_fp32`, FSDP's `reduce_dtype=float32`), the same bytes its memory
        // counts; weights are gathered in the training precision.
        let grad_elt = StateRecipe::reduced_gradient_bytes(self.setup);
        // Each collective pays NCCL's latency for its ranks, so what one collective carries
        // matters (`Framework::collective_params`): buckets as the spec's framework, else
        // Megatron-Core, cuts them, and FSDP's blocks; `Costing::data_seconds` takes the one the
        // framework of each ZeRO stage uses.
        let bucket = self
            .setup
            .states
            .framework
            .and_then(|f| f.collective_params(dense_ranks))
            .or_else(|| Framework::MegatronCore.collective_params(dense_ranks))
            .unwrap_or(f64::INFINITY);
        let bucketed = |params: f64, group: Group, bytes: f64| {
            let full = (params / bucket).floor();
            let rest = params - full * bucket;
            let whole = if full > 0.0 {
                full * collective_time(Collective::Gather, bucket * bytes, group, cluster)
            } else {
                0.0
            };
            whole + collective_time(Collective::Gather, rest * bytes, group, cluster)
        };
        let in_buckets = |dense: f64, routed: f64, bytes: f64| {
            bucketed(dense, dp_group, bytes) + bucketed(routed, edp_group, bytes)
        };
        let per_block = |dense: f64, routed: f64, bytes: f64| {
            collective_time(Collective::Gather, dense / lps * bytes, dp_group, cluster)
                + collective_time(Collective::Gather, routed / lps * bytes, edp_group, cluster)
        };
        let grad_rs = in_buckets(params.trainable_dense, params.trainable_routed, grad_elt);
        let param_ag = in_buckets(params.trainable_dense, params.trainable_routed, elt);
        let block_ag = per_block(dense_weights, params.routed, elt);
        let block_rs = per_block(params.trainable_dense, params.trainable_routed, grad_elt);
        // Only the weights that train are updated.
        let update = |dense: f64, routed: f64| {
            optimizer_seconds(dense + routed, elt, cluster.device.memory_bandwidth)
        };
        Placement {
            pacing: self.pacing(layout),
            lps,
            grad_rs,
            block_ag,
            block_rs,
            param_ag,
            stages: p,
            chunks: v,
            optimizer_whole: update(params.trainable_dense, params.trainable_routed),
            optimizer_sharded: update(
                params.trainable_dense / dense_ranks,
                params.trainable_routed / expert_ranks,
            ),
            params: *params,
        }
    }

    /// Micro-batches per step of `layout` (at least 1), as its [`Shape`] counts them.
    pub(crate) fn micro_batches(&self, layout: &Layout) -> f64 {
        layout.micro_batches(self.setup.global_batch).max(1.0)
    }

    /// Joins the `kernel` and the `placement` of `layout`.
    pub(crate) fn shape(&self, layout: &Layout, kernel: &Kernel, placement: &Placement) -> Shape {
        let t = f64::from(layout.tensor.max(1));
        let cp = f64::from(layout.context.max(1));
        let d = f64::from(layout.data.max(1));
        let v = f64::from(layout.virtual_stages.max(1));
        let m = self.micro_batches(layout);
        let comm = comm_shape(
            self.model,
            self.setup,
            layout,
            &placement.params,
            &kernel.buffers,
        );
        let pp_comm = if layout.pipeline > 1 {
            let stride = t * cp * d;
            2.0 * v * m * p2p_time(comm.pp_buffer, stride, self.cluster)
        } else {
            0.0
        };
        Shape {
            m,
            devices: layout.devices() as f64,
            pp_comm,
            comm,
            kernel: *kernel,
            placement: *placement,
        }
    }

    /// Adds `layout`'s recomputation to its `shape`. Full recomputation replays a block's
    /// forward, with its tensor-parallel collectives and context-parallel ring, in the backward;
    /// under partial recomputation only the blocks [`Recomputation::recomputed`] names do, so
    /// every rank's pace counts its own.
    #[inline]
    pub(crate) fn replay(&self, shape: &Shape, layout: &Layout) -> Replay {
        let kernel = &shape.kernel;
        let recomputation = Recomputation::of(layout);
        let share = layout.recomputed_share(self.model.layers);
        let tp_per_layer = tp_per_layer(layout, self.model.layers);
        let per = self.per_block(kernel, layout);
        let PerBlock {
            block,
            kept,
            kept_comm,
            replay_comm,
            ..
        } = per;
        let placement = &shape.placement;
        let m = shape.m;
        // The step runs at the pace of the slowest rank: its blocks, plus the embedding on the
        // first and the head and loss on the last (Narayanan et al. 2021, §2.2: every rank runs
        // each micro-batch at the pace of the slowest).
        let mut pace = (f64::NEG_INFINITY, 0.0, 0.0, 0.0);
        for &(blocks, embedding, head) in placement.pacing.ranks() {
            let extra = kernel.ends(embedding, head);
            let replayed = recomputation.recomputed(blocks);
            let seconds = per.seconds(blocks, replayed, extra);
            if seconds > pace.0 {
                pace = (seconds, blocks, replayed, extra);
            }
        }
        let (stage_mb, blocks, replayed, extra) = pace;
        let flops = self.flops_of(layout, share);
        Replay {
            tp_step: shape.comm.tp_step(tp_per_layer),
            steady: m * stage_mb,
            bubble: placement.pacing.bubble_share * stage_mb,
            compute: m * (blocks * kept.total() + replayed * kernel.block.forward + extra),
            tensor_comm: m * (blocks * kept_comm + replayed * replay_comm),
            windows: Windows::new(&block, placement, m),
            flops,
        }
    }

    /// What each block of a rank costs one micro-batch under `layout`'s recomputation: the
    /// one place [`Costing::replay`] (the pace of the step) and [`Costing::stage`] (the times
    /// the Plan IR gives each stage) take it from.
    fn per_block(&self, kernel: &Kernel, layout: &Layout) -> PerBlock {
        let mode = layout.recompute;
        let share = layout.recomputed_share(self.model.layers);
        // The mean block of the rank: windows, the expert overlap and the reported figures.
        let block = kernel.block.replaying(mode, share);
        // What every block costs, and what replaying one whole adds to it.
        let kept_mode = if mode == Recompute::Full {
            Recompute::None
        } else {
            mode
        };
        let kept = kernel.block.with_recompute(kept_mode);
        let (cp_kept, cp_replay) = if layout.context > 1 {
            let forward_ring = kernel.cp_forward;
            let selective = if kept_mode == Recompute::Selective {
                forward_ring
            } else {
                0.0
            };
            (forward_ring + kernel.cp_backward + selective, forward_ring)
        } else {
            (0.0, 0.0)
        };
        // Expert all-to-alls overlap the compute of the other micro-batch the steady state of a
        // pipeline runs (a forward against a backward) where the schedule does so
        // ([`expert_overlap_runs`]: Megatron-Core's EP all-to-all overlap on an interleaved
        // pipeline, DeepSeek-V3's DualPipe); only what exceeds a block's compute is exposed.
        // Elsewhere they sit between the blocks' kernels.
        let contention = self.cluster.fitted.overlap_contention;
        let ep_layer = if self.expert_overlap_runs(layout) {
            exposed(kernel.ep_layer, block.total(), contention)
        } else {
            kernel.ep_layer
        };
        let (tp_forward, tp_backward) = kernel.tensor_passes(layout, kept_mode, contention);
        let kept_comm = tp_forward + tp_backward + cp_kept + ep_layer;
        // A whole replay repeats the forward, collectives and GEMMs alike.
        let replay_comm = tp_forward + cp_replay;
        // The forward's context-parallel ring and half of the expert all-to-alls (dispatch and
        // combine; the backward mirrors them) join its tensor-parallel collectives.
        let forward_comm = tp_forward
            + if layout.context > 1 {
                kernel.cp_forward
            } else {
                0.0
            }
            + ep_layer / 2.0;
        PerBlock {
            block,
            kept,
            kept_comm,
            replay_comm,
            whole_forward: kernel.block.forward,
            forward: kept.forward + forward_comm,
        }
    }

    /// Seconds one pipeline rank (or, interleaved, one model chunk) of `layout` spends on one
    /// micro-batch when it holds `blocks` blocks, the embedding when `embedding` and the final
    /// norm, head and loss when `head`: the same sum [`Costing::replay`] paces the step with,
    /// with the forward pass and the tensor-parallel collectives apart, plus, unless `head`
    /// (the last chunk sends nothing on), the send of its activations forward and the receipt
    /// of their gradients back (the step counts those in `other`).
    pub(crate) fn stage(
        &self,
        layout: &Layout,
        blocks: f64,
        embedding: bool,
        head: bool,
    ) -> StageSeconds {
        let kernel = self.kernel(layout);
        let send = if head || layout.pipeline <= 1 {
            0.0
        } else {
            let placement = self.placement(layout, &self.params_per_device(layout));
            let shape = self.shape(layout, &kernel, &placement);
            shape.pp_comm / (f64::from(layout.virtual_stages.max(1)) * shape.m)
        };
        let per = self.per_block(&kernel, layout);
        // Partial recomputation replays the first blocks of each chunk: a rank of `v` chunks
        // like this one replays `v` times what the chunk does.
        let chunks = f64::from(layout.virtual_stages.max(1));
        let replayed = Recomputation::of(layout).recomputed(blocks * chunks) / chunks;
        let extra = kernel.ends(embedding, head);
        // The embedding's forward is its gather, one of its three passes; the head's forward is
        // its logits GEMM (a third of the GEMM's work) and half of the loss.
        let extra_forward = if embedding {
            kernel.embedding / 3.0
        } else {
            0.0
        } + if head { kernel.head_forward } else { 0.0 };
        StageSeconds {
            seconds: per.seconds(blocks, replayed, extra) + send,
            forward: blocks * per.forward + extra_forward + send / 2.0,
            tensor_comm: blocks * per.kept_comm + replayed * per.replay_comm,
        }
    }

    /// FLOPs per token under `layout`'s recomputation, of which `share` of the blocks are
    /// replayed whole under full recomputation.
    fn flops_of(&self, layout: &Layout, share: f64) -> FlopsPerToken {
        let of = |mode: Recompute| {
            self.flops
                .get(mode.index())
                .copied()
                .unwrap_or_else(|| flops_per_token(self.model, mode))
        };
        if !Recomputation::of(layout).is_partial() {
            return of(layout.recompute);
        }
        let (none, full) = (of(Recompute::None), of(Recompute::Full));
        FlopsPerToken {
            hardware: none.hardware + share * (full.hardware - none.hardware),
            ..full
        }
    }

    /// The whole step of `layout`, whose `shape` and `replay` these are, under its ZeRO stage,
    /// with its `memory`, written into `out` field by field: the search rewrites one estimate
    /// for every layout, and building a new one to copy over it costs as much again.
    #[inline(always)]
    pub(crate) fn step(
        &self,
        shape: &Shape,
        replay: &Replay,
        layout: &Layout,
        memory: MemoryBreakdown,
        out: &mut StepEstimate,
    ) {
        let placement = &shape.placement;
        let m = shape.m;
        let dp = self.data_seconds(
            placement,
            &replay.windows,
            m,
            layout.zero,
            layout.pipeline > 1,
        );
        let data_comm = dp.communication(m);
        let optimizer = dp.optimizer;
        let pp_comm = shape.pp_comm;
        // A site's fixed cost per step (zero in the shipped model), added once.
        let fixed = self.cluster.fitted.step_overhead_s;
        let step = replay.steady + replay.bubble + pp_comm + data_comm + optimizer + fixed;
        out.breakdown = StepBreakdown {
            compute: replay.compute,
            tensor_comm: replay.tensor_comm,
            pipeline_bubble: replay.bubble,
            data_comm,
            other: pp_comm + optimizer + fixed,
        };
        let tokens_per_s = self.tokens_per_step / step;
        let per_device = tokens_per_s / shape.devices;
        let flops = &replay.flops;
        let model_flops_s = per_device * flops.model;
        let gemm_peak = self.rates.gemm_peak;
        out.step_time_s = step;
        out.tokens_per_s = tokens_per_s;
        out.tokens_per_s_per_device = per_device;
        out.model_tflops_per_device = model_flops_s / 1e12;
        out.mfu = model_flops_s / gemm_peak;
        out.hfu = per_device * flops.hardware / gemm_peak;
        out.flops_convention = FlopConvention::ModelCausal;
        out.model_flops_per_token = flops.model;
        out.hardware_flops_per_token = flops.hardware;
        out.memory_per_device_bytes = memory.total;
        out.memory = memory;
        out.comm_bytes_per_step = shape.comm.per_step(replay.tp_step, layout.zero);
    }
}
