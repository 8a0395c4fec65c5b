//! The catalogue YAML exactly as written: serde structs with source locations, no units parsed.
//!
//! Every struct denies unknown fields, and `serde-saphyr` rejects duplicate keys, so a typo is
//! an error rather than a silently ignored line. Units stay strings here; [`super::load`] parses
//! them with [`crate::units::parse_quantity`] and turns these records into the [`super::model`].

use serde::Deserialize;
use serde_saphyr::Spanned as S;
use std::collections::BTreeMap;

/// Source-located scalar as `serde-saphyr` reports it.
pub(crate) type Loc<T> = S<T>;

/// One device file, `specs/devices/<id>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceFile {
    pub id: Loc<String>,
    pub name: Loc<String>,
    pub vendor: Loc<String>,
    pub status: Loc<super::model::Status>,
    pub source: Loc<String>,
    pub peak_dense: BTreeMap<loam_ir::types::Precision, Loc<String>>,
    pub precisions: Vec<Loc<loam_ir::types::Precision>>,
    /// Dense fp4 tensor rate, for serving only (loam trains in no 4-bit format).
    #[serde(default)]
    pub peak_fp4: Option<Loc<String>>,
    #[serde(default)]
    pub features: Vec<Loc<super::model::Feature>>,
    pub memory: Loc<String>,
    pub memory_bandwidth: Loc<String>,
    #[serde(default)]
    pub efficiency: Option<EfficiencyBlock>,
    pub scale_up: ScaleUp,
    pub devices_per_node: Loc<i128>,
    pub power: Power,
    pub software: DeviceSoftware,
    pub kubernetes_resource: Loc<String>,
    #[serde(default)]
    pub slicing: Option<Slicing>,
    pub reliability: Reliability,
    #[serde(default)]
    pub best_published: BTreeMap<loam_ir::types::Precision, BestPublished>,
}

/// Measured kernel throughput as a share of the dense peak.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EfficiencyBlock {
    pub gemm: BTreeMap<loam_ir::types::Precision, Loc<f64>>,
    pub attention: AttentionEfficiency,
    pub source: Loc<String>,
    #[serde(default)]
    pub uncertainty: Option<Loc<f64>>,
}

/// Causal flash-attention throughput as a share of the 16-bit dense peak.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttentionEfficiency {
    pub forward: Loc<f64>,
    pub backward: Loc<f64>,
}

/// Intra-node fabric.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScaleUp {
    pub fabric: Loc<String>,
    pub bandwidth: Loc<String>,
    /// Whether two devices of a node reach each other's memory over the fabric; absent is yes.
    #[serde(default)]
    pub peer_to_peer: Option<Loc<bool>>,
    /// Devices that share the fabric, when more than one node's (a rack-scale NVLink domain such
    /// as GB200 NVL72's 72 GPUs over 18 trays); absent is one node.
    #[serde(default)]
    pub domain: Option<Loc<i128>>,
}

/// Power draw.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Power {
    pub tdp: Loc<String>,
    pub typical: Loc<String>,
}

/// Software stack a device needs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceSoftware {
    pub stack: Loc<super::model::Stack>,
    pub min_version: Loc<String>,
}

/// Partitioning of one device.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Slicing {
    pub kind: Loc<super::model::SlicingKind>,
    pub profiles: Vec<SliceProfile>,
}

/// One partition profile.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SliceProfile {
    pub name: Loc<String>,
    pub memory: Loc<String>,
    pub compute: Loc<f64>,
}

/// Failure assumptions for checkpoint planning.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reliability {
    pub mtbf: Loc<String>,
    pub basis: Loc<String>,
}

/// The best model FLOP/s per device a published training run measured in one precision.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BestPublished {
    pub model_flops: Loc<String>,
    pub run: Loc<String>,
    pub source: Loc<String>,
}

/// One pool file, `specs/pools/<id>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PoolFile {
    pub id: Loc<String>,
    pub name: Loc<String>,
    pub currency: Currency,
    pub sites: Vec<Site>,
    #[serde(default)]
    pub links: Vec<Link>,
    #[serde(default)]
    pub tenants: Vec<Tenant>,
    #[serde(default)]
    pub stack: Option<PoolStack>,
}

/// The software stack a pool's nodes run, as defaults for the specs planned on it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PoolStack {
    #[serde(default)]
    pub expert_dispatch: Option<Loc<String>>,
}

/// Base currency and exchange rates.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Currency {
    pub base: Loc<String>,
    #[serde(default)]
    pub rates: BTreeMap<String, Loc<f64>>,
}

/// One site.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Site {
    pub name: Loc<String>,
    pub region: Loc<String>,
    pub city: Loc<String>,
    pub carbon_intensity: Loc<f64>,
    pub pue: Loc<f64>,
    pub storage_bandwidth: Loc<String>,
    pub power_price: PowerPrice,
    pub topology: Topology,
    #[serde(default)]
    pub datasets: Vec<Dataset>,
    pub node_groups: Vec<NodeGroup>,
    #[serde(default)]
    pub reaches: Option<Vec<Loc<String>>>,
    /// From a failure to training again, before the checkpoint is read.
    #[serde(default)]
    pub restart_time: Option<Loc<String>>,
    /// The IANA time zone of the site's clocks and tariff hours (`Asia/Shanghai`).
    #[serde(default)]
    pub time_zone: Option<Loc<String>>,
}

/// Electricity price by hour of day.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PowerPrice {
    pub currency: Loc<String>,
    pub per_kwh: Loc<Vec<Loc<f64>>>,
}

/// Network shape inside a site.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Topology {
    pub nodes_per_block: Loc<i128>,
    pub block_uplink: Loc<String>,
    pub latency: Loc<String>,
    /// Node label keys of the topology levels, outermost first (Kueue's Topology levels).
    #[serde(default)]
    pub levels: Vec<Loc<String>>,
}

/// A dataset cached at a site.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Dataset {
    pub name: Loc<String>,
    pub size: Loc<String>,
}

/// A homogeneous group of nodes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeGroup {
    pub name: Loc<String>,
    pub device: Loc<String>,
    pub nodes: Loc<i128>,
    pub devices_per_node: Loc<i128>,
    pub free_devices: Loc<i128>,
    pub nics: Nics,
    pub price: Loc<String>,
    pub software: NodeSoftware,
    pub slurm_partition: Loc<String>,
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    /// What one node's pod may request.
    #[serde(default)]
    pub pod: Option<PodResources>,
    /// The fast fabric and the collective library's settings.
    #[serde(default)]
    pub fabric: Option<Fabric>,
    /// Taints on the group's nodes.
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// The Slurm partition's limits and features.
    #[serde(default)]
    pub slurm: Option<SlurmGroup>,
}

/// What one node's pod requests.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PodResources {
    pub cpus: Loc<i128>,
    pub memory: Loc<String>,
    pub shm: Loc<String>,
}

/// The RDMA fabric and the collective library's environment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Fabric {
    #[serde(default)]
    pub rdma: Option<Rdma>,
    #[serde(default)]
    pub env: BTreeMap<String, Loc<String>>,
}

/// An RDMA device-plugin resource.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rdma {
    pub resource: Loc<String>,
    pub per_node: Loc<i128>,
}

/// A node taint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Taint {
    pub key: Loc<String>,
    #[serde(default)]
    pub value: Option<Loc<String>>,
    pub effect: Loc<String>,
}

/// Slurm settings of a node group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlurmGroup {
    #[serde(default)]
    pub max_time: Option<Loc<String>>,
    #[serde(default)]
    pub features: Vec<Loc<String>>,
    #[serde(default)]
    pub containers: bool,
}

/// Scale-out network interfaces of one node.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Nics {
    pub count: Loc<i128>,
    pub bandwidth: Loc<String>,
}

/// Installed software on a node group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeSoftware {
    pub driver: Loc<String>,
    pub version: Loc<String>,
}

/// A WAN link between two sites (both directions).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Link {
    pub between: Loc<Vec<Loc<String>>>,
    pub latency: Loc<String>,
    pub bandwidth: Loc<String>,
    pub egress_price: Loc<String>,
}

/// A tenant of the pool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tenant {
    pub name: Loc<String>,
    pub checkpoint_root: Loc<String>,
    pub kubernetes_namespace: Loc<String>,
    pub slurm_account: Loc<String>,
    pub queue: Loc<String>,
    #[serde(default)]
    pub sites: Option<Vec<Loc<String>>>,
    #[serde(default)]
    pub quota: Vec<Quota>,
}

/// A tenant's share of one device type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Quota {
    pub device: Loc<String>,
    pub guaranteed: Loc<i128>,
    pub elastic: Loc<i128>,
}

/// One vendor file, `specs/vendors/<id>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VendorFile {
    pub id: Loc<String>,
    pub name: Loc<String>,
    pub collective: Collective,
    pub slurm_gres: Loc<String>,
    #[serde(default)]
    pub slice_resource: Option<Loc<String>>,
    pub serving: Serving,
}

/// A vendor's collective library and the environment it needs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Collective {
    pub library: Loc<String>,
    #[serde(default)]
    pub rank_table: Option<loam_ir::cluster::vendor::RankTable>,
    #[serde(default)]
    pub env: BTreeMap<String, Loc<String>>,
}

/// The serving engines that run on a vendor's devices.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Serving {
    pub default_engine: Loc<loam_ir::types::Engine>,
    pub images: BTreeMap<loam_ir::types::Engine, Loc<String>>,
    /// The engines of `images` whose image the team must build, each with how.
    #[serde(default)]
    pub unpublished: BTreeMap<loam_ir::types::Engine, Loc<String>>,
}
