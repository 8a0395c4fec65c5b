//! What the backends and the report take from the catalogue, as the plain values of
//! `loam_ir::cluster`: where each tenant's jobs go on every backend (the one mapping `loam emit`
//! and `loam diff` render manifests with), the devices of each node group, the vendors' software
//! facts, and the pools' map the report draws.

use super::model::Catalogue;
use loam_ir::cluster::vendor::Vendors;
use loam_ir::cluster::{ClusterMap, LinkMap, NodeGroupMap, PoolMap, QuotaShare, SiteMap, Tenancy};
use loam_ir::plan::{GroupIr, PlanDocument};
use std::collections::BTreeMap;

/// The backend names of every tenant of every pool the plans and services run in, keyed by
/// (pool, tenant): two pools may each have a tenant of the same name with its own queue and
/// quota, and a job gets its own pool's. Every tenant of such a pool is listed, whether or not
/// it has a job in `doc`, so the cluster objects rendered from this do not depend on which
/// jobs are emitted together. A tenant the catalogue does not describe is left out; the
/// backends derive its names (see [`Tenancy::derived`]).
pub fn tenancies(doc: &PlanDocument, catalogue: &Catalogue) -> BTreeMap<(String, String), Tenancy> {
    let mut found = BTreeMap::new();
    let pools = doc
        .plans
        .iter()
        .map(|p| &p.pool)
        .chain(doc.services.iter().map(|s| &s.pool));
    for pool_name in pools {
        let Some(pool) = catalogue.pool(pool_name) else {
            continue;
        };
        for tenant in &pool.tenants {
            let quotas = tenant
                .quota
                .iter()
                .map(|q| {
                    (
                        q.device.value.clone(),
                        QuotaShare {
                            guaranteed: u64::from(q.guaranteed.value),
                            elastic: u64::from(q.elastic.value),
                        },
                    )
                })
                .collect();
            found.insert(
                (pool_name.clone(), tenant.name.value.clone()),
                Tenancy {
                    namespace: tenant.kubernetes_namespace.clone(),
                    queue: tenant.queue.clone(),
                    slurm_account: tenant.slurm_account.clone(),
                    slurm_qos: None,
                    checkpoint_root: tenant.checkpoint_root.value.to_string(),
                    quotas,
                },
            );
        }
    }
    found
}

/// Every node group of every site of the pools `doc`'s plans run in, by site name, each as a
/// plan group holding the whole group (all its nodes, the node facts of a whole node): the
/// Kubernetes prerequisites render a site's ResourceFlavors and its tenants' queues from these,
/// so they are the same whichever of the site's jobs are emitted together.
pub fn site_node_groups(
    doc: &PlanDocument,
    catalogue: &Catalogue,
) -> BTreeMap<String, Vec<GroupIr>> {
    let mut found: BTreeMap<String, Vec<GroupIr>> = BTreeMap::new();
    let pools: std::collections::BTreeSet<&String> = doc.plans.iter().map(|p| &p.pool).collect();
    for pool in pools.into_iter().filter_map(|p| catalogue.pool(p)) {
        for (site, group) in pool.node_groups() {
            let Some(device) = catalogue.device(&group.device.value) else {
                continue;
            };
            let per_node = u64::from(group.devices_per_node.value);
            let nodes = u64::from(group.nodes);
            found
                .entry(site.name.value.clone())
                .or_default()
                .push(GroupIr {
                    site: site.name.value.clone(),
                    device: device.id.value.clone(),
                    nodes,
                    devices: nodes * per_node,
                    node_group: group.name.value.clone(),
                    devices_per_node: per_node,
                    k8s_resource: device.kubernetes_resource.clone(),
                    node_labels: group.node_labels.clone(),
                    slurm_partition: Some(group.slurm_partition.clone()).filter(|p| !p.is_empty()),
                    block: None,
                    preemptible_devices: 0,
                    slice: None,
                    topology: None,
                    tensor: None,
                    layout: None,
                    sequences_per_step: None,
                    stages: Vec::new(),
                    throughput_uncertainty: None,
                    mfu: None,
                    model_tflops_per_device: None,
                    memory_per_device_gib: None,
                    memory_gib: None,
                    node: Some(crate::plan::node::node_ir_at(site, group, device, per_node)),
                });
        }
    }
    found
}

/// The devices of every node group of the pools `doc`'s plans run in, by node group name: the
/// capacity the pool's Kueue cohort must hold for the catalogue's elastic quotas to be real.
pub fn node_group_devices(doc: &PlanDocument, catalogue: &Catalogue) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    for plan in &doc.plans {
        let Some(pool) = catalogue.pool(&plan.pool) else {
            continue;
        };
        for (_, group) in pool.node_groups() {
            found.insert(group.name.value.clone(), group.devices());
        }
    }
    found
}

/// The vendors of `catalogue` and the vendor of each of its devices: the vendor facts the
/// backends render with.
pub fn vendors(catalogue: &Catalogue) -> Vendors {
    Vendors::new(
        catalogue.vendors.clone(),
        catalogue
            .devices
            .iter()
            .map(|(id, d)| (id.clone(), d.vendor.clone()))
            .collect(),
    )
}

/// The pools of `catalogue` as the report's placement map draws them (sites, node groups and
/// WAN links), and each device's memory for its memory figure.
pub fn cluster_map(catalogue: &Catalogue) -> ClusterMap {
    let pools = catalogue
        .pools
        .iter()
        .map(|(id, pool)| {
            let sites = pool
                .sites
                .iter()
                .map(|site| SiteMap {
                    name: site.name.value.clone(),
                    city: site.city.clone(),
                    node_groups: site
                        .node_groups
                        .iter()
                        .map(|g| NodeGroupMap {
                            name: g.name.value.clone(),
                            device: g.device.value.clone(),
                            devices: u64::from(g.nodes) * u64::from(g.devices_per_node.value),
                            free_devices: u64::from(g.free_devices),
                        })
                        .collect(),
                })
                .collect();
            let links = pool
                .links
                .iter()
                .map(|l| LinkMap {
                    a: l.a.value.clone(),
                    b: l.b.value.clone(),
                    bandwidth: l.bandwidth,
                })
                .collect();
            (id.clone(), PoolMap { sites, links })
        })
        .collect();
    let device_memory_bytes = catalogue
        .devices
        .iter()
        .map(|(id, d)| (id.clone(), d.memory_bytes.value))
        .collect();
    ClusterMap {
        pools,
        device_memory_bytes,
    }
}
