//! What one transformer block keeps for its backward (its stash), per token, under each way a
//! training stack keeps the inputs of its weight GEMMs: at the activation precision, or in fp8
//! where the stack's fp8 GEMMs save the quantized copy they computed with.

use super::super::arch::{BlockKind, block_kinds};
use super::super::{Framework, Layout, ModelDims, TrainSetup};
use loam_ir::types::{Mlp, Precision, Recompute};

/// How a block's weight GEMMs keep their inputs for the weight gradient.
///
/// Transformer Engine's fp8 linears (`transformer_engine/pytorch/module/linear.py`,
/// `layernorm_linear.py`, `layernorm_mlp.py`: `saved_inputmat` is the input quantized for the
/// forward GEMM, its column-wise fp8 data kept for the weight gradient) keep 1 byte per
/// element: the norm outputs the QKV and first MLP projections read, the attention output
/// the output projection reads (a copy beside the 16-bit output flash attention keeps), and
/// the activation output the second MLP projection reads. Megatron-Core, and the NeMo and
/// Megatron-Bridge stacks on it, run their fp8 GEMMs through Transformer Engine; DeepSeek-V3's
/// FP8 framework caches the same inputs in FP8 (arXiv:2412.19437 §3.3.2). torchao's float8
/// linear, which torchtitan's FSDP runs, saves the high-precision input and weight
/// (`torchao/float8/float8_linear.py`, `matmul_with_hp_or_float8_args.forward`:
/// `ctx.save_for_backward(input_hp, weight_hp_t)`), and so does every 16-bit recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmInputs {
    /// At the activation precision ([`Precision::bytes`]).
    AsActivations,
    /// In fp8, 1 byte per element.
    Fp8,
}

impl GemmInputs {
    /// Both ways, in the order [`Stash`] holds them.
    pub const ALL: [GemmInputs; 2] = [GemmInputs::AsActivations, GemmInputs::Fp8];

    /// How a job of `setup` keeps them under ZeRO stage `zero`: in fp8 when it trains in fp8
    /// through a framework whose fp8 GEMMs are Transformer Engine's (Megatron-Core), else at the
    /// activation precision. The framework is the one the state recipe follows
    /// ([`Framework::of_setup`]: the spec's, else the one the ZeRO stage stands for).
    pub fn of(setup: &TrainSetup, zero: u8) -> GemmInputs {
        if setup.precision == Precision::Fp8
            && Framework::of_setup(setup, zero) == Framework::MegatronCore
        {
            GemmInputs::Fp8
        } else {
            GemmInputs::AsActivations
        }
    }

    /// The index of this way in [`Stash`]'s arrays.
    pub const fn index(self) -> usize {
        match self {
            GemmInputs::AsActivations => 0,
            GemmInputs::Fp8 => 1,
        }
    }

    /// Bytes per element of the input of a GEMM that runs in `precision`: 1 for an fp8 GEMM
    /// whose stack keeps its quantized input, else the activation precision's.
    fn bytes(self, precision: Precision) -> f64 {
        match (self, precision) {
            (GemmInputs::Fp8, Precision::Fp8) => 1.0,
            _ => precision.bytes(),
        }
    }
}

/// Bytes per token of one block's stash with no recomputation under a layout's tensor degree and
/// sequence parallelism, by [`GemmInputs`] (indexed by [`GemmInputs::index`]).
pub(crate) type Stash = [f64; 2];

/// Activation bytes one transformer block stashes for one micro-batch on one device, with
/// flash attention (no `s²` score tensors are kept), its GEMM inputs kept as `inputs`.
///
/// For a GPT-style block (MHA, GeLU with `ffn = 4h`, dropout, 16-bit) this reproduces Korthikanti
/// et al. Table 2 without the `5as/h` term: `sbh(10 + 24/t)` with tensor parallelism and `34·sbh/t`
/// with sequence parallelism. Full recomputation keeps only the block input.
pub fn activation_bytes_per_layer(
    model: &ModelDims,
    layout: &Layout,
    precision: Precision,
    inputs: GemmInputs,
    recompute: Recompute,
) -> f64 {
    let per_token = layer_bytes_per_token(model, precision, layout);
    let (kept, input_only) = layer_stash(
        model,
        layout,
        precision,
        per_token.get(inputs.index()).copied().unwrap_or(0.0),
    );
    if recompute == Recompute::Full {
        input_only
    } else {
        kept
    }
}

/// [`activation_bytes_per_layer`] without recomputation and under full recomputation (the block
/// input, at the activation precision), from one of the layout's [`layer_bytes_per_token`].
pub(super) fn layer_stash(
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

/// Bytes per token of one block's stash with no recomputation, under `layout`'s tensor degree and
/// sequence parallelism (nothing else of the layout changes it), by [`GemmInputs`].
pub(crate) fn layer_bytes_per_token(
    model: &ModelDims,
    precision: Precision,
    layout: &Layout,
) -> Stash {
    let t = f64::from(layout.tensor.max(1));
    let replicated_div = if layout.sequence_parallel { t } else { 1.0 };
    GemmInputs::ALL.map(|inputs| {
        let widths = Widths {
            elt: precision.bytes(),
            gemm_input: inputs.bytes(precision),
        };
        block_kinds(model)
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|&(_, kind)| block_bytes_per_token(model, kind, widths, t, replicated_div))
            .fold(0.0, f64::max)
    })
}

/// Bytes per element of what a block keeps: activations, and the inputs its weight GEMMs keep.
#[derive(Debug, Clone, Copy)]
struct Widths {
    elt: f64,
    gemm_input: f64,
}

impl Widths {
    /// Bytes a GEMM's output read by the next GEMM adds beside the 16-bit copy another kernel
    /// keeps of it: the quantized copy, when the GEMM inputs are kept apart.
    fn extra_input_copy(self) -> f64 {
        if self.gemm_input < self.elt {
            self.gemm_input
        } else {
            0.0
        }
    }
}

/// [`layer_bytes_per_token`] of one block of `kind`.
fn block_bytes_per_token(
    model: &ModelDims,
    kind: BlockKind,
    w: Widths,
    t: f64,
    replicated_div: f64,
) -> f64 {
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    let mask = if model.dropout { 1.0 } else { 0.0 };
    // Two norm inputs (the residual stream the norms' backward reads), the QKV input and the MLP
    // input (the norms' outputs, GEMM inputs), and two dropout masks.
    let replicated = 2.0 * w.elt * h + 2.0 * w.gemm_input * h + 2.0 * mask * h;
    // Q, K, V and the attention output that flash attention keeps (no scores), and the output
    // projection's own copy of its input when the GEMM inputs are kept apart.
    let (qk, v) = model.attention_head_dims();
    let attention = match &model.mla {
        // Grouped-query: `heads` query and output heads, `kv_heads` key and value heads.
        None => w.elt * (a * qk + f64::from(model.kv_heads) * (qk + v) + a * v),
        // Latent attention as Megatron-Core runs it: the up-projected per-head Q, K, V and the
        // output, plus the normed latents the up-projections read.
        Some(mla) => {
            let latents = f64::from(mla.q_lora_rank)
                + f64::from(mla.kv_lora_rank)
                + f64::from(mla.qk_rope_head_dim);
            w.elt * (2.0 * a * qk + 2.0 * a * v + latents)
        }
    } + w.extra_input_copy() * a * v;
    // Bytes per unit of MLP width: what the activation function's backward reads (gate and up
    // outputs under SwiGLU, the input under GeLU and squared ReLU) at the activation precision,
    // and its output, the second projection's input, as a GEMM input.
    let per_width = match model.mlp {
        Mlp::Swiglu => 2.0 * w.elt + w.gemm_input,
        Mlp::Gelu | Mlp::SquaredRelu => w.elt + w.gemm_input,
    };
    let mlp = if kind.moe {
        // Routed experts see `top_k` copies of each token, padded to capacity; each copy keeps
        // its permuted input (the experts' first GEMM input) besides the expert's activations.
        // Shared experts run every token.
        let routed = f64::from(model.top_k.max(1)) * model.capacity();
        let fe = model.expert_width();
        routed * (per_width * fe + w.gemm_input * h)
            + f64::from(model.shared_experts) * per_width * fe
    } else {
        per_width * f64::from(model.ffn)
    };
    replicated / replicated_div + (attention + mlp) / t
}

/// Bytes per token of one block's stash that selective recomputation drops besides the attention
/// scores, for models with latent attention or experts, by [`GemmInputs`]: the two norm outputs,
/// MLA's up-projected queries, keys and values (the latents stay), and the experts' activation
/// products, as DeepSeek-V3 recomputes RMSNorm and the MLA up-projections (arXiv:2412.19437
/// §3.2.3) and Megatron-Core's `--recompute-modules layernorm mla_up_proj moe_act` do. Dense
/// models with plain attention drop nothing more: their selective recomputation is the attention
/// core alone (Korthikanti et al. 2022).
pub(super) fn selective_dropped_bytes_per_token(
    model: &ModelDims,
    precision: Precision,
    t: f64,
    replicated_div: f64,
) -> Stash {
    let moe = block_kinds(model)
        .iter()
        .any(|(n, kind)| *n > 0 && kind.moe);
    if model.mla.is_none() && !moe {
        return [0.0; 2];
    }
    let elt = precision.bytes();
    let h = f64::from(model.hidden);
    let a = f64::from(model.heads);
    let (qk, v) = model.attention_head_dims();
    GemmInputs::ALL.map(|inputs| {
        let gemm_input = inputs.bytes(precision);
        let norms = 2.0 * gemm_input * h / replicated_div;
        let up_projected = if model.mla.is_some() {
            elt * (2.0 * a * qk + a * v)
        } else {
            0.0
        };
        let products = if moe {
            let routed = f64::from(model.top_k.max(1)) * model.capacity();
            gemm_input * (routed + f64::from(model.shared_experts)) * model.expert_width()
        } else {
            0.0
        };
        norms + (up_projected + products) / t
    })
}

#[cfg(test)]
mod tests {
    use super::super::{StageHolding, stage_memory};
    use super::*;
    use crate::workload::StateOverrides;
    use loam_ir::types::Optimizer;

    /// Llama 3.1 405B (Meta's model card dimensions).
    fn llama31_405b() -> ModelDims {
        ModelDims::dense(126, 16384, 53248, 128, 8, 128_256, 8192, Mlp::Swiglu)
    }

    fn setup(precision: Precision, framework: Option<Framework>) -> TrainSetup {
        TrainSetup {
            global_batch: 1536,
            precision,
            optimizer: Optimizer::Adamw,
            tokens: 0.0,
            flash_attention: true,
            expert_dispatch: Default::default(),
            expert_overlap: Default::default(),
            states: StateOverrides {
                framework,
                ..StateOverrides::NONE
            },
        }
    }

    /// Megatron-Bridge's GB200 FP8 layout of Llama 3.1 405B: TP4 (sequence parallel) PP16 v4
    /// DP4, micro-batch 1, no recomputation.
    fn gb200_layout() -> Layout {
        Layout {
            tensor: 4,
            pipeline: 16,
            data: 4,
            zero: 1,
            virtual_stages: 4,
            recompute: Recompute::None,
            sequence_parallel: true,
            ..Layout::single()
        }
    }

    #[test]
    fn fp8_gemm_inputs_are_kept_in_one_byte() {
        // Per token and block, TP4 with sequence parallelism, h = 16,384, 128 heads and 8 KV
        // heads of 128, ffn = 53,248.
        // At the activation precision (2 bytes): the two norm inputs and the QKV and MLP
        // inputs 4·2·h/4 = 32,768; Q, K, V and the output 2·(128·128 + 8·256 + 128·128)/4
        // = 17,408; gate, up and their product 3·2·53,248/4 = 79,872: 130,048.
        // Transformer Engine's fp8 GEMMs keep the QKV and MLP inputs in 1 byte
        // ((2·2 + 2·1)·h/4 = 24,576), add a 1-byte copy of the attention output the output
        // projection reads ((2·34,816 + 16,384)/4 = 21,504) and keep the product in 1 byte
        // ((2·2 + 1)·53,248/4 = 66,560): 112,640.
        let m = llama31_405b();
        let [plain, fp8] = layer_bytes_per_token(&m, Precision::Fp8, &gb200_layout());
        assert_eq!(plain, 130_048.0);
        assert_eq!(fp8, 112_640.0);
        // A 16-bit job keeps the same bytes either way.
        let [a, b] = layer_bytes_per_token(&m, Precision::Bf16, &gb200_layout());
        assert_eq!((a, b), (130_048.0, 130_048.0));
    }

    #[test]
    fn the_framework_decides_how_fp8_inputs_are_kept() {
        let fp8 = setup(Precision::Fp8, None);
        // ZeRO 0 and 1 stand for Megatron-Core (Transformer Engine), 2 and 3 for FSDP
        // (torchao's float8 keeps the high-precision input).
        assert_eq!(GemmInputs::of(&fp8, 1), GemmInputs::Fp8);
        assert_eq!(GemmInputs::of(&fp8, 3), GemmInputs::AsActivations);
        let fsdp = setup(Precision::Fp8, Some(Framework::Fsdp));
        assert_eq!(GemmInputs::of(&fsdp, 1), GemmInputs::AsActivations);
        let megatron = setup(Precision::Fp8, Some(Framework::MegatronCore));
        assert_eq!(GemmInputs::of(&megatron, 3), GemmInputs::Fp8);
        assert_eq!(
            GemmInputs::of(&setup(Precision::Bf16, None), 1),
            GemmInputs::AsActivations
        );
    }

    #[test]
    fn a_middle_rank_of_the_gb200_layout_holds_its_in_flight_chunks_in_fp8() {
        // Rank 1 holds 8 blocks in 4 chunks of 2; Megatron-Core's interleaved schedule runs
        // 2·(16 − 1 − 1) + (4 − 1)·16 = 76 warm-up forwards, so 77 chunks (154 block
        // micro-batches, 77/4 = 19.25 micro-batches of all its blocks) are in flight:
        // 154 · 8,192 · 112,640 = 142,103,019,520 bytes under Megatron-Core, and
        // 154 · 8,192 · 130,048 = 164,064,395,264 bytes had it kept 16-bit inputs (FSDP).
        let (m, layout) = (llama31_405b(), gb200_layout());
        let in_flight = layout.in_flight(1, layout.micro_batches(1536));
        assert_eq!(in_flight, 19.25);
        let holding = StageHolding {
            blocks: 8.0,
            embedding: false,
            head: false,
            in_flight,
        };
        let stash = |framework| {
            let memory = stage_memory(
                &m,
                &setup(Precision::Fp8, Some(framework)),
                &layout,
                &holding,
            );
            memory.activations + memory.pipeline_stash
        };
        assert_eq!(stash(Framework::MegatronCore), 142_103_019_520.0);
        assert_eq!(stash(Framework::Fsdp), 164_064_395_264.0);
    }

    #[test]
    fn the_search_memory_keeps_each_zero_stage_s_way() {
        // With no framework named, ZeRO 1 is Megatron-Core's and ZeRO 3 FSDP's: the layout
        // memory the search reads (its table holds ZeRO 0's way, the other worked out when
        // asked) gives each stage the activations of the framework named outright.
        let m = llama31_405b();
        let activations = |framework, zero| {
            let layout = Layout {
                zero,
                ..gb200_layout()
            };
            let memory =
                super::super::memory_per_device(&m, &setup(Precision::Fp8, framework), &layout);
            memory.activations + memory.pipeline_stash
        };
        for zero in [1, 3] {
            let named = if zero == 1 {
                Framework::MegatronCore
            } else {
                Framework::Fsdp
            };
            assert_eq!(activations(None, zero), activations(Some(named), zero));
        }
        assert!(activations(None, 1) < activations(None, 3));
    }
}
