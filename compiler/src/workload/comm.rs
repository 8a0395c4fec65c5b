//! The bytes each parallel dimension moves: buffer sizes of single collectives and their counts.
//!
//! Sizes are the full buffer `S` of one collective as nccl-tests defines it; the cost model turns
//! them into time on the tier the group crosses (ring factors `2(n−1)/n`, `(n−1)/n`).

use super::arch::{dense_data_ranks, expert_data_ranks};
use super::params::{HeldParams, held_params, param_count};
use super::{Layout, ModelDims, TrainSetup};
use loam_ir::types::{Arch, Precision, Recompute};
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
    /// Gradient bytes this device reduces each step (or each micro-batch under ZeRO-3), for the
    /// weights that train only, in the state recipe's reduce format ([`super::StateRecipe`]).
    /// Routed-expert gradients are reduced over the expert-data-parallel ranks, the rest over
    /// data × context.
    pub dp_grad_buffer: f64,
    /// Of `dp_grad_buffer`, the routed-expert gradients.
    pub dp_expert_grad_buffer: f64,
    /// Parameter bytes gathered per ZeRO-3 all-gather of the whole stage, frozen weights
    /// included (0 below stage 3).
    pub dp_param_buffer: f64,
    /// Bytes of K and V one ring step of context parallelism passes on, per block, forward.
    pub cp_kv_buffer: f64,
    /// Bytes of one MoE all-to-all (dispatch or combine) per block per micro-batch: the `top_k`
    /// copies of this rank's tokens, padded to the capacity factor.
    pub ep_buffer: f64,
    /// Bytes this device moves in one step, by dimension (TP, PP, DP, CP, EP), for reports.
    pub per_step: [f64; 5],
}

/// Sizes of the collectives a layout causes.
pub fn comm_sizes(model: &ModelDims, setup: &TrainSetup, layout: &Layout) -> CommSizes {
    let buffers = comm_buffers(model, setup, layout);
    let held = held_params(model, &param_count(model), layout);
    comm_shape(model, setup, layout, &held, &buffers).sizes(layout)
}

/// The buffers of single collectives that only the tensor and context degrees and the
/// micro-batch decide (see [`CommSizes`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommBuffers {
    /// [`CommSizes::tp_buffer`].
    pub(crate) tp: f64,
    /// [`CommSizes::cp_kv_buffer`].
    pub(crate) cp_kv: f64,
    /// [`CommSizes::ep_buffer`].
    pub(crate) ep: f64,
}

/// The buffers of `layout`'s tensor, context and expert collectives.
pub(crate) fn comm_buffers(model: &ModelDims, setup: &TrainSetup, layout: &Layout) -> CommBuffers {
    let elt = setup.precision.bytes();
    let t = f64::from(layout.tensor.max(1));
    let h = f64::from(model.hidden);
    let tokens = layout.micro_batch_tokens(model.seq_len);
    CommBuffers {
        tp: tp_buffer(model, layout, setup.precision),
        // The key and value heads a ring step passes on: `kv_heads` of them, or every head's
        // up-projected K and V under latent attention (Megatron-Core's MLA context parallelism).
        cp_kv: {
            let (qk, v) = model.attention_head_dims();
            let kv_heads = match model.mla {
                Some(_) => f64::from(model.heads),
                None => f64::from(model.kv_heads),
            };
            tokens * kv_heads * (qk + v) * elt / t
        },
        // Each rank dispatches its own `tokens / t` tokens (the tensor ranks split the tokens
        // among them before the MoE layer, as Megatron-Core's all-to-all dispatcher does with
        // sequence parallelism), `top_k` copies each, padded to capacity.
        ep: match model.arch {
            Arch::Dense => 0.0,
            Arch::Moe => tokens * model.active_experts() * model.capacity() * h * elt / t,
        },
    }
}

/// Bytes of one tensor-parallel collective ([`CommSizes::tp_buffer`]) of a block that runs in
/// `precision`: the heterogeneous planner runs precision-sensitive blocks of fp8 jobs in bf16.
pub(crate) fn tp_buffer(model: &ModelDims, layout: &Layout, precision: Precision) -> f64 {
    layout.micro_batch_tokens(model.seq_len) * f64::from(model.hidden) * precision.bytes()
}

/// What [`comm_sizes`] works out before the ZeRO stage and recomputation are known: the layout
/// search tries every ZeRO stage and recomputation mode of one shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommShape {
    /// Blocks of the model (partial recomputation's share of them replays collectives).
    layers: u32,
    tp_buffer: f64,
    /// [`CommSizes::pp_buffer`].
    pub(crate) pp_buffer: f64,
    /// [`CommSizes::dp_grad_buffer`].
    pub(crate) dp_grad_buffer: f64,
    /// [`CommSizes::dp_expert_grad_buffer`].
    pub(crate) dp_expert_grad_buffer: f64,
    /// [`CommSizes::dp_param_buffer`] under ZeRO-3.
    dp_weight_buffer: f64,
    /// Of `dp_weight_buffer`, routed-expert weights.
    dp_expert_weight_buffer: f64,
    /// Ring factor of the expert-data-parallel group.
    ring_edp: f64,
    cp_kv_buffer: f64,
    ep_buffer: f64,
    /// Micro-batches times the blocks of the rank holding the most.
    m_layers: f64,
    /// Micro-batches per step.
    m: f64,
    ring_t: f64,
    ring_dp: f64,
    pp_step: f64,
    cp_step: f64,
    ep_step: f64,
}

/// The ring factor `(n−1)/n` (0 for one rank).
fn ring(n: f64) -> f64 {
    if n > 1.0 { (n - 1.0) / n } else { 0.0 }
}

/// The part of [`comm_sizes`] that neither the ZeRO stage nor recomputation changes, from the
/// parameters one device holds (`held`) and the layout's [`comm_buffers`].
pub(crate) fn comm_shape(
    model: &ModelDims,
    setup: &TrainSetup,
    layout: &Layout,
    held: &HeldParams,
    buffers: &CommBuffers,
) -> CommShape {
    let elt = setup.precision.bytes();
    let t = f64::from(layout.tensor.max(1));
    let cp = f64::from(layout.context.max(1));
    let ep = f64::from(layout.expert.max(1));
    let v = f64::from(layout.virtual_stages.max(1));
    let m = layout.micro_batches(setup.global_batch);
    // The rank with the most blocks sets the traffic per step.
    let layers_per_stage = f64::from(layout.stage_split(model.layers).max_blocks());
    let tp_buffer = buffers.tp;
    // Gradients move in the recipe's reduce format, as the step time charges them.
    let grad_elt = super::StateRecipe::reduced_gradient_bytes(setup);
    let dp_grad_buffer = held.trainable() * grad_elt;
    let dp_expert_grad_buffer = held.trainable_routed * grad_elt;
    let cp_kv_buffer = buffers.cp_kv;
    let ep_buffer = buffers.ep;
    let m_layers = m * layers_per_stage;
    let pp_step = if layout.pipeline > 1 {
        2.0 * m * v * tp_buffer / t
    } else {
        0.0
    };
    CommShape {
        layers: model.layers,
        tp_buffer,
        pp_buffer: tp_buffer / t,
        dp_grad_buffer,
        dp_expert_grad_buffer,
        dp_weight_buffer: held.total * elt,
        dp_expert_weight_buffer: held.routed * elt,
        ring_edp: ring(expert_data_ranks(layout)),
        cp_kv_buffer,
        ep_buffer,
        m_layers,
        m,
        ring_t: ring(t),
        ring_dp: ring(dense_data_ranks(layout)),
        pp_step,
        cp_step: m_layers * 3.0 * cp_kv_buffer * (cp - 1.0),
        ep_step: m_layers * 4.0 * ep_buffer * ring(ep),
    }
}

/// Counted: tensor-parallel collectives one block's forward replay adds to its backward under full
/// recomputation: the forward's two (attention and MLP outputs; Korthikanti et al. 2022, §4.2).
pub(crate) const FULL_REPLAY_TP_COLLECTIVES: f64 = 2.0;

/// TP collectives per block per micro-batch of a block under whole-block `mode` (full: replayed
/// whole) and sequence parallelism: four (forward and backward of the attention and MLP), the
/// replayed forward's [`FULL_REPLAY_TP_COLLECTIVES`], one more for selective recomputation with
/// sequence parallelism (the all-gather of the attention input it replays).
pub(crate) fn tp_collectives(mode: Recompute, sequence_parallel: bool) -> f64 {
    4.0 + match mode {
        Recompute::Full => FULL_REPLAY_TP_COLLECTIVES,
        Recompute::Selective if sequence_parallel => 1.0,
        _ => 0.0,
    }
}

/// TP collectives per block per micro-batch under `layout`'s recomputation and sequence
/// parallelism, for a rank of the mean size of `layers` blocks ([`CommSizes::tp_per_layer`]):
/// under partial recomputation the replayed share of its blocks adds its collectives.
pub(crate) fn tp_per_layer(layout: &Layout, layers: u32) -> f64 {
    match layout.recompute {
        Recompute::Full => {
            tp_collectives(Recompute::None, layout.sequence_parallel)
                + FULL_REPLAY_TP_COLLECTIVES * layout.recomputed_share(layers)
        }
        mode => tp_collectives(mode, layout.sequence_parallel),
    }
}

impl CommShape {
    /// The sizes under `layout`'s ZeRO stage, recomputation and sequence parallelism (its other
    /// fields must be those the shape was made from).
    pub(crate) fn sizes(&self, layout: &Layout) -> CommSizes {
        let tp_per_layer = tp_per_layer(layout, self.layers);
        let dp_param_buffer = if layout.zero >= 3 {
            self.dp_weight_buffer
        } else {
            0.0
        };
        CommSizes {
            tp_buffer: self.tp_buffer,
            tp_per_layer,
            pp_buffer: self.pp_buffer,
            dp_grad_buffer: self.dp_grad_buffer,
            dp_expert_grad_buffer: self.dp_expert_grad_buffer,
            dp_param_buffer,
            cp_kv_buffer: self.cp_kv_buffer,
            ep_buffer: self.ep_buffer,
            per_step: self.per_step(self.tp_step(tp_per_layer), layout.zero),
        }
    }

    /// Tensor-parallel bytes per step with `tp_per_layer` collectives per block.
    pub(crate) fn tp_step(&self, tp_per_layer: f64) -> f64 {
        self.m_layers * tp_per_layer * self.tp_buffer * self.ring_t
    }

    /// [`CommSizes::per_step`] with `tp_step` from [`CommShape::tp_step`], under ZeRO `zero`.
    pub(crate) fn per_step(&self, tp_step: f64, zero: u8) -> [f64; 5] {
        // Dense gradients over data × context, routed-expert gradients over the expert-data-
        // parallel ranks; ZeRO-3 also gathers every weight, frozen ones included, twice.
        let dense_grads = self.dp_grad_buffer - self.dp_expert_grad_buffer;
        let grads = dense_grads * self.ring_dp + self.dp_expert_grad_buffer * self.ring_edp;
        let dp_step = if zero >= 3 {
            let expert_weights = self.dp_expert_weight_buffer;
            let weights = (self.dp_weight_buffer - expert_weights) * self.ring_dp
                + expert_weights * self.ring_edp;
            self.m * (2.0 * weights + grads)
        } else {
            2.0 * grads
        };
        [tp_step, self.pp_step, dp_step, self.cp_step, self.ep_step]
    }
}
