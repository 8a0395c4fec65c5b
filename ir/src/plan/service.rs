//! The plan of a model service (`services[]` of the Plan JSON, kind `service`, added in format
//! 1.8): which devices serve it, how each replica is laid out, how many replicas at each hour,
//! the engine's settings, the predicted latency and cost, and the Pareto front it was chosen
//! from. Backends render Deployments, LeaderWorkerSets, Slurm and bare-metal launchers from it.

use super::{GroupIr, MoneyIr};
use crate::types::{Engine, KvCache, Percentile, Priority, ServePrecision, ServiceMode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The plan of one `service` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServicePlan {
    /// Always `service`: what kind of plan this is (jobs' plans are in `plans[]`).
    pub kind: String,
    /// The service name.
    pub service: String,
    /// The spec file it came from, as given on the command line.
    pub file: String,
    /// Whether a deployment meeting the targets and the budget exists.
    pub feasible: bool,
    /// Why not, when infeasible: one sentence per reason, with numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The owning tenant.
    pub tenant: String,
    /// Scheduling priority.
    pub priority: Priority,
    /// The pool planned in.
    pub pool: String,
    /// What is served.
    pub model: ServedModelIr,
    /// The requests and the targets, as planned for.
    pub traffic: TrafficIr,
    /// The engine the manifests start.
    pub engine: Engine,
    /// `aggregated` (every replica prefills and decodes) or `disaggregated` (prefill replicas
    /// hand the KV cache to decode replicas). Absent when infeasible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ServiceMode>,
    /// The replica roles: one (`serve`) when aggregated, two (`prefill`, `decode`) when
    /// disaggregated.
    #[serde(default)]
    pub roles: Vec<RoleIr>,
    /// Predicted latency, throughput and cost at the busiest hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<ServiceEstimateIr>,
    /// How many replicas each hour needs, for the autoscaler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingIr>,
    /// The deployments that meet the targets and are best in throughput per device or latency
    /// (none better in both), fastest first; one of them is chosen.
    #[serde(default)]
    pub pareto: Vec<ParetoPointIr>,
    /// Why this deployment won: the objective, the targets and how close it comes to them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// Things a person should know that do not block the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The model as the engine loads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServedModelIr {
    /// Where the engine loads the weights from: a Hugging Face repository id or an absolute
    /// path on the nodes.
    pub weights: String,
    /// Every stored parameter.
    pub params: f64,
    /// Parameters one token runs through.
    pub active_params: f64,
    /// Transformer blocks.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Key/value heads.
    pub kv_heads: u64,
    /// Routed experts (absent for dense models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experts: Option<u64>,
    /// Weight precision.
    pub precision: ServePrecision,
    /// KV-cache precision.
    pub kv_cache: KvCache,
    /// Longest context a request may use (the engine's `max_model_len`).
    pub max_model_len: u64,
    /// Bytes of KV cache one token holds over all layers.
    pub kv_bytes_per_token: f64,
}

/// The traffic and the targets the plan was sized for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrafficIr {
    /// Prompt tokens: mean and 99th percentile.
    pub input_mean: f64,
    /// Prompt tokens at the 99th percentile.
    pub input_p99: f64,
    /// Generated tokens: mean.
    pub output_mean: f64,
    /// Generated tokens at the 99th percentile.
    pub output_p99: f64,
    /// Requests per second at the busiest hour (for a `concurrency` load, what that concurrency
    /// sustains on the chosen deployment).
    pub peak_rate: f64,
    /// Requests in flight at once, when the spec gives the load as a concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u64>,
    /// Each hour's load as a share of the busiest (24 values, local time); absent = flat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile: Vec<f64>,
    /// The percentile the targets hold at.
    pub percentile: Percentile,
    /// Time-to-first-token target in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<f64>,
    /// Time-per-output-token target in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_s: Option<f64>,
    /// End-to-end latency target in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_s: Option<f64>,
}

/// One kind of replica and the devices it runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoleIr {
    /// `serve` (aggregated), `prefill` or `decode`.
    pub role: String,
    /// Replicas at the busiest hour.
    pub replicas: u64,
    /// Tensor-parallel degree of one replica.
    pub tensor: u64,
    /// Pipeline-parallel degree of one replica.
    pub pipeline: u64,
    /// Expert-parallel degree of one replica (1 for dense models).
    pub expert: u64,
    /// Devices of one replica.
    pub devices_per_replica: u64,
    /// Nodes one replica spans (more than one: a LeaderWorkerSet on Kubernetes).
    pub nodes_per_replica: u64,
    /// Most sequences a replica batches at once (`--max-num-seqs`).
    pub max_batch: u64,
    /// Most tokens a replica puts in one step (`--max-num-batched-tokens`).
    pub max_batched_tokens: u64,
    /// Share of device memory the engine may take (`--gpu-memory-utilization`).
    pub memory_fraction: f64,
    /// Tokens of KV cache one replica holds.
    pub kv_cache_tokens: f64,
    /// GiB of weights on each device.
    pub weights_per_device_gib: f64,
    /// Devices each node of the group has (the catalogue's `devices_per_node`), when a replica's
    /// pod may take only part of a node: each pod then requests its share of the node's cpus,
    /// memory and shared memory (`group.node`). Absent: a pod takes a whole node's. Added for the
    /// service manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_devices: Option<u64>,
    /// The devices of all replicas at the busiest hour, where they are and how their nodes run:
    /// `groups[0]` here is what backends schedule (node labels, resource, taints, pod requests).
    pub group: GroupIr,
}

/// Predicted behaviour at the busiest hour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceEstimateIr {
    /// Median time to first token, seconds.
    pub ttft_p50_s: f64,
    /// Time to first token at the target percentile, seconds.
    pub ttft_s: f64,
    /// Median time per output token, seconds.
    pub tpot_p50_s: f64,
    /// Time per output token at the target percentile, seconds.
    pub tpot_s: f64,
    /// End-to-end latency at the target percentile, seconds.
    pub e2e_s: f64,
    /// Output tokens per second of the whole service at the busiest hour.
    pub output_tokens_per_s: f64,
    /// Output tokens per second per device at the busiest hour.
    pub output_tokens_per_s_per_device: f64,
    /// Requests per second one replica (or one prefill-and-decode set) sustains within the
    /// targets.
    pub capacity_per_replica: f64,
    /// Mean sequences in a decode batch at the busiest hour.
    pub batch: f64,
    /// Seconds to move one mean prompt's KV cache from prefill to decode (disaggregated only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_transfer_s: Option<f64>,
    /// Devices at the busiest hour.
    pub devices: u64,
    /// Device-hours per day, following the hourly profile.
    pub device_hours_per_day: f64,
    /// Cost of one hour at the busiest hour.
    pub cost_per_hour: MoneyIr,
    /// Cost per month (30 days) following the hourly profile.
    pub cost_per_month: MoneyIr,
    /// Cost per million output tokens at the busiest hour.
    pub cost_per_million_tokens: MoneyIr,
    /// Energy per month in kWh (device power and the site's PUE).
    pub energy_kwh_per_month: f64,
    /// CO2 per month in kg.
    pub carbon_kg_per_month: f64,
    /// Relative uncertainty of the predicted throughput from the device figures (0.3 = ±30 %).
    pub throughput_uncertainty: f64,
    /// The heaviest load the plan says meets the targets: one replica at `capacity_per_replica`
    /// (aggregated, 1.14), or the whole deployment at the largest request rate it carries
    /// (disaggregated, 1.15); what a benchmark heavier than the busiest hour is compared
    /// with (`loam runs check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_capacity: Option<CapacityPointIr>,
}

/// A service at its capacity within the targets: one replica (aggregated) or the deployment
/// (disaggregated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CapacityPointIr {
    /// Median time to first token, seconds.
    pub ttft_p50_s: f64,
    /// Median time per output token, seconds.
    pub tpot_p50_s: f64,
    /// Output tokens per second per device of the replica or the deployment.
    pub output_tokens_per_s_per_device: f64,
}

/// How many replicas each hour needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutoscalingIr {
    /// Fewest replicas (of each role, in order of `roles`) at the quietest hour.
    pub min_replicas: Vec<u64>,
    /// Replicas at the busiest hour.
    pub max_replicas: Vec<u64>,
    /// Replicas of each role for each hour 0–23.
    pub hourly: Vec<Vec<u64>>,
    /// Requests in flight per replica the autoscaler keeps (the target of its metric): the
    /// concurrency at which one replica still meets the targets.
    pub target_concurrency_per_replica: f64,
}

/// One deployment on the Pareto front.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParetoPointIr {
    /// The deployment in words, e.g. `H20 tp4 ×6` or `prefill H100_SXM tp2 ×2 + decode H20 tp4 ×5`.
    pub deployment: String,
    /// `aggregated` or `disaggregated`.
    pub mode: ServiceMode,
    /// Devices at the busiest hour.
    pub devices: u64,
    /// Output tokens per second per device at the busiest hour.
    pub output_tokens_per_s_per_device: f64,
    /// Time to first token at the target percentile, seconds.
    pub ttft_s: f64,
    /// Time per output token at the target percentile, seconds.
    pub tpot_s: f64,
    /// Cost per million output tokens.
    pub cost_per_million_tokens: MoneyIr,
    /// Cost per month.
    pub cost_per_month: MoneyIr,
    /// Whether this is the chosen deployment.
    pub chosen: bool,
}
