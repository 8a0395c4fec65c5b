//! The parts of the Plan IR that say how a group's nodes run a job (what a pod may request, the
//! fast fabric and the collective library, taints, scheduler limits) and how failures stretch the
//! run (goodput). Added in format 1.6; backends render them without seeing the catalogue.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How one node group runs a job, from the catalogue's node group, its site and its device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
pub struct NodeIr {
    /// The device vendor (`nvidia`, `amd`, `huawei`, `hygon`, `intel`).
    pub vendor: String,
    /// The collective library the devices use: `nccl` (NVIDIA), `rccl` (AMD, Hygon), `hccl`
    /// (Huawei Ascend, Intel Gaudi).
    pub collective: String,
    /// CPU cores a node's pod requests (0 when the catalogue does not say).
    #[serde(default)]
    pub cpus: u64,
    /// Memory a node's pod requests, in GiB (0 when the catalogue does not say).
    #[serde(default)]
    pub memory_gib: f64,
    /// Size of the shared-memory volume (`/dev/shm`) in GiB (0 when the catalogue does not say).
    #[serde(default)]
    pub shm_gib: f64,
    /// The RDMA device-plugin resource and how many each node's pod takes, when the node group
    /// has an RDMA fabric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaIr>,
    /// Environment the collective library needs on this node group (`NCCL_IB_HCA` …), sorted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Taints of the node group's nodes, which the job's pods tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<TolerationIr>,
    /// The label keys of the site's topology levels, outermost first, when the catalogue declares
    /// them (Kueue topology-aware scheduling needs a Topology object with these levels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_levels: Vec<String>,
    /// The Slurm partition's longest time limit in minutes, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_max_time_min: Option<u64>,
    /// Slurm node features that select the node group (`--constraint`), when the catalogue
    /// declares them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slurm_features: Vec<String>,
    /// Whether the Slurm cluster runs containers through pyxis/enroot (`--container-image`).
    #[serde(default)]
    pub slurm_containers: bool,
    /// The Kubernetes resource of the group's slice profile (`nvidia.com/mig-1g.10gb`,
    /// `huawei.com/Ascend910-6c.1cpu.16g`), when the plan runs on a slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_resource: Option<String>,
}

/// An RDMA device-plugin resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaIr {
    /// The extended-resource name (`rdma/hca_shared_devices_a`, `nvidia.com/hostdev` …).
    pub resource: String,
    /// How many a node's pod requests.
    pub per_node: u64,
}

/// A node taint the job's pods tolerate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TolerationIr {
    /// Taint key.
    pub key: String,
    /// Taint value; absent tolerates every value (`operator: Exists`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// What failures cost the run: Daly's expected wall time with the job's interruption rate, the
/// checkpoint interval, the time to write a checkpoint and the time to restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoodputIr {
    /// Failure-free training time over expected wall time (1 = no time lost).
    pub fraction: f64,
    /// Hours to train without interruptions or checkpoint stalls (`train_time_h` includes both).
    pub failure_free_time_h: f64,
    /// Job-interrupting failures per device-hour, over the plan's devices (each device type's
    /// rate from the catalogue, weighted by its devices).
    pub interruptions_per_device_hour: f64,
    /// Failures expected over the run.
    pub interruptions_expected: f64,
    /// Minutes from a failure until training runs again: the site's restart time plus reading
    /// the last checkpoint.
    pub restart_min: f64,
    /// Minutes of training redone after a failure, on average: half a checkpoint interval and
    /// the write in flight.
    pub lost_work_min: f64,
    /// Hours spent writing checkpoints over the run.
    pub checkpoint_stall_h: f64,
    /// Restarts the manifests allow (JobSet `maxRestarts`, Volcano `maxRetry`, Slurm requeues,
    /// bare-metal resumes): the expected failures plus three standard deviations (Poisson) plus
    /// three.
    pub restart_budget: u64,
}
