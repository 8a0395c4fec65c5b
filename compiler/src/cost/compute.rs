//! Compute time of one transformer block and of the output head on one device.
//!
//! Every GEMM is timed from its own dimensions after tensor (and expert) splitting: tensor-core
//! time at the device's measured GEMM throughput (its [`Efficiency`] share of peak, sustained
//! over a step by [`FittedConstants::gemm_sustained`]), plus reading its operands once, plus,
//! under FP8, casting its 16-bit input to FP8 with its scale. Attention runs at the device's
//! measured flash-attention throughput, forward and backward apart. Work outside GEMMs (norms,
//! activations, residuals, dropout, expert permutation) is memory-bound. A pass over a block
//! takes at least the host's time to launch its kernels ([`launched`]).

use super::{
    BLOCK_KERNELS_BACKWARD, BLOCK_KERNELS_FORWARD, FP8_CAST_KERNELS_BACKWARD,
    FP8_CAST_KERNELS_FORWARD, KERNEL_LAUNCH_S, MOE_EXTRA_KERNELS_BACKWARD,
    MOE_EXTRA_KERNELS_FORWARD, NONGEMM_H_ELEMENTS, TENSOR_COLLECTIVES_PER_PASS,
};
use crate::cost::FittedConstants;
use crate::hardware::{ClusterFigures, DeviceFigures, Efficiency};
use crate::workload::{
    BlockKind, Layout, ModelDims, attended_keys, block_kinds, block_matrices, causal_keys,
    expert_tensor,
};
use loam_ir::types::{Mlp, Precision, Recompute};

/// Device rates a timing needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rates {
    /// Datasheet dense peak FLOP/s of the GEMM precision (the MFU denominator).
    pub gemm_peak: f64,
    /// Sustained FLOP/s of the GEMM precision.
    pub gemm_rate: f64,
    /// Sustained FLOP/s of the causal flash-attention forward (16-bit even under FP8).
    pub attention_forward_rate: f64,
    /// Sustained FLOP/s of the causal flash-attention backward.
    pub attention_backward_rate: f64,
    /// Memory bandwidth in bytes/s.
    pub memory_bandwidth: f64,
    /// Bytes per GEMM operand element.
    pub gemm_elt: f64,
    /// Bytes per activation element.
    pub act_elt: f64,
    /// Bytes moved per element of a GEMM's activation operand to cast it to FP8 (read the
    /// 16-bit value, write the 8-bit one; the amax for the scale is fused into the cast, as
    /// Transformer Engine does); zero outside FP8.
    pub cast_bytes: f64,
}

/// Peak FLOP/s attention kernels run at: FP8 GEMMs leave attention in 16-bit.
pub(crate) fn attention_peak(device: &DeviceFigures, precision: Precision) -> f64 {
    device
        .peak_flops
        .get(&sixteen_bit(precision))
        .or_else(|| device.peak_flops.get(&precision))
        .copied()
        .unwrap_or(0.0)
}

/// The precision attention and the output head run in: 16-bit under FP8 (Transformer Engine
/// and torchao leave both out of FP8), the job's own otherwise.
pub(crate) fn sixteen_bit(precision: Precision) -> Precision {
    if precision == Precision::Fp8 {
        Precision::Bf16
    } else {
        precision
    }
}

impl Rates {
    /// The rates of `cluster`'s device under `precision`, if the device supports it.
    pub(crate) fn new(cluster: &ClusterFigures, precision: Precision) -> Option<Rates> {
        Rates::of(&cluster.device, &cluster.fitted, precision)
    }

    /// The rates of `device` under `precision` with the `fitted` constants.
    pub(crate) fn of(
        device: &DeviceFigures,
        fitted: &FittedConstants,
        precision: Precision,
    ) -> Option<Rates> {
        let peak = *device.peak_flops.get(&precision)?;
        let efficiency: &Efficiency = &device.efficiency;
        let gemm_elt = match precision {
            Precision::Fp8 => 1.0,
            other => other.bytes(),
        };
        let attention_peak = attention_peak(device, precision);
        Some(Rates {
            gemm_peak: peak,
            gemm_rate: peak * efficiency.gemm(precision) * fitted.gemm_sustained,
            attention_forward_rate: attention_peak * efficiency.attention_forward,
            attention_backward_rate: attention_peak * efficiency.attention_backward,
            memory_bandwidth: device.memory_bandwidth,
            gemm_elt,
            act_elt: precision.bytes(),
            cast_bytes: if precision == Precision::Fp8 {
                precision.bytes() + 1.0
            } else {
                0.0
            },
        })
    }

    /// The fastest FLOP/s any kernel runs at: every FLOP of a step takes at least its inverse.
    pub(crate) fn fastest(&self) -> f64 {
        self.gemm_rate
            .max(self.attention_forward_rate)
            .max(self.attention_backward_rate)
    }

    /// Seconds of one `M×K · K×N` GEMM whose activation operand is `M×K`.
    pub(crate) fn gemm(&self, m: f64, n: f64, k: f64) -> f64 {
        let flops = 2.0 * m * n * k;
        let operands = self.gemm_elt * (m * k + k * n) + self.act_elt * m * n;
        let cast = self.cast_bytes * m * k;
        flops / self.gemm_rate + (operands + cast) / self.memory_bandwidth
    }
}

/// Forward, backward and recompute seconds of one block for one micro-batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct BlockTime {
    /// Forward pass.
    pub forward: f64,
    /// Backward pass.
    pub backward: f64,
    /// Forward work replayed by recomputation (runs inside the backward).
    pub recompute: f64,
    /// Attention-core forward seconds (what context-parallel rings hide under).
    pub attention_forward: f64,
    /// Of `forward`, the GEMMs of the matrices split over the tensor group (every matrix but
    /// the routed experts'): what overlapped tensor-parallel collectives run beside.
    pub tensor_gemm_forward: f64,
    /// Of `backward`, the same matrices' input- and weight-gradient GEMMs.
    pub tensor_gemm_backward: f64,
}

impl BlockTime {
    /// Everything.
    pub(crate) fn total(&self) -> f64 {
        self.forward + self.backward + self.recompute
    }

    /// The same block under `recompute`: nothing else about a block's timing depends on it, so
    /// the layout search times a block once for every recomputation mode.
    pub(crate) fn with_recompute(self, recompute: Recompute) -> BlockTime {
        self.replaying(recompute, 1.0)
    }

    /// The mean block of a rank under `recompute` when `share` of its blocks are replayed whole
    /// (partial full recomputation; 1 for plain full recomputation).
    pub(crate) fn replaying(self, recompute: Recompute, share: f64) -> BlockTime {
        let replayed = match recompute {
            Recompute::None => 0.0,
            Recompute::Selective => self.attention_forward,
            Recompute::Full => self.forward * share,
        };
        BlockTime {
            recompute: replayed,
            ..self
        }
    }
}

/// Timing of the mean block on one device: every block kind of the model (dense first blocks,
/// MoE blocks, sliding-window and global attention) timed and averaged by how many blocks it
/// has, so `layers ×` the result is the whole model's.
pub(crate) fn block_time(
    model: &ModelDims,
    layout: &Layout,
    rates: &Rates,
    flash_attention: bool,
) -> BlockTime {
    let layers = f64::from(model.layers.max(1));
    let mut mean = BlockTime::default();
    for (count, kind) in block_kinds(model) {
        if count == 0 {
            continue;
        }
        let share = f64::from(count) / layers;
        let b = kind_time(model, kind, layout, rates, flash_attention);
        mean.forward += share * b.forward;
        mean.backward += share * b.backward;
        mean.attention_forward += share * b.attention_forward;
        mean.tensor_gemm_forward += share * b.tensor_gemm_forward;
        mean.tensor_gemm_backward += share * b.tensor_gemm_backward;
    }
    mean.replaying(layout.recompute, layout.recomputed_share(model.layers))
}

/// Forward and backward seconds of one block of `kind`.
fn kind_time(
    model: &ModelDims,
    kind: BlockKind,
    layout: &Layout,
    rates: &Rates,
    flash_attention: bool,
) -> BlockTime {
    let t = f64::from(layout.tensor.max(1));
    let ep = f64::from(layout.expert.max(1));
    let etp = f64::from(expert_tensor(layout));
    let tokens = layout.micro_batch_tokens(model.seq_len);
    let h = f64::from(model.hidden);
    let trainable = &model.trainable;
    let experts = f64::from(model.experts.max(1));
    // With expert parallelism the tensor ranks split the tokens before the experts and every
    // expert is whole (expert tensor parallelism 1); without it the experts split like a dense
    // MLP. Each local expert sees its balanced share, padded to the capacity factor.
    let expert_tokens = tokens * etp / t * model.active_experts() * ep / experts * model.capacity();
    let local_experts = experts / ep;
    let rank = |part| trainable.lora_rank(part);
    let mut gemm_fwd = 0.0;
    let mut gemm_bwd = 0.0;
    let (mut tensor_gemm_fwd, mut tensor_gemm_bwd) = (0.0, 0.0);
    for m in block_matrices(model, kind) {
        // A routed matrix runs once per local expert on that expert's tokens; any other (shared
        // experts included) once per copy on every token.
        let (rows, copies, split) = if m.routed {
            (expert_tokens, local_experts, etp)
        } else {
            (tokens, m.stored, t)
        };
        let one = if m.row_parallel {
            rates.gemm(rows, m.output, m.input / split)
        } else {
            rates.gemm(rows, m.output / split, m.input)
        };
        let r = rank(m.part);
        let adapter = if r > 0.0 {
            rates.gemm(rows, r, m.input) + rates.gemm(rows, m.output, r)
        } else {
            0.0
        };
        let fwd = copies * (one + adapter);
        gemm_fwd += fwd;
        // Input gradients always; weight gradients only for the weights that train.
        let wgrad = if trainable.trains(m.part) { one } else { 0.0 };
        let bwd = copies * (one + wgrad + 2.0 * adapter);
        gemm_bwd += bwd;
        if !m.routed {
            tensor_gemm_fwd += fwd;
            tensor_gemm_bwd += bwd;
        }
    }
    let (qk, v) = model.attention_head_dims();
    let heads = f64::from(model.heads) / t;
    let (attn_fwd, attn_bwd) = if flash_attention {
        // Flash attention: causal, so only the unmasked keys are computed.
        let attn_flops = 2.0 * tokens * heads * (qk + v) * causal_keys(model, kind);
        // Backward recomputes the scores inside the kernel: 2.5× the forward FLOPs.
        (
            attn_flops / rates.attention_forward_rate,
            2.5 * attn_flops / rates.attention_backward_rate,
        )
    } else {
        // Materialised scores: batched `QKᵀ` and `AV` GEMMs over heads, then fused
        // scale-mask-softmax and dropout passes over the scores of each token (forward 4.5
        // element passes, backward 5.5).
        let keys = attended_keys(model, kind);
        let bmm = heads * (rates.gemm(tokens, keys, qk) + rates.gemm(tokens, v, keys));
        let pass = tokens * heads * keys * rates.act_elt / rates.memory_bandwidth;
        (bmm + 4.5 * pass, 2.0 * bmm + 5.5 * pass)
    };
    let sp_div = if layout.sequence_parallel { t } else { 1.0 };
    let width = if kind.moe {
        model.expert_width()
            * (model.active_experts() * model.capacity() + f64::from(model.shared_experts))
    } else {
        f64::from(model.ffn)
    };
    let act_elems = match model.mlp {
        Mlp::Gelu | Mlp::SquaredRelu => 5.0 * width / t,
        Mlp::Swiglu => 8.0 * width / t,
    };
    let nongemm_total = tokens * rates.act_elt * (NONGEMM_H_ELEMENTS * h / sp_div + act_elems)
        / rates.memory_bandwidth;
    // Routed tokens are permuted into expert order and back, forward and backward: a read and
    // a write of every routed copy each time (Megatron-Core's token dispatcher), eight passes.
    let permute = if kind.moe {
        8.0 * tokens * etp / t * model.active_experts() * h * rates.act_elt / rates.memory_bandwidth
    } else {
        0.0
    };
    let nongemm_total = nongemm_total + permute;
    let nongemm_fwd = nongemm_total / 3.0;
    let (kernels_fwd, kernels_bwd) = block_kernels(kind, layout, rates.cast_bytes > 0.0);
    BlockTime {
        forward: launched(gemm_fwd + attn_fwd + nongemm_fwd, kernels_fwd),
        backward: launched(gemm_bwd + attn_bwd + 2.0 * nongemm_fwd, kernels_bwd),
        recompute: 0.0,
        attention_forward: attn_fwd,
        tensor_gemm_forward: tensor_gemm_fwd,
        tensor_gemm_backward: tensor_gemm_bwd,
    }
}

/// Kernels the forward and the backward pass of a block of `kind` launch under `layout`, with
/// FP8 GEMMs when `fp8`: a dense block's, plus an MoE MLP's, the tensor-parallel collectives
/// (doubled under sequence parallelism) and FP8's casts. A lower bound: Python's own time per op
/// and the kernels of less common paths are not counted.
pub(crate) fn block_kernels(kind: BlockKind, layout: &Layout, fp8: bool) -> (f64, f64) {
    let mut forward = BLOCK_KERNELS_FORWARD;
    let mut backward = BLOCK_KERNELS_BACKWARD;
    if kind.moe {
        forward += MOE_EXTRA_KERNELS_FORWARD;
        backward += MOE_EXTRA_KERNELS_BACKWARD;
    }
    if layout.tensor > 1 {
        let split = if layout.sequence_parallel { 2.0 } else { 1.0 };
        forward += TENSOR_COLLECTIVES_PER_PASS * split;
        backward += TENSOR_COLLECTIVES_PER_PASS * split;
    }
    if fp8 {
        forward += FP8_CAST_KERNELS_FORWARD;
        backward += FP8_CAST_KERNELS_BACKWARD;
    }
    (forward, backward)
}

/// The most kernels a forward pass of one of `model`'s block kinds launches under `layout`, when
/// every kind's forward waits for its launches ([`launched`] at its floor); `None` when some
/// block's device work is longer.
pub(crate) fn launch_bound_forward(
    model: &ModelDims,
    layout: &Layout,
    rates: &Rates,
    flash_attention: bool,
) -> Option<f64> {
    let mut most: Option<f64> = None;
    for (count, kind) in block_kinds(model) {
        if count == 0 {
            continue;
        }
        let (kernels, _) = block_kernels(kind, layout, rates.cast_bytes > 0.0);
        let forward = kind_time(model, kind, layout, rates, flash_attention).forward;
        if forward > kernels * KERNEL_LAUNCH_S {
            return None;
        }
        most = Some(most.map_or(kernels, |m: f64| m.max(kernels)));
    }
    most
}

/// Seconds of a pass whose kernels take `gpu` seconds on the device and number `kernels`: the
/// device runs them no faster than the host launches them ([`KERNEL_LAUNCH_S`] each). Above
/// that floor the host launches ahead of the device and the pass takes the device's time, so a
/// block of realistic size is unchanged; a small block at a small micro-batch is launch-bound.
pub(crate) fn launched(gpu: f64, kernels: f64) -> f64 {
    gpu.max(kernels * KERNEL_LAUNCH_S)
}

/// The output head of one micro-batch on one device: the logits GEMM and the softmax
/// cross-entropy loss over its fp32 logits. The homogeneous model times it whole on the last
/// pipeline stage (`Costing::kernel`); the operator graph times the two as ops of their own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HeadTime {
    /// Forward seconds of the `tokens × hidden · hidden × vocab/t` logits GEMM.
    pub logits_forward: f64,
    /// Seconds of the loss, forward and backward.
    pub loss: f64,
}

impl HeadTime {
    /// The head of `tokens` tokens with the vocabulary split over `tensor` ranks.
    pub(crate) fn new(model: &ModelDims, tokens: f64, tensor: u32, rates: &Rates) -> HeadTime {
        let t = f64::from(tensor.max(1));
        let v = f64::from(model.vocab) / t;
        // Softmax cross-entropy over fp32 logits: about four passes over them.
        let loss = 4.0 * tokens * v * 4.0 / rates.memory_bandwidth;
        HeadTime {
            logits_forward: rates.gemm(tokens, v, f64::from(model.hidden)),
            loss,
        }
    }

    /// Forward and backward (input and weight gradients) of the logits GEMM.
    pub(crate) fn logits(&self) -> f64 {
        3.0 * self.logits_forward
    }

    /// Backward of the logits GEMM.
    pub(crate) fn logits_backward(&self) -> f64 {
        2.0 * self.logits_forward
    }

    /// The logits GEMM and the loss.
    pub(crate) fn total(&self) -> f64 {
        self.logits() + self.loss
    }
}

/// Seconds of the input embedding of `tokens` tokens in elements of `elt` bytes: a gather of one
/// row per token forward and a scatter-add backward, memory-bound (three passes over
/// `tokens × hidden`). The step model charges it to the first pipeline rank, the operator graph
/// to its embedding op.
pub(crate) fn embedding_time(model: &ModelDims, tokens: f64, elt: f64, rates: &Rates) -> f64 {
    3.0 * tokens * f64::from(model.hidden) * elt / rates.memory_bandwidth
}
