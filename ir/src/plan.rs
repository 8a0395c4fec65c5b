//! The Plan IR: what the planner decides, serialised as the Plan JSON of docs/plan-format.md.
//!
//! Backends read only this. Fields marked *contract* there are a contract (Terraform's rule: a minor
//! `format_version` bump adds fields, a major one changes or removes them); the extra fields here
//! (tenant, node-group labels, checkpoint path …) are what backends need to write manifests
//! without seeing the spec or the catalogue.

use crate::types::{ExpertDispatch, Hetero, Optimize, Precision, Priority, Recompute, SplitRule};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of the Plan JSON format.
pub const FORMAT_VERSION: &str = "1.18";

pub mod json;
mod nodes;
mod run;
mod service;
pub use nodes::NodeShape;
pub use run::{GoodputIr, NodeIr, RdmaIr, TolerationIr};
pub use service::{
    AutoscalingIr, CapacityPointIr, ParetoPointIr, RoleIr, ServedModelIr, ServiceEstimateIr,
    ServicePlan, TrafficIr,
};

/// `loam plan --format json`: the plans of every job in the given paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanDocument {
    /// [`FORMAT_VERSION`].
    pub format_version: String,
    /// `sha256:…` content hash of the catalogue the plans were made against.
    pub catalogue_digest: String,
    /// One plan per job, in file then source order.
    pub plans: Vec<Plan>,
    /// One plan per model service (kind `service`), in file then source order. Added in format
    /// 1.8; absent when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServicePlan>,
}

/// The plan of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The job name.
    pub job: String,
    /// The spec file it came from, as given on the command line.
    pub file: String,
    /// Whether a plan meeting every constraint exists.
    pub feasible: bool,
    /// Why not, when infeasible: one sentence per reason, with numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The owning tenant.
    pub tenant: String,
    /// Scheduling priority (`low` … `critical`).
    pub priority: Priority,
    /// Whether the job tolerates preemption.
    pub interruptible: bool,
    /// The pool planned in.
    pub pool: String,
    /// What the job trains, as the trainer needs it.
    pub workload: WorkloadIr,
    /// How a plan over two device groups divides the work: `pipeline` (each group runs some
    /// stages of every replica) or `data` (each group runs whole replicas on its share of the
    /// batch). Absent for plans on one group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hetero: Option<Hetero>,
    /// The parallel layout (absent when infeasible). In a `data` plan it is the first group's,
    /// with `data` counting the replicas of both groups; each group's own is `groups[].layout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutIr>,
    /// Device groups: which devices, where.
    #[serde(default)]
    pub groups: Vec<GroupIr>,
    /// Pipeline stages: which layers and operations each group runs.
    #[serde(default)]
    pub stages: Vec<StageIr>,
    /// Predicted performance and cost (absent when infeasible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<EstimateIr>,
    /// How the data reaches the compute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataIr>,
    /// When and where checkpoints are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointIr>,
    /// For an interruptible job, the daily window of cheap power hours it may run in instead of
    /// around the clock, and what that saves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleIr>,
    /// The goal the plan was chosen for, and its limits (format 1.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalIr>,
    /// The best plans of other shapes, and why each lost.
    #[serde(default)]
    pub alternatives: Vec<AlternativeIr>,
    /// Why this plan won: the objective, the constraints and how close it comes to them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// Things a person should know that do not block the plan (e.g. devices not free now).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the planner found that the user should read as a diagnostic (an infeasible plan's
    /// error, devices not free now, devices above the guaranteed quota), with its code and the
    /// spec field it comes from. Added in format 1.3.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<crate::findings::PlanDiagnosticIr>,
}

impl Plan {
    /// Hours from the job's start until it is trained, as every output shows it: for an
    /// interruptible job the daily window's wall time (after the data transfer), else the
    /// estimate's train time. `None` without an estimate.
    pub fn wall_time_h(&self) -> Option<f64> {
        let estimate = self.estimate.as_ref()?;
        Some(match &self.schedule {
            Some(window) => window.train_time_h + self.data.as_ref().map_or(0.0, |d| d.transfer_h),
            None => estimate.train_time_h,
        })
    }

    /// Device-hours the job holds devices for: every device of its groups for the estimate's
    /// train time (an interruptible job gives its devices back outside its window). `None`
    /// without an estimate.
    pub fn device_hours(&self) -> Option<f64> {
        let estimate = self.estimate.as_ref()?;
        let devices: u64 = self.groups.iter().map(|g| g.devices).sum();
        Some(devices as f64 * estimate.train_time_h)
    }
}

/// The model and training run, as the trainer's arguments need them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkloadIr {
    /// Parameter count (all experts).
    pub params: f64,
    /// Transformer blocks.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Sequence length.
    pub seq_len: u64,
    /// Sequences per optimizer step.
    pub global_batch: u64,
    /// Training tokens.
    pub tokens: f64,
    /// Arithmetic precision keyword (`fp32`, `tf32`, `bf16`, `fp16`, `fp8`).
    pub precision: Precision,
    /// How the trainer sends a mixture of experts' tokens to their experts, as the plan's time
    /// assumes: `deduplicated` (one copy per destination node, DeepEP or HybridEP) when the spec
    /// asks for it (`train { expert_dispatch = deduplicated }`), absent for the all-to-all. Added
    /// in format 1.17.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_dispatch: Option<ExpertDispatch>,
}

/// The parallel layout (contract field `layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LayoutIr {
    /// Tensor-parallel degree.
    pub tensor: u64,
    /// Pipeline-parallel degree.
    pub pipeline: u64,
    /// Data-parallel degree.
    pub data: u64,
    /// Context-parallel degree.
    pub context: u64,
    /// Expert-parallel degree.
    pub expert: u64,
    /// Model chunks per device (interleaved schedule).
    pub virtual_stages: u64,
    /// How the pipeline's chunks divide the blocks (`balanced`, `embedding_and_loss`,
    /// `pinned`); absent without pipelining. Added in format 1.4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_split: Option<SplitRule>,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// ZeRO stage.
    pub zero: u8,
    /// Recomputation keyword (`none`, `selective`, `full`).
    pub recompute: Recompute,
    /// Under `full` recomputation, the blocks of each model chunk replayed whole, the first ones
    /// (Megatron-LM's `--recompute-method block --recompute-num-layers`); absent: every block.
    /// Added in format 1.11.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_layers: Option<u64>,
    /// Megatron sequence parallelism (norms and dropout split over the tensor group), which the
    /// plan's memory and time assume: it runs where this is true and the tensor degree is above
    /// 1 ([`sequence_parallel_runs`]; in a `pipeline` plan each group by its own
    /// `groups[].tensor`). Added in format 1.10; absent in older plans, whose planner ran it
    /// wherever the tensor degree was above 1, which is how an absent value reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_parallel: Option<bool>,
    /// Whether the tensor-parallel collectives overlap the GEMMs they feed and drain, as the
    /// plan's time assumes ([`tensor_overlap_runs`]): Megatron-Core's `--tp-comm-overlap`
    /// (Transformer Engine's userbuffers) or torchtitan's async tensor parallelism. Only
    /// written when true (a spec asks for it with `parallel { tensor_overlap = true }`); added
    /// in format 1.16.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tensor_overlap: bool,
    /// Whether the expert all-to-alls of one micro-batch run beside another micro-batch's
    /// compute, as the plan's time assumes: Megatron-Core's `--overlap-moe-expert-parallel-comm`
    /// on an interleaved pipeline (docs/cost-model.md, "Mixture of experts"). Only written when
    /// true; added in format 1.18.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expert_overlap: bool,
}

impl LayoutIr {
    /// Whether a group of tensor degree `tensor` runs sequence parallelism under this layout.
    pub fn sequence_parallel_at(&self, tensor: u64) -> bool {
        sequence_parallel_runs(self.sequence_parallel, tensor)
    }
}

/// The one rule of sequence parallelism, for a spec's pin and a plan's setting alike (`None`:
/// not stated): never without tensor parallelism, since it splits the tensor group's norms and
/// dropout (Megatron-LM switches it off at tensor degree 1, NVIDIA/Megatron-LM
/// `megatron/training/arguments.py`), and on unless switched off, since with tensor
/// parallelism it saves activation memory and time (Korthikanti et al. 2022, "Reducing
/// Activation Recomputation in Large Transformer Models").
pub fn sequence_parallel_runs(setting: Option<bool>, tensor: u64) -> bool {
    tensor > 1 && setting.unwrap_or(true)
}

/// The one rule of tensor-parallel overlap (`None`: not stated): only where a spec asks for it,
/// since the stack must be set up for it, and only over sequence parallelism, the all-gathers
/// and reduce-scatters it splits into chunks to run beside the GEMMs (Megatron-Core refuses
/// `--tp-comm-overlap` without `--sequence-parallel`, NVIDIA/Megatron-LM
/// `megatron/training/arguments.py`; torchtitan's async tensor parallelism has the compiler
/// fuse the sequence-parallel plan's all-gather + matmul and matmul + reduce-scatter pairs,
/// inductor's `_micro_pipeline_tp`, pytorch/torchtitan `torchtitan/distributed/compile.py`).
pub fn tensor_overlap_runs(setting: Option<bool>, sequence_parallel: bool) -> bool {
    sequence_parallel && setting == Some(true)
}

/// One group of identical devices at one site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupIr {
    /// Site name.
    pub site: String,
    /// Device id.
    pub device: String,
    /// Nodes used.
    pub nodes: u64,
    /// Devices used.
    pub devices: u64,
    /// The catalogue node group the devices come from.
    pub node_group: String,
    /// Devices used per node.
    pub devices_per_node: u64,
    /// Kubernetes extended-resource name (`nvidia.com/gpu` …).
    pub k8s_resource: String,
    /// Kubernetes node labels that select the node group.
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    /// Slurm partition of the node group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_partition: Option<String>,
    /// Switch block (topology domain) the nodes are placed in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// Devices above the tenant's guaranteed quota, which may be preempted.
    #[serde(default)]
    pub preemptible_devices: u64,
    /// A slice profile (MIG / vNPU) instead of whole devices, for small jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
    /// How the group's nodes sit in the site's switch blocks, in words (ranks are ordered
    /// tensor, pipeline, data, so a model replica stays inside one block when it fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// Tensor-parallel degree on this group, in heterogeneous plans (each group has its own;
    /// `layout.tensor` is the first group's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<u64>,
    /// The group's own layout, in heterogeneous data-parallel plans (`hetero: data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutIr>,
    /// Sequences of each optimizer step the group trains on, in heterogeneous data-parallel
    /// plans (the groups' shares add up to `workload.global_batch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences_per_step: Option<u64>,
    /// The pipeline stages of one of the group's replicas, in heterogeneous data-parallel plans
    /// (they cover every block once; `stages` repeats the first group's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageIr>,
    /// The relative uncertainty of the throughput predicted on this group's devices because of
    /// their efficiency figures (0.3 = ±30 %, 0 when measured), in heterogeneous plans (a plan
    /// on one group states it once, as `estimate.throughput_uncertainty`). Added in format 1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_uncertainty: Option<f64>,
    /// The model FLOP utilisation of this group's devices, in plans over two groups (the
    /// estimate's `mfu` blends both device types). Added in format 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    /// Model TFLOP/s per device of this group, in plans over two groups. Added in format 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_tflops_per_device: Option<f64>,
    /// GiB on this group's fullest device, in plans over two groups (the estimate's
    /// `memory_per_device_gib` is the larger of the two). Added in format 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_per_device_gib: Option<f64>,
    /// `memory_per_device_gib` by what it holds, in plans over two groups. Format 1.9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<MemoryIr>,
    /// How the group's nodes run the job: pod requests, fabric, collective library, taints,
    /// scheduler limits. Added in format 1.6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeIr>,
}

/// One pipeline stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageIr {
    /// Stage number, from 0.
    pub index: u64,
    /// Index into `groups`.
    pub group: u64,
    /// Half-open range `[first, end)` of transformer blocks.
    pub layers: [u64; 2],
    /// The pipeline rank that runs this chunk, in interleaved plans (`virtual_stages > 1`: the
    /// stages are the model chunks in model order, chunk `c` on rank `c mod pipeline`). Added in
    /// format 1.4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// Operations, e.g. `["embedding", "block×12"]`.
    pub ops: Vec<String>,
    /// Of `ops`, those that are precision-sensitive, with the precision they run in
    /// (`lm_head@bf16`): the group's devices run them at that precision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_ops: Vec<String>,
    /// The stage's own recomputation, in heterogeneous plans (each stage takes the least that
    /// fits its devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute: Option<Recompute>,
    /// Seconds the stage spends on one micro-batch, forward and backward, its tensor-parallel
    /// collectives and the send to the next stage included. Format 1.9 in heterogeneous plans,
    /// 1.13 in every plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_batch_s: Option<f64>,
    /// Of `micro_batch_s`, the tensor-parallel collectives. Format 1.9 in heterogeneous plans,
    /// 1.13 in every plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_comm_s: Option<f64>,
    /// Of `micro_batch_s`, the forward pass: its compute, its collectives and the send of its
    /// activations (the rest is the backward, with any recomputation). Format 1.13.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_s: Option<f64>,
}

/// Predicted performance, cost and footprint (contract field `estimate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EstimateIr {
    /// Seconds per optimizer step.
    pub step_time_s: f64,
    /// Training tokens per second, whole job.
    pub tokens_per_s: f64,
    /// Model FLOP/s per device in TFLOP/s (6N + attention, no recomputation).
    pub model_tflops_per_device: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Which FLOP convention `model_tflops_per_device` and `mfu` use.
    pub flops_convention: String,
    /// Peak memory per device in GiB.
    pub memory_per_device_gib: f64,
    /// That memory by what it holds, in GiB (added in format 1.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<MemoryIr>,
    /// Hours to train on all tokens.
    pub train_time_h: f64,
    /// Money for the whole run.
    pub cost: MoneyIr,
    /// Energy for the whole run.
    pub energy_kwh: f64,
    /// CO2 for the whole run.
    pub carbon_kg: f64,
    /// Where a step's time goes.
    pub breakdown_s: BreakdownIr,
    /// The relative uncertainty of `step_time_s` and `tokens_per_s` (and so of the time, cost,
    /// energy and carbon worked out from them) that comes from the device figures: the largest
    /// `efficiency.uncertainty` of the device types the plan runs on (0.3 = ±30 %, 0 when every
    /// one is measured). Absent in plans written before format 1.5, which did not state it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_uncertainty: Option<f64>,
    /// What failures cost: expected interruptions, restarts, lost work and checkpoint stalls,
    /// which `train_time_h`, `cost`, `energy_kwh` and `carbon_kg` include. Added in format 1.6
    /// (before it those four were failure-free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputIr>,
}

/// The memory of the device that needs the most, by what it holds, in GiB; the parts add up to
/// `memory_per_device_gib` (each rounded on its own).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryIr {
    /// Parameters in the training precision (the ZeRO-3 shard).
    pub weights: f64,
    /// Gradients.
    pub gradients: f64,
    /// Optimizer state (fp32 master copy and moments).
    pub optimizer: f64,
    /// Activations of the running micro-batch.
    pub activations: f64,
    /// Activations of the other micro-batches in flight on the pipeline rank.
    pub pipeline_stash: f64,
    /// ZeRO-3 gathered blocks, or the data-parallel gradient bucket.
    pub comm_buffers: f64,
    /// fp32 logits on the last pipeline rank.
    pub logits: f64,
    /// The pipeline rank (from 0) these figures are of: the one needing the most memory under
    /// the pipeline schedule. Absent without a pipeline and in plans over two groups. Added in
    /// format 1.10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
}

/// An amount of money.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MoneyIr {
    /// The amount.
    pub amount: f64,
    /// ISO 4217 code.
    pub currency: String,
}

/// Step time by cause, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreakdownIr {
    /// Computation.
    pub compute: f64,
    /// Exposed tensor-parallel communication.
    pub tensor_comm: f64,
    /// Pipeline fill and drain.
    pub pipeline_bubble: f64,
    /// Exposed data-parallel (and ZeRO) communication.
    pub data_comm: f64,
    /// Optimizer step and everything else.
    pub other: f64,
}

/// How the training data reaches the compute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataIr {
    /// `move-compute`, `move-data`, `cached` or `split`.
    pub strategy: String,
    /// Gigabytes sent over the WAN before training.
    pub transfer_gb: f64,
    /// Hours the transfer takes.
    pub transfer_h: f64,
    /// The best plan of each way to bring data and compute together (`move-compute`: run where
    /// the data is; `move-data`: copy it over the WAN; `cached`: use a copy already there;
    /// `split`: a pipeline over two sites), the chosen one marked. Empty when the job names no
    /// data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<DataOptionIr>,
    /// Where each data set of the spec is (format 1.9).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<DataSourceIr>,
}

/// A data set the job reads, and where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataSourceIr {
    /// The spec's name for it.
    pub name: String,
    /// The site that holds it.
    pub site: String,
    /// Its size in gigabytes.
    pub size_gb: f64,
}

/// The best plan of one data strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataOptionIr {
    /// `move-compute`, `move-data`, `cached` or `split`.
    pub strategy: String,
    /// Where the compute runs (two sites for `split`, joined by `+`).
    pub site: String,
    /// Gigabytes sent over the WAN before training.
    pub transfer_gb: f64,
    /// Hours the transfer takes.
    pub transfer_h: f64,
    /// Egress money for the transfer (and, for `split`, the activations crossing the WAN).
    pub egress: f64,
    /// Hours until trained, transfer included.
    pub time_h: f64,
    /// Money for the whole run, egress included.
    pub cost: f64,
    /// The objective (lower is better), as `alternatives[].objective`.
    pub objective: f64,
    /// Whether the plan uses this strategy.
    pub chosen: bool,
    /// kg CO2 for the whole run (format 1.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carbon_kg: Option<f64>,
}

/// The cheapest daily run window of an interruptible job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScheduleIr {
    /// Local hour (0–23) at the site the window opens.
    pub start_hour: u64,
    /// Hours the job runs each day.
    pub hours_per_day: u64,
    /// Mean power price in the window, per kWh.
    pub power_price_per_kwh: f64,
    /// Money saved on energy against running around the clock.
    pub saving: f64,
    /// Hours until trained when run only in the window.
    pub train_time_h: f64,
    /// The IANA time zone of `start_hour` (the site's), when the catalogue declares it; else the
    /// hours are the site's local time, whatever zone its clocks keep. Added in format 1.6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// When and where checkpoints are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointIr {
    /// Minutes between checkpoints.
    pub interval_min: f64,
    /// Seconds to write one checkpoint.
    pub write_s: f64,
    /// Where (below the tenant's checkpoint root).
    pub path: String,
}

/// What the job asked the planner to minimise, and within which limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalIr {
    /// `time`, `cost`, `balanced` or `carbon`.
    pub optimize: Optimize,
    /// The deadline in hours, when the spec sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_h: Option<f64>,
    /// The budget in the estimate's currency, when the spec sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
}

/// A plan of another shape that lost, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlternativeIr {
    /// What kind of plan it is: `single-type` (one node group), `heterogeneous` (a pipeline
    /// over two groups), `other-site` (one node group at a site the chosen plan does not use).
    #[serde(default)]
    pub shape: String,
    /// Why it lost, as a keyword: `slower`, `costlier`, `worse-balance`, `more-carbon`,
    /// `misses-deadline`, `over-budget`.
    #[serde(default)]
    pub lost_on: String,
    /// One line: layout and placement.
    pub summary: String,
    /// Its objective value (lower is better; same unit as the chosen plan's).
    pub objective: f64,
    /// Why it was not chosen, with numbers.
    pub why_not: String,
    /// Hours until trained (data transfer first), as the chosen plan's `train_time_h`
    /// (format 1.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_h: Option<f64>,
    /// What it would cost, in the plan's currency (format 1.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// kg CO2 it would emit (format 1.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carbon_kg: Option<f64>,
    /// The node groups it would hold and how many devices of each, in the order of its groups
    /// (two for the `heterogeneous` and `heterogeneous-data` shapes), so the schedule can start
    /// the job there when its chosen node groups are busy (format 1.12; absent in older plans).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<AlternativePlacementIr>,
}

/// One node group of an alternative, and the devices it would take there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlternativePlacementIr {
    /// Site name.
    pub site: String,
    /// The catalogue node group.
    pub node_group: String,
    /// Device id.
    pub device: String,
    /// Devices it would use.
    pub devices: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_written_and_read_as_in_specs() {
        let layout: LayoutIr = serde_json::from_str(
            r#"{"tensor": 8, "pipeline": 1, "data": 2, "context": 1, "expert": 1,
                "virtual_stages": 1, "micro_batch": 2, "zero": 1, "recompute": "selective"}"#,
        )
        .unwrap();
        assert_eq!(layout.recompute, Recompute::Selective);
        let json = serde_json::to_value(layout).unwrap();
        assert_eq!(json["recompute"], "selective");
        assert_eq!(
            serde_json::to_value(Priority::Critical).unwrap(),
            "critical"
        );
        assert_eq!(serde_json::to_value(Precision::Bf16).unwrap(), "bf16");
    }

    #[test]
    fn a_plan_written_before_the_uncertainty_was_stated_still_reads() {
        // A format 1.4 estimate: no `throughput_uncertainty`. It reads as "not stated", not as
        // "measured", and is written back without the field.
        let old = r#"{"step_time_s": 2.0, "tokens_per_s": 1000.0, "model_tflops_per_device": 400.0,
            "mfu": 0.4, "flops_convention": "model", "memory_per_device_gib": 60.0,
            "train_time_h": 10.0, "cost": {"amount": 1000.0, "currency": "CNY"},
            "energy_kwh": 100.0, "carbon_kg": 50.0,
            "breakdown_s": {"compute": 1.5, "tensor_comm": 0.1, "pipeline_bubble": 0.2,
                            "data_comm": 0.1, "other": 0.1}}"#;
        let estimate: EstimateIr = serde_json::from_str(old).unwrap();
        assert_eq!(estimate.throughput_uncertainty, None);
        let json = serde_json::to_value(&estimate).unwrap();
        assert!(json.get("throughput_uncertainty").is_none(), "{json}");
        let group: GroupIr = serde_json::from_str(
            r#"{"site": "s", "device": "H20", "nodes": 1, "devices": 8, "node_group": "g",
                "devices_per_node": 8, "k8s_resource": "nvidia.com/gpu"}"#,
        )
        .unwrap();
        assert_eq!(group.throughput_uncertainty, None);
    }

    #[test]
    fn tensor_overlap_runs_only_where_asked_for_and_over_sequence_parallelism() {
        assert!(tensor_overlap_runs(Some(true), true));
        assert!(!tensor_overlap_runs(Some(true), false));
        assert!(!tensor_overlap_runs(None, true));
        assert!(!tensor_overlap_runs(Some(false), true));
        // Written only when it runs: a plan without it has no such field, and reads back off.
        let off: LayoutIr = serde_json::from_str(
            r#"{"tensor": 8, "pipeline": 1, "data": 1, "context": 1, "expert": 1,
                "virtual_stages": 1, "micro_batch": 1, "zero": 1, "recompute": "none"}"#,
        )
        .unwrap();
        assert!(!off.tensor_overlap);
        assert!(
            serde_json::to_value(off)
                .unwrap()
                .get("tensor_overlap")
                .is_none()
        );
        let on = LayoutIr {
            tensor_overlap: true,
            ..off
        };
        assert_eq!(serde_json::to_value(on).unwrap()["tensor_overlap"], true);
    }

    #[test]
    fn a_layout_without_sequence_parallelism_reads_as_the_planner_then_ran_it() {
        // A format 1.9 layout has no `sequence_parallel`; its planner ran it wherever the tensor
        // degree was above 1, so TP8 runs it and TP1 cannot (nothing to split the norms over).
        let old: LayoutIr = serde_json::from_str(
            r#"{"tensor": 8, "pipeline": 1, "data": 2, "context": 1, "expert": 1,
                "virtual_stages": 1, "micro_batch": 2, "zero": 1, "recompute": "selective"}"#,
        )
        .unwrap();
        assert_eq!(old.sequence_parallel, None);
        assert!(old.sequence_parallel_at(8));
        assert!(!old.sequence_parallel_at(1));
        let json = serde_json::to_value(old).unwrap();
        assert!(json.get("sequence_parallel").is_none(), "{json}");
        // Switched off, it stays off at every degree, and it is written.
        let off = LayoutIr {
            sequence_parallel: Some(false),
            ..old
        };
        assert!(!off.sequence_parallel_at(8));
        assert_eq!(
            serde_json::to_value(off).unwrap()["sequence_parallel"],
            false
        );
        // Switched on, still never at tensor degree 1.
        let on = LayoutIr {
            sequence_parallel: Some(true),
            ..old
        };
        assert!(on.sequence_parallel_at(2));
        assert!(!on.sequence_parallel_at(1));
    }

    #[test]
    fn a_word_that_is_no_keyword_is_refused() {
        let err = serde_json::from_str::<Precision>(r#""bf16'; touch /tmp/x; '""#).unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{err}");
        assert!(serde_json::from_str::<Priority>(r#""urgent""#).is_err());
    }
}
