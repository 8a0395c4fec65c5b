//! The validated catalogue: vendors, devices and pools in base units, with the spans of their
//! fields.
//!
//! Quantities are `f64` in the base units of [`crate::units`] (bytes, bytes/s, FLOP/s, watts,
//! seconds). Every field a later phase may point at carries its [`Span`] in the YAML file, so a
//! check can add "required by the catalogue here" as a secondary label.

use crate::hardware::Efficiency;
use loam_ir::checkpoint::CheckpointPath;
use loam_ir::cluster::vendor::Vendor;
use loam_ir::span::{Span, Spanned};
use loam_ir::types::Precision;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How trustworthy a device's figures are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Status {
    /// Taken from the vendor's datasheet.
    #[serde(rename = "datasheet")]
    Datasheet,
    /// Taken from other vendor documentation (docs pages, MLPerf system descriptions).
    #[serde(rename = "vendor-docs")]
    VendorDocs,
    /// Taken from vendor conference slides.
    #[serde(rename = "vendor-slides")]
    VendorSlides,
    /// No vendor source; figures come from third parties.
    #[serde(rename = "third-party")]
    ThirdParty,
    /// Estimates that sources disagree on.
    #[serde(rename = "unverified")]
    Unverified,
}

impl Status {
    /// The keyword as written in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Datasheet => "datasheet",
            Status::VendorDocs => "vendor-docs",
            Status::VendorSlides => "vendor-slides",
            Status::ThirdParty => "third-party",
            Status::Unverified => "unverified",
        }
    }

    /// Whether the figures are estimates rather than vendor-published numbers.
    pub fn is_estimate(self) -> bool {
        matches!(self, Status::ThirdParty | Status::Unverified)
    }
}

/// A capability a job may require of its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// A fused attention kernel (FlashAttention or the vendor's equivalent) is available.
    FlashAttention,
    /// 8-bit floating point matrix units.
    Fp8,
    /// NVIDIA Transformer Engine (automatic fp8 scaling).
    TransformerEngine,
    /// 2:4 structured sparsity in the matrix units.
    Sparsity,
    /// NIC-to-device RDMA without a host copy (GPUDirect RDMA or equivalent).
    GpudirectRdma,
}

impl Feature {
    /// The keyword as written in YAML and specs.
    pub fn as_str(self) -> &'static str {
        match self {
            Feature::FlashAttention => "flash_attention",
            Feature::Fp8 => "fp8",
            Feature::TransformerEngine => "transformer_engine",
            Feature::Sparsity => "sparsity",
            Feature::GpudirectRdma => "gpudirect_rdma",
        }
    }
}

/// The vendor software stack a device runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    /// NVIDIA CUDA.
    Cuda,
    /// AMD ROCm.
    Rocm,
    /// Huawei CANN.
    Cann,
    /// Hygon DTK.
    Dtk,
    /// Intel Gaudi SynapseAI.
    Synapseai,
}

impl Stack {
    /// The keyword as written in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            Stack::Cuda => "cuda",
            Stack::Rocm => "rocm",
            Stack::Cann => "cann",
            Stack::Dtk => "dtk",
            Stack::Synapseai => "synapseai",
        }
    }
}

/// How a device is partitioned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlicingKind {
    /// NVIDIA Multi-Instance GPU.
    Mig,
    /// Huawei static virtual NPUs.
    Vnpu,
    /// Time-sliced or mediated virtual GPUs.
    Vgpu,
}

/// One partition profile of a device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceProfile {
    /// Profile name, e.g. `1g.10gb`.
    pub name: String,
    /// Memory of one slice in bytes.
    pub memory_bytes: f64,
    /// Share of the device's compute, in (0, 1].
    pub compute_fraction: f64,
}

/// The best throughput a published training run measured on a device in one precision: model
/// FLOP/s per device in loam's MFU convention (6·N·tokens plus attention, no recomputation), so
/// a plan's `model_tflops_per_device` compares with it directly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestPublished {
    /// Model FLOP/s per device the run measured.
    pub model_flops: Spanned<f64>,
    /// The run's id in the calibration file (`tests/data/training_runs_calibration.csv`).
    pub run: String,
    /// Where the run was published.
    pub source: String,
}

/// One accelerator type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// Catalogue id, e.g. `H100_SXM`.
    pub id: Spanned<String>,
    /// Marketing name.
    pub name: String,
    /// Vendor id, lowercase (`nvidia`, `amd`, `huawei`, `hygon`, `intel`): a file of `vendors/`.
    pub vendor: String,
    /// Where `vendor` is written in the device file.
    #[serde(skip)]
    pub vendor_span: Span,
    /// The facts of that vendor (its collective library, Slurm GRES, engines), resolved when the
    /// catalogue is loaded, so the planner reads them off the device and a job's catalogue
    /// inputs ([`super::Catalogue::inputs_digest`]) cover them.
    pub vendor_facts: Vendor,
    /// Where the figures come from and how sure they are.
    pub status: Spanned<Status>,
    /// The sources of the figures.
    pub source: String,
    /// Peak dense FLOP/s per precision (no sparsity).
    pub peak_flops: BTreeMap<Precision, Spanned<f64>>,
    /// Dense fp4 FLOP/s, when the device has an fp4 tensor rate: services may store and
    /// multiply weights in fp4 there (training never does).
    pub fp4_peak: Option<f64>,
    /// Precisions the device trains in.
    pub precisions: Spanned<Vec<Precision>>,
    /// Capabilities.
    pub features: Spanned<Vec<Feature>>,
    /// Memory capacity in bytes.
    pub memory_bytes: Spanned<f64>,
    /// Memory bandwidth in bytes/s.
    pub memory_bandwidth: f64,
    /// Measured kernel throughput as a share of peak ([`Efficiency::unmeasured`] when the file
    /// gives none).
    pub efficiency: Efficiency,
    /// Where the efficiency figures come from (empty when the file gives none).
    pub efficiency_source: String,
    /// Intra-node fabric name (`NVLink4`, `HCCS` …).
    pub fabric: String,
    /// Intra-node fabric bandwidth per device in bytes/s, both directions together.
    pub scale_up_bandwidth_bidir: f64,
    /// Whether devices of a node reach each other over the fabric directly; without it (GeForce
    /// and TITAN cards on PCIe) collectives inside the node go through host memory.
    pub peer_to_peer: bool,
    /// Devices in one node.
    pub devices_per_node: Spanned<u32>,
    /// Devices on one scale-up fabric: a whole number of nodes (`scale_up.domain`), one node
    /// unless the fabric spans several (GB200 NVL72: 72 GPUs over 18 trays of 4).
    pub scale_up_domain: u32,
    /// Board power limit in watts.
    pub tdp_watts: f64,
    /// Typical draw under training load in watts.
    pub typical_watts: f64,
    /// Software stack.
    pub stack: Stack,
    /// Oldest stack version the device works with.
    pub min_version: Spanned<String>,
    /// Kubernetes extended-resource name.
    pub kubernetes_resource: String,
    /// Partitioning scheme, if any.
    pub slicing: Option<SlicingKind>,
    /// Partition profiles (empty when the device cannot be partitioned).
    pub slice_profiles: Vec<SliceProfile>,
    /// Assumed mean time between job-interrupting failures of one device, in seconds.
    pub mtbf_s: f64,
    /// Why that MTBF was assumed.
    pub mtbf_basis: String,
    /// The best published measurement per precision; a plan above it is an extrapolation.
    /// Empty when no published run on the device is known.
    pub best_published: BTreeMap<Precision, BestPublished>,
    /// The file it was read from.
    pub file: String,
}

/// A cached dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dataset {
    /// Dataset name.
    pub name: String,
    /// Size in bytes.
    pub size_bytes: f64,
}

/// A homogeneous group of nodes at one site.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeGroup {
    /// Group name, unique in its pool.
    pub name: Spanned<String>,
    /// Device type id.
    pub device: Spanned<String>,
    /// Number of nodes.
    pub nodes: u32,
    /// Devices in each node.
    pub devices_per_node: Spanned<u32>,
    /// Devices not allocated right now.
    pub free_devices: u32,
    /// NICs per node.
    pub nics: u32,
    /// Bandwidth of one NIC in bytes/s, one direction.
    pub nic_bandwidth: f64,
    /// Price per device-hour, in the pool's base currency.
    pub price_per_device_hour: f64,
    /// The price as written, with its currency.
    pub price_written: Spanned<String>,
    /// Driver version.
    pub driver: String,
    /// Software stack version installed.
    pub software_version: Spanned<String>,
    /// Slurm partition.
    pub slurm_partition: String,
    /// Kubernetes node labels.
    pub node_labels: BTreeMap<String, String>,
    /// How its nodes run a job: pod requests, fabric, taints, Slurm limits.
    pub run: NodeRun,
}

/// How a node group's nodes run a job (all optional in the catalogue: absent figures are zero
/// or empty, and the manifests then leave them out).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct NodeRun {
    /// CPU cores one node's pod requests.
    pub cpus: u32,
    /// Memory one node's pod requests, in bytes.
    pub memory_bytes: f64,
    /// Size of `/dev/shm`, in bytes.
    pub shm_bytes: f64,
    /// The RDMA device-plugin resource and how many a node's pod takes.
    pub rdma: Option<(String, u32)>,
    /// The collective library's environment.
    pub env: BTreeMap<String, String>,
    /// Node taints: key, value (none = any), effect.
    pub taints: Vec<(String, Option<String>, String)>,
    /// The Slurm partition's longest time limit, in seconds.
    pub slurm_max_time_s: Option<f64>,
    /// Slurm node features selecting the group.
    pub slurm_features: Vec<String>,
    /// Whether Slurm runs containers through pyxis/enroot.
    pub slurm_containers: bool,
}

impl NodeGroup {
    /// All devices of the group.
    pub fn devices(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.devices_per_node.value)
    }

    /// Bytes per second one device reaches off its node, one direction: the node's NICs shared
    /// by its devices. The scale-out figure of a serving replica, of a prompt's KV cache
    /// crossing from a prefill to a decode replica, and of a stored serving run.
    pub fn scale_out_per_device(&self) -> f64 {
        self.nic_bandwidth * f64::from(self.nics) / f64::from(self.devices_per_node.value.max(1))
    }
}

/// One data-centre site of a pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Site {
    /// Site name, unique in its pool.
    pub name: Spanned<String>,
    /// Region code.
    pub region: String,
    /// City.
    pub city: String,
    /// Grid carbon intensity in gCO2 per kWh.
    pub carbon_g_per_kwh: f64,
    /// Power usage effectiveness (facility power / IT power).
    pub pue: f64,
    /// Aggregate storage read bandwidth in bytes/s.
    pub storage_bandwidth: f64,
    /// Electricity price per kWh for each hour 0..23, in the pool's base currency.
    pub power_price_per_kwh: Vec<f64>,
    /// Nodes per switch block (devices in a block talk at full bisection).
    pub nodes_per_block: u32,
    /// Uplink bandwidth of one block in bytes/s.
    pub block_uplink: f64,
    /// One-way node-to-node latency inside the site, in seconds.
    pub latency_s: f64,
    /// Datasets cached here.
    pub datasets: Vec<Dataset>,
    /// Node groups.
    pub node_groups: Vec<NodeGroup>,
    /// Sites this site claims to reach over WAN links (all others when not written).
    pub reaches: Vec<Spanned<String>>,
    /// Seconds from a failure until the job runs again, before it reads its checkpoint.
    pub restart_s: f64,
    /// Node label keys of the topology levels, outermost first; empty when not declared.
    pub topology_levels: Vec<String>,
    /// The IANA time zone of the site's tariff hours, when declared.
    pub time_zone: Option<String>,
    /// The site's calibration from its measured runs (`calibration/<pool>-<site>.yaml`, written
    /// by `loam calibrate --fit`), when there is one. Absent, the site plans with the shipped
    /// model and serialises as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::calibrate::site::SiteCalibration>,
}

/// A WAN link between two sites, usable in both directions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// The two ends.
    pub a: Spanned<String>,
    /// The other end.
    pub b: Spanned<String>,
    /// One-way latency in seconds.
    pub latency_s: f64,
    /// Bandwidth in bytes/s, each direction.
    pub bandwidth: f64,
    /// Egress price per GB, in the pool's base currency.
    pub egress_per_gb: f64,
}

/// A tenant's share of one device type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quota {
    /// Device type id.
    pub device: Spanned<String>,
    /// Devices always available to the tenant.
    pub guaranteed: Spanned<u32>,
    /// Extra devices the tenant may borrow when free (preemptible).
    pub elastic: Spanned<u32>,
}

/// A team that runs jobs on the pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tenant {
    /// Tenant name.
    pub name: Spanned<String>,
    /// Checkpoints of this tenant's jobs must live in folders below this path.
    pub checkpoint_root: Spanned<CheckpointPath>,
    /// Kubernetes namespace.
    pub kubernetes_namespace: String,
    /// Slurm account.
    pub slurm_account: String,
    /// Scheduler queue.
    pub queue: String,
    /// Sites the tenant may use (all when empty).
    pub sites: Vec<Spanned<String>>,
    /// Quotas by device type.
    pub quota: Vec<Quota>,
}

/// A pool of sites under one scheduler and currency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pool {
    /// Pool id.
    pub id: Spanned<String>,
    /// Display name.
    pub name: String,
    /// Base currency (ISO 4217).
    pub currency: Spanned<String>,
    /// Value of one unit of each other currency in the base currency.
    pub rates: BTreeMap<String, f64>,
    /// Sites, in file order.
    pub sites: Vec<Site>,
    /// WAN links.
    pub links: Vec<Link>,
    /// Tenants.
    pub tenants: Vec<Tenant>,
    /// The software stack its nodes run: defaults for what a spec planned on it leaves out.
    pub stack: PoolStack,
    /// The file it was read from.
    pub file: String,
}

/// What a pool's nodes run that changes a plan's time: a spec planned on the pool takes these
/// where it says nothing itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PoolStack {
    /// How an MoE layer's tokens reach their experts (`stack.expert_dispatch`); `None` = the
    /// all-to-all.
    pub expert_dispatch: Option<loam_ir::types::ExpertDispatch>,
}

/// The whole catalogue: every device and pool, keyed by id.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Catalogue {
    /// Vendors by id: the catalogue's own `vendors/` files and the shipped ones it does not
    /// replace.
    pub vendors: BTreeMap<String, Vendor>,
    /// Devices by id.
    pub devices: BTreeMap<String, Device>,
    /// Pools by id.
    pub pools: BTreeMap<String, Pool>,
    /// `(display path, text)` of every source, sorted by path.
    #[serde(skip)]
    pub(crate) sources: Vec<(String, String)>,
    /// The content hash of `sources`, computed once when the catalogue is loaded.
    #[serde(skip)]
    pub(crate) digest: String,
    /// Pools and devices left out because their files have errors (empty when the catalogue
    /// loaded whole): a spec that names one is told which file to fix, not that the name is
    /// unknown ([`super::load_partial`]).
    #[serde(skip)]
    pub withheld: Withheld,
}

/// What a partly loaded catalogue left out, by id, with the catalogue file at fault (its display
/// path): the broken file itself, or the file of something it depends on that is broken.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Withheld {
    /// Pools by id.
    pub pools: BTreeMap<String, String>,
    /// Devices by id.
    pub devices: BTreeMap<String, String>,
}

impl Withheld {
    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.pools.is_empty() && self.devices.is_empty()
    }
}

/// The span-less location helper used by the loader.
pub(crate) fn spanned<T>(value: T, span: Span) -> Spanned<T> {
    Spanned::new(value, span)
}
