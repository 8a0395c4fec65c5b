//! What a training framework keeps per parameter: the bytes of the weights, the gradients (as
//! accumulated and as reduced), the master weights and the optimizer moments under each
//! framework's precision recipe, written once so that memory and time read the same numbers.
//!
//! A spec may name its framework (`train { framework = megatron | deepspeed | fsdp }`); when it
//! names none, the ZeRO stage stands for the stack that runs it (ZeRO 0 and 1:
//! Megatron-Core's DDP and distributed optimizer; ZeRO 2 and 3: PyTorch FSDP's `SHARD_GRAD_OP`
//! and `FULL_SHARD`, the stacks of every sharded run in the calibration file), and the precision
//! picks the recipe within it. `gradients`, `master_weights` and `moments` in a spec's `train`
//! block override the recipe's formats ([`StateOverrides`]).

use super::TrainSetup;
use loam_ir::types::{Optimizer, Precision, StateFormat};
use serde::Serialize;

/// The stack whose precision recipe and gathering rule a plan follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Framework {
    /// Megatron-Core: DDP over a contiguous gradient buffer, the distributed optimizer for ZeRO 1.
    MegatronCore,
    /// DeepSpeed ZeRO with its documented defaults.
    DeepSpeed,
    /// PyTorch FSDP with a mixed-precision policy (`param_dtype` the training precision,
    /// `reduce_dtype=float32`) over sharded fp32 parameters.
    Fsdp,
}

impl Framework {
    /// The spec's words for the frameworks (`train { framework = … }`), in declaration order.
    pub const KEYWORDS: [&'static str; 3] = ["megatron", "deepspeed", "fsdp"];

    /// The framework a spec's keyword names.
    pub fn from_keyword(word: &str) -> Option<Framework> {
        match word {
            "megatron" => Some(Framework::MegatronCore),
            "deepspeed" => Some(Framework::DeepSpeed),
            "fsdp" => Some(Framework::Fsdp),
            _ => None,
        }
    }

    /// The framework loam assumes for ZeRO stage `zero` when a spec names none: Megatron-Core
    /// below stage 2 (NeMo and Megatron-Bridge runs: DDP, distributed optimizer), PyTorch FSDP
    /// from stage 2 (torchtitan, llm-foundry, NeMo AutoModel: every ZeRO-3 run in the
    /// calibration file is FSDP).
    pub fn for_zero(zero: u8) -> Framework {
        if zero >= 2 {
            Framework::Fsdp
        } else {
            Framework::MegatronCore
        }
    }

    /// The framework a job of `setup` runs under ZeRO stage `zero`: the spec's, else the one the
    /// stage stands for ([`Framework::for_zero`]).
    pub fn of_setup(setup: &TrainSetup, zero: u8) -> Framework {
        setup
            .states
            .framework
            .unwrap_or_else(|| Framework::for_zero(zero))
    }

    /// Parameters one of the framework's data-parallel collectives carries over `data_ranks`
    /// ranks, each paying its ring's latency; `None` where it reduces and gathers one wrapped
    /// block at a time (FSDP). Megatron-Core's DDP buckets hold `max(40,000,000, 1,000,000 ×
    /// dp_size)` parameters, "larger DP sizes need larger buckets to ensure collectives do not
    /// become latency-bound" (NVIDIA/Megatron-LM
    /// `megatron/core/distributed/distributed_data_parallel_config.py`, `bucket_size`); DeepSpeed
    /// reduces in its [`DEEPSPEED_REDUCE_BUCKET`].
    pub fn collective_params(self, data_ranks: f64) -> Option<f64> {
        match self {
            Framework::MegatronCore => Some((1e6 * data_ranks).max(4e7)),
            Framework::DeepSpeed => Some(DEEPSPEED_REDUCE_BUCKET),
            Framework::Fsdp => None,
        }
    }

    /// Whether the framework's data-parallel collectives go one wrapped block at a time
    /// ([`Framework::collective_params`] has no bucket for it).
    pub fn collects_by_block(self) -> bool {
        self.collective_params(1.0).is_none()
    }
}

/// The state formats a spec pins in its `train` block; `None` keeps the recipe's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StateOverrides {
    /// The framework whose recipe the states follow (`framework = deepspeed`); `None`: the one
    /// the ZeRO stage stands for ([`Framework::for_zero`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<Framework>,
    /// Gradients, as accumulated and as reduced (`gradients = fp32`).
    pub gradients: Option<StateFormat>,
    /// The copy of the weights the optimizer updates (`master_weights = fp32`).
    pub master_weights: Option<StateFormat>,
    /// Each optimizer moment (`moments = bf16`).
    pub moments: Option<StateFormat>,
}

impl StateOverrides {
    /// Nothing pinned: every state in its recipe's format.
    pub const NONE: StateOverrides = StateOverrides {
        framework: None,
        gradients: None,
        master_weights: None,
        moments: None,
    };
}

/// Bytes per parameter of every training state under one framework's recipe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StateRecipe {
    /// The framework the recipe is of.
    pub framework: Framework,
    /// The weights forward and backward read, kept between steps (under FSDP the sharded fp32
    /// parameters, which are also what the optimizer updates).
    pub weights: f64,
    /// Each gradient element as accumulated over the micro-batches and kept until the step.
    pub gradients: f64,
    /// Each gradient element as the data-parallel reduction moves it.
    pub reduced_gradients: f64,
    /// The master copy the optimizer updates, where it is not the weights themselves.
    pub master: f64,
    /// A gradient copy the optimizer steps on besides `gradients` (Megatron's fp32 main
    /// gradients under fp16).
    pub step_gradients: f64,
    /// Each optimizer moment.
    pub moment: f64,
}

/// Counted: bytes of an fp32 element.
const FP32: f64 = 4.0;

/// Physical: DeepSpeed's `stage3_prefetch_bucket_size` default, elements
/// (`deepspeed/runtime/zero/config.py`, 5e7).
pub const DEEPSPEED_PREFETCH_BUCKET: f64 = 5e7;

/// Physical: DeepSpeed's `stage3_max_live_parameters` default, elements
/// (`deepspeed/runtime/zero/config.py`, 1e9).
pub const DEEPSPEED_MAX_LIVE_PARAMETERS: f64 = 1e9;

/// Physical: DeepSpeed's `reduce_bucket_size` default, elements (`deepspeed/runtime/zero/config.py`,
/// 5e8): the gradient buffer it holds, and what one of its reduce collectives carries.
pub const DEEPSPEED_REDUCE_BUCKET: f64 = 5e8;

impl StateRecipe {
    /// Megatron-Core's recipe for `precision`. bf16: bf16 weights, fp32 `main_grad` accumulated
    /// and all-reduced in fp32 (`megatron/training/arguments.py` sets
    /// `accumulate_allreduce_grads_in_fp32` for bf16), fp32 master weights and Adam moments:
    /// 18 bytes, `6 + 12/d` under the distributed optimizer (`docs/api-guide/dist_optimizer.md`).
    /// fp8: the same with the weights kept in fp8 (`fp8_param_gather`, which the fp8 recipes of
    /// NeMo, `nemo/collections/llm/recipes/precision/mixed_precision.py`, and Megatron-Bridge,
    /// `src/megatron/bridge/training/mixed_precision.py`, set): 17 bytes. fp16: fp16 gradients,
    /// and the optimizer's fp32 copy of them beside the fp32 master weights and moments:
    /// 20 bytes, `4 + 16/d`. fp32: the weights are the master copy: 16 bytes, `8 + 8/d`.
    pub const fn megatron(precision: Precision) -> StateRecipe {
        let (weights, gradients, master, step_gradients) = match precision {
            Precision::Fp32 | Precision::Tf32 => (FP32, FP32, 0.0, 0.0),
            Precision::Fp16 => (2.0, 2.0, FP32, FP32),
            Precision::Bf16 => (2.0, FP32, FP32, 0.0),
            Precision::Fp8 => (1.0, FP32, FP32, 0.0),
        };
        StateRecipe {
            framework: Framework::MegatronCore,
            weights,
            gradients,
            reduced_gradients: gradients,
            master,
            step_gradients,
            moment: FP32,
        }
    }

    /// DeepSpeed ZeRO's defaults for `precision`: 16-bit weights and gradients, gradients reduced
    /// in the model's dtype (`communication_data_type` defaults to fp16 or bf16 as enabled,
    /// `deepspeed/runtime/engine.py`; `grad_accum_dtype` is the model dtype under ZeRO), fp32
    /// master weights and moments: the `2 + 2 + 12` bytes of the ZeRO paper (Rajbhandari et al.
    /// 2020, §3). fp32 training keeps everything in fp32, the weights being the master copy.
    pub const fn deepspeed(precision: Precision) -> StateRecipe {
        let (weights, master) = match precision {
            Precision::Fp32 | Precision::Tf32 => (FP32, 0.0),
            Precision::Bf16 | Precision::Fp16 | Precision::Fp8 => (2.0, FP32),
        };
        StateRecipe {
            framework: Framework::DeepSpeed,
            weights,
            gradients: weights,
            reduced_gradients: weights,
            master,
            step_gradients: 0.0,
            moment: FP32,
        }
    }

    /// PyTorch FSDP's mixed precision for `precision` under ZeRO stage `zero`: the sharded
    /// parameters stay fp32 and are what the optimizer updates, gathered in the training precision
    /// (`MixedPrecisionPolicy.param_dtype`); gradients reduce-scattered in fp32 (torchtitan's
    /// `mixed_precision_reduce = "float32"`, llm-foundry's `PURE`/`DEFAULT` policies) into fp32
    /// shards; fp32 moments (the parameters' dtype). Under `FULL_SHARD` (ZeRO 3) the fp32 shards
    /// are the weights: 16 bytes, all sharded, the gathered 16-bit blocks being transient
    /// ([`super::memory`]'s gathered buffers). Under `SHARD_GRAD_OP` (ZeRO 2) the gathered 16-bit
    /// parameters stay between forward and backward, so the fp32 shard is a separate master.
    /// fp16 keeps FSDP's own default `reduce_dtype = param_dtype`
    /// (`torch.distributed.fsdp.MixedPrecision`), so every 16-bit recipe reduces gradients as its
    /// Megatron-Core counterpart does.
    pub const fn fsdp(precision: Precision, zero: u8) -> StateRecipe {
        let reduced = match precision {
            Precision::Fp16 => 2.0,
            _ => FP32,
        };
        let (weights, master) = match precision {
            Precision::Fp32 | Precision::Tf32 => (FP32, 0.0),
            _ if zero >= 3 => (FP32, 0.0),
            _ => (2.0, FP32),
        };
        StateRecipe {
            framework: Framework::Fsdp,
            weights,
            gradients: FP32,
            reduced_gradients: reduced,
            master,
            step_gradients: 0.0,
            moment: FP32,
        }
    }

    /// DeepSeek-V3's FP8 recipe (arXiv:2412.19437 §3.3.3): bf16 weights for the GEMMs' inputs,
    /// fp32 master weights and gradients (accumulated and reduced), bf16 AdamW moments.
    pub const DEEPSEEK_V3_FP8: StateRecipe = StateRecipe {
        framework: Framework::MegatronCore,
        weights: 2.0,
        gradients: FP32,
        reduced_gradients: FP32,
        master: FP32,
        step_gradients: 0.0,
        moment: 2.0,
    };

    /// The recipe of `framework` for `precision` under ZeRO stage `zero`.
    pub const fn of_framework(framework: Framework, precision: Precision, zero: u8) -> StateRecipe {
        match framework {
            Framework::MegatronCore => StateRecipe::megatron(precision),
            Framework::DeepSpeed => StateRecipe::deepspeed(precision),
            Framework::Fsdp => StateRecipe::fsdp(precision, zero),
        }
    }

    /// The recipe a job of `setup` runs under ZeRO stage `zero`: its framework's (the spec's,
    /// else [`Framework::for_zero`]) for its precision, with the spec's overrides applied. The one
    /// source of state bytes: memory ([`super::model_state_bytes`]) and time (the gradient
    /// reduction) both read it.
    pub fn for_setup(setup: &TrainSetup, zero: u8) -> StateRecipe {
        let framework = Framework::of_setup(setup, zero);
        StateRecipe::of_framework(framework, setup.precision, zero).overridden(&setup.states)
    }

    /// Bytes per gradient element the data-parallel reduction of a job of `setup` moves. Every
    /// recipe loam picks reduces 16-bit training in the same format at every ZeRO stage (fp32
    /// for bf16 and fp8, fp16 for fp16), and an override applies to all stages alike, so this
    /// does not depend on the stage.
    pub fn reduced_gradient_bytes(setup: &TrainSetup) -> f64 {
        StateRecipe::for_setup(setup, 0).reduced_gradients
    }

    /// This recipe with `overrides` applied. A pinned master format where the recipe has no
    /// separate master copy (fp32 training, FSDP's fp32 shards) is the format of the weights
    /// the optimizer updates.
    pub fn overridden(mut self, overrides: &StateOverrides) -> StateRecipe {
        if let Some(g) = overrides.gradients {
            self.gradients = g.bytes();
            self.reduced_gradients = g.bytes();
        }
        if let Some(m) = overrides.master_weights {
            if self.master > 0.0 {
                self.master = m.bytes();
            } else {
                self.weights = m.bytes();
            }
        }
        if let Some(m) = overrides.moments {
            self.moment = m.bytes();
        }
        self
    }

    /// Bytes of gathered parameters and unsharded gradients a ZeRO-3 device holds beside its
    /// shards, for blocks of `block` parameters on the device, gathered in `precision`.
    ///
    /// FSDP (and Megatron-FSDP) gather one block, its wrap unit, and prefetch the next: in the
    /// backward the running block's parameters, the next block's, the running block's unsharded
    /// gradients, and the previous block's reduce-scatter input, which `foreach_reduce` allocates
    /// in the reduce format and keeps until the next block's reduce-scatter is issued
    /// (`torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py`, `_fsdp_param_group.py`; FSDP1's
    /// default `BackwardPrefetch.BACKWARD_PRE` holds the same two blocks of parameters and one of
    /// gradients, per its documentation).
    ///
    /// DeepSpeed gathers sub-modules, not blocks: the running one and a prefetch bucket of
    /// `stage3_prefetch_bucket_size` elements, at most `stage3_max_live_parameters` live; its
    /// gradients go through a contiguous bucket of `reduce_bucket_size` elements
    /// (`deepspeed/runtime/zero/config.py` defaults; `stage3.py` allocates the bucket whole).
    pub fn gathered_bytes(&self, block: f64, precision: Precision) -> f64 {
        let elt = precision.bytes();
        match self.framework {
            Framework::Fsdp | Framework::MegatronCore => {
                block * (2.0 * elt + elt + self.reduced_gradients)
            }
            Framework::DeepSpeed => {
                let live = (block + DEEPSPEED_PREFETCH_BUCKET).min(DEEPSPEED_MAX_LIVE_PARAMETERS);
                live * elt + DEEPSPEED_REDUCE_BUCKET * self.gradients
            }
        }
    }

    /// Optimizer bytes per parameter of `optimizer`: the master copy, a step gradient copy and
    /// its moments (the `K` of the ZeRO paper: 12 for Adam under DeepSpeed's recipe).
    pub fn optimizer_bytes(&self, optimizer: Optimizer) -> f64 {
        self.master + self.step_gradients + optimizer.moments() * self.moment
    }
}

#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;
