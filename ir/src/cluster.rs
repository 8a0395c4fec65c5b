//! What the backends and the report take from the catalogue besides the plans, as plain values
//! the CLI passes: each vendor's software facts ([`vendor`]), each tenant's backend names and
//! quotas, the devices of each node group, and the pools' map (sites, node groups, WAN links)
//! with each device's memory. `loam_compiler::catalogue::facts` builds them from a loaded
//! catalogue; neither the backends nor the report see the catalogue itself.

pub mod vendor;

use crate::names::dns_label;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a tenant's jobs go on each backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenancy {
    /// Kubernetes namespace.
    pub namespace: String,
    /// Kueue LocalQueue and ClusterQueue, or Volcano queue.
    pub queue: String,
    /// Slurm account.
    pub slurm_account: String,
    /// Slurm QoS, when the site uses one per tenant.
    pub slurm_qos: Option<String>,
    /// Checkpoints must live under this absolute path.
    pub checkpoint_root: String,
    /// The tenant's quota of each device type (by device id), for the cluster queues.
    pub quotas: BTreeMap<String, QuotaShare>,
}

/// A tenant's share of one device type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QuotaShare {
    /// Devices always available to the tenant.
    pub guaranteed: u64,
    /// Extra devices it may borrow when others leave them idle (preemptible).
    pub elastic: u64,
}

impl Tenancy {
    /// The names loam uses when the catalogue gives none: namespace `team-<tenant>`, queue and
    /// account `<tenant>`, checkpoints under `/ckpt/<tenant>`.
    pub fn derived(tenant: &str) -> Self {
        let label = dns_label(tenant, 40);
        Tenancy {
            namespace: format!("team-{label}"),
            queue: label.clone(),
            slurm_account: label.clone(),
            slurm_qos: None,
            checkpoint_root: format!("/ckpt/{label}"),
            quotas: BTreeMap::new(),
        }
    }
}

/// The catalogue as the report draws it: each pool's map, and each device's memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterMap {
    /// The pools by name.
    pub pools: BTreeMap<String, PoolMap>,
    /// Each device's memory in bytes, by device id.
    pub device_memory_bytes: BTreeMap<String, f64>,
}

/// One pool's sites, in catalogue order, and its WAN links.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoolMap {
    /// The sites, in the order the catalogue lists them.
    pub sites: Vec<SiteMap>,
    /// The WAN links between sites.
    pub links: Vec<LinkMap>,
}

/// One site of a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteMap {
    /// The site's name.
    pub name: String,
    /// The city it is in.
    pub city: String,
    /// Its node groups, in catalogue order.
    pub node_groups: Vec<NodeGroupMap>,
}

/// One node group of a site.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupMap {
    /// The group's name.
    pub name: String,
    /// Its device id.
    pub device: String,
    /// Its devices (nodes × devices per node).
    pub devices: u64,
    /// Its devices free now.
    pub free_devices: u64,
}

/// A WAN link between two sites.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkMap {
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Bandwidth in bytes/s.
    pub bandwidth: f64,
}

impl PoolMap {
    /// The link between sites `a` and `b`, either way round.
    pub fn link(&self, a: &str, b: &str) -> Option<&LinkMap> {
        self.links
            .iter()
            .find(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
    }
}
