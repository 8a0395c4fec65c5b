//! The typed job: what a checked spec says, with spans kept where later phases point back.
//!
//! `None` in a parallel or planner-facing field means `auto`: the planner chooses.

use crate::workload::{ExpertDispatch, ExpertGroups, StateOverrides};
use loam_ir::span::{FileId, Span, Spanned};
use loam_ir::types::{Arch, Mlp, Optimize, Optimizer, Precision, Priority, Recompute, SplitRule};
use serde::Serialize;

/// One checked `job` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// The job name (the block label).
    pub name: Spanned<String>,
    /// The file it came from.
    #[serde(skip)]
    pub file: FileId,
    /// The tenant (team) that owns it.
    pub tenant: Spanned<String>,
    /// Scheduling priority.
    pub priority: Priority,
    /// When it is submitted to the schedule (`submit`), minutes since 1970-01-01 00:00 UTC;
    /// absent: at the schedule's start. Plans never read it (they stay clock-free).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submit: Option<Spanned<i64>>,
    /// Model dimensions.
    pub model: ModelSpec,
    /// Training run.
    pub train: TrainSpec,
    /// Parallel layout; absent fields are `auto`.
    pub parallel: ParallelSpec,
    /// Data sets, in source order.
    pub data: Vec<DataSpec>,
    /// Where it may run.
    pub resources: ResourcesSpec,
    /// What to optimise and the hard limits.
    pub goal: GoalSpec,
    /// Checkpointing.
    pub checkpoint: CheckpointSpec,
    /// The whole `job` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `model` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    /// Dense or mixture of experts.
    pub arch: Arch,
    /// MLP shape.
    pub mlp: Mlp,
    /// Transformer blocks.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// MLP inner size (per expert for MoE).
    pub ffn: u64,
    /// Attention heads.
    pub heads: u64,
    /// Key/value heads (grouped-query attention); equals `heads` when absent.
    pub kv_heads: u64,
    /// Vocabulary size.
    pub vocab: u64,
    /// Sequence length in tokens.
    pub seq_len: u64,
    /// Parameter count as stated by the user, if given.
    pub params: Option<Spanned<f64>>,
    /// Experts per MoE layer (MoE only).
    pub experts: Option<u64>,
    /// Experts each token runs (MoE only).
    pub top_k: Option<u64>,
    /// Width of one attention head, when not `hidden / heads`.
    pub head_dim: Option<u64>,
    /// Multi-head latent attention (the nested `mla { … }` block).
    pub mla: Option<MlaSpec>,
    /// Attention window of the sliding-window blocks, in tokens.
    pub sliding_window: Option<u64>,
    /// Every `global_every`th block attends globally (needs `sliding_window`).
    pub global_every: Option<u64>,
    /// Hidden size of one routed expert (MoE only); absent = `ffn`.
    pub expert_ffn: Option<u64>,
    /// Experts every token runs besides the routed ones (MoE only).
    pub shared_experts: u64,
    /// The first blocks that are dense, with an MLP of `ffn` (MoE only).
    pub dense_layers: u64,
    /// Expert capacity factor (MoE only); absent = dropless.
    pub capacity_factor: Option<f64>,
    /// Group-limited routing (MoE only): the groups the experts form and how many of them a
    /// token picks from (`expert_groups`, `groups_per_token`); absent = no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_groups: Option<ExpertGroups>,
    /// Whether input embedding and LM head share weights.
    pub tie_embeddings: bool,
    /// Extra operations to keep on high-precision devices (`sensitive = [attention]`).
    pub sensitive: Vec<Spanned<String>>,
    /// The `model` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `mla { … }` block of a model: DeepSeek multi-head latent attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MlaSpec {
    /// Query down-projection rank; 0 = a plain query projection.
    pub q_lora_rank: u64,
    /// Key/value latent rank.
    pub kv_lora_rank: u64,
    /// Per-head query/key width without rotary embedding.
    pub qk_nope_head_dim: u64,
    /// Per-head query/key width with rotary embedding.
    pub qk_rope_head_dim: u64,
    /// Per-head value width.
    pub v_head_dim: u64,
    /// The `mla` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `lora { … }` block of a train block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoraSpec {
    /// Adapter rank.
    pub rank: u64,
    /// The ops whose matrices get adapters (`attention`, `mlp`).
    pub targets: Vec<Spanned<String>>,
    /// The `lora` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `train` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSpec {
    /// Total training tokens.
    pub tokens: f64,
    /// Sequences per optimizer step.
    pub global_batch: u64,
    /// Arithmetic precision.
    pub precision: Spanned<Precision>,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// LoRA adapters over a frozen base, if any.
    pub lora: Option<LoraSpec>,
    /// Parts whose weights are frozen (`freeze = [embedding, attention]`).
    pub freeze: Vec<Spanned<String>>,
    /// State formats pinned over the framework's recipe (`gradients`, `master_weights`,
    /// `moments`).
    pub states: StateOverrides,
    /// How the stack sends an MoE model's tokens to their experts (`expert_dispatch`); `None` =
    /// the pool's default (`stack.expert_dispatch`), else the all-to-all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_dispatch: Option<ExpertDispatch>,
    /// The `train` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `parallel` block; `None` = `auto`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ParallelSpec {
    /// Tensor-parallel degree.
    pub tensor: Option<Spanned<u64>>,
    /// Pipeline-parallel degree.
    pub pipeline: Option<Spanned<u64>>,
    /// Data-parallel degree.
    pub data: Option<Spanned<u64>>,
    /// Context-parallel degree.
    pub context: Option<Spanned<u64>>,
    /// Expert-parallel degree.
    pub expert: Option<Spanned<u64>>,
    /// Virtual pipeline stages per device (interleaved schedule).
    pub virtual_stages: Option<Spanned<u64>>,
    /// How the chunks divide the blocks (`balanced`, `embedding_and_loss`); `None` = auto.
    pub pipeline_split: Option<Spanned<SplitRule>>,
    /// Blocks of every model chunk in model order, pinned.
    pub stages: Option<Spanned<Vec<u64>>>,
    /// Sequences per micro-batch.
    pub micro_batch: Option<Spanned<u64>>,
    /// ZeRO stage 0–3.
    pub zero: Option<Spanned<u64>>,
    /// Activation recomputation.
    pub recompute: Option<Spanned<Recompute>>,
    /// Blocks of each model chunk recomputed whole (partial full recomputation).
    pub recompute_layers: Option<Spanned<u64>>,
    /// Megatron sequence parallelism alongside tensor parallelism.
    pub sequence_parallel: Option<Spanned<bool>>,
    /// Tensor-parallel collectives overlapped with the GEMMs (the stack runs it).
    pub tensor_overlap: Option<Spanned<bool>>,
    /// The `parallel` block, if written.
    #[serde(skip)]
    pub span: Option<Span>,
}

/// A `data "name"` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSpec {
    /// The data set's name (the block label).
    pub name: Spanned<String>,
    /// The site that holds it.
    pub site: Spanned<String>,
    /// Its size in bytes.
    pub size: Spanned<f64>,
    /// The `data` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `resources` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourcesSpec {
    /// The pool to run in.
    pub pool: Spanned<String>,
    /// Allowed device types; empty = any in the pool.
    pub devices: Vec<Spanned<String>>,
    /// Allowed sites; empty = any in the pool.
    pub sites: Vec<Spanned<String>>,
    /// Upper bound on devices.
    pub max_devices: Option<Spanned<u64>>,
    /// Whether the job tolerates preemption (and may run in cheap hours).
    pub interruptible: bool,
    /// Device features the job needs (`flash_attention`, `fp8` …).
    pub features: Vec<Spanned<String>>,
    /// Software requirements such as `"CUDA>=12.0"`.
    pub software: Vec<Spanned<String>>,
    /// Largest acceptable one-way latency between the job's devices, in seconds.
    pub max_latency: Option<Spanned<f64>>,
    /// The `resources` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `goal` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalSpec {
    /// What to minimise.
    pub optimize: Optimize,
    /// Latest acceptable training time, in seconds.
    pub deadline: Option<Spanned<f64>>,
    /// Most money the run may cost: amount and currency.
    pub budget: Option<Spanned<(f64, String)>>,
    /// The `goal` block, if written.
    #[serde(skip)]
    pub span: Option<Span>,
}

/// The `checkpoint` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckpointSpec {
    /// Where checkpoints go; absent = `<tenant root>/<job name>` ([`loam_ir::checkpoint`]).
    pub path: Option<Spanned<String>>,
    /// Time between checkpoints in seconds; absent = planned (Young/Daly).
    pub interval: Option<Spanned<f64>>,
    /// The `checkpoint` block, if written.
    #[serde(skip)]
    pub span: Option<Span>,
}
