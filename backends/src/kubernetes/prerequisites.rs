//! The cluster prerequisites of the jobs, one set per site cluster under
//! `_prerequisites/<site>/`: each tenant's Namespace; Kueue's Topology, a ResourceFlavor per
//! node group, a ClusterQueue per tenant (its quota per flavor, a cohort per pool) and the
//! LocalQueue, and the WorkloadPriorityClasses; or Volcano's Queue and PriorityClasses.
//!
//! Every object is written once however many jobs need it, from every plan of the document, so
//! deleting one job's folder never deletes a queue the tenant's other jobs use. File names start
//! with a number and objects carry Argo CD sync waves, so both `kubectl apply -R` (lexical order)
//! and Argo CD create them before the objects that need them.

use super::{PREREQUISITES, PRIORITIES, priority_class, site_label};
use crate::job::{Group, JobContext};
use crate::{Flavor, Manifest, Options, env};
use loam_ir::cluster::QuotaShare;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::names::dns_label;
use loam_ir::plan::{GroupIr, PlanDocument};
use minijinja::Value;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Each flavor's name and its resources' quotas, in the covered resources' order.
type FlavorQuotas = Vec<(String, Vec<ResourceQuota>)>;

/// The lender queue's name: `unreserved-<cohort>`.
fn lender_name(cohort: &str) -> String {
    dns_label(&format!("unreserved-{cohort}"), 63)
}

/// The devices of the site's node groups that no tenant is guaranteed, as the nominal quota of
/// a ClusterQueue in the pool's cohort that no LocalQueue points at: it runs nothing and lends
/// everything, so the tenants' elastic quotas (their `borrowingLimit`) can borrow devices the
/// pool has but nobody reserved. Kueue lends only other queues' unused nominal quota; without
/// it a tenant could borrow only what the other tenants are guaranteed. Each resource is whole
/// nodes' worth of the unreserved devices. `None` when nothing is unreserved, or when the
/// catalogue's node groups are not known (`node_groups` empty).
fn lender(
    site: &Site,
    node_groups: &BTreeMap<String, u64>,
) -> Option<(String, Vec<String>, FlavorQuotas)> {
    let cohort = site.tenants.values().next()?.cohort.clone();
    let mut covered_set: BTreeSet<String> = BTreeSet::new();
    let mut unreserved: Vec<(&Flavor_, u64)> = Vec::new();
    for f in site.flavors.values() {
        let Some(total) = node_groups.get(&f.node_group) else {
            continue;
        };
        let reserved: u64 = site
            .tenants
            .values()
            .filter(|t| t.flavors.contains(&f.name))
            .map(|t| share(t, f).guaranteed)
            .sum();
        let free = total.saturating_sub(reserved);
        if free > 0 {
            covered_set.extend(f.per_node.keys().cloned());
            unreserved.push((f, free));
        }
    }
    if unreserved.is_empty() {
        return None;
    }
    covered_set.remove("cpu");
    covered_set.remove("memory");
    let covered: Vec<String> = ["cpu".to_string(), "memory".to_string()]
        .into_iter()
        .chain(covered_set)
        .collect();
    let flavors = unreserved
        .iter()
        .map(|(f, free)| {
            let nodes = free / f.devices_per_node;
            let quotas = covered
                .iter()
                .map(|r| {
                    let per = f.per_node.get(r).copied().unwrap_or(0);
                    let nominal = if *r == f.device_resource {
                        *free
                    } else {
                        nodes * per
                    };
                    let unit = if r == "memory" { "Mi" } else { "" };
                    ResourceQuota {
                        name: r.clone(),
                        nominal: format!("{nominal}{unit}"),
                        borrowing: format!("0{unit}"),
                    }
                })
                .collect();
            (f.name.clone(), quotas)
        })
        .collect();
    Some((cohort, covered, flavors))
}

/// One node group as a Kueue ResourceFlavor.
#[derive(Debug, Clone, Serialize)]
struct Flavor_ {
    name: String,
    /// The catalogue node group it is.
    node_group: String,
    device: String,
    node_labels: Vec<(String, String)>,
    taints: Vec<(String, Option<String>, String)>,
    topology: Option<String>,
    /// Resource and quantity one node's pod requests.
    per_node: BTreeMap<String, u64>,
    devices_per_node: u64,
    device_resource: String,
    /// The largest number of nodes one emitted job uses here.
    nodes_needed: u64,
}

/// The storage a tenant's checkpoint claim requests (counted: a placeholder, 100 TiB). The
/// shared file systems that offer ReadWriteMany (CephFS, NFS, Lustre CSI) treat the request
/// as a quota or ignore it; the size a tenant needs is the platform team's to set.
const CHECKPOINT_CLAIM_REQUEST: &str = "100Ti";

/// One tenant at one site.
#[derive(Debug, Clone, Default)]
struct Tenant {
    namespace: String,
    /// Where its checkpoints live: the root of its checkpoint volume.
    checkpoint_root: String,
    queue: String,
    cohort: String,
    quotas: BTreeMap<String, QuotaShare>,
    flavors: BTreeSet<String>,
}

/// One site cluster.
#[derive(Debug, Clone, Default)]
struct Site {
    /// Its name in the catalogue.
    name: String,
    /// The pool of its jobs.
    pool: String,
    levels: Vec<String>,
    flavors: BTreeMap<String, Flavor_>,
    tenants: BTreeMap<String, Tenant>,
    /// Namespaces of tenants with only services here: they need the namespace, not a queue
    /// (a Deployment is not admitted by Kueue).
    service_namespaces: BTreeSet<String>,
}

/// A resource's quota in one flavor: nominal and borrowing limit.
#[derive(Debug, Clone, Serialize)]
struct ResourceQuota {
    name: String,
    nominal: String,
    borrowing: String,
}

/// The name of a node group's ResourceFlavor (cluster-scoped, shared by every tenant).
pub fn flavor_name(node_group: &str) -> String {
    dns_label(node_group, 50)
}

/// The name of a site's Kueue Topology.
pub fn topology_name(site: &str) -> String {
    format!("loam-{}", site_label(site))
}

/// Renders the prerequisites of every plan in `doc` that renders; paths start with
/// `_prerequisites/<site>/`.
pub fn render(doc: &PlanDocument, options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let mut sites: BTreeMap<String, Site> = BTreeMap::new();
    for plan in &doc.plans {
        // A plan that does not render was reported by the job's own rendering.
        let Ok(job) = JobContext::new(doc, plan, options) else {
            continue;
        };
        for g in &job.groups {
            let site = sites.entry(site_label(&g.ir.site)).or_default();
            site.name.clone_from(&g.ir.site);
            site.pool.clone_from(&plan.pool);
            let node = g.ir.node.clone().unwrap_or_default();
            if site.levels.is_empty() {
                site.levels.clone_from(&node.topology_levels);
            }
            let flavor = flavor_of(g, &site.levels);
            let name = flavor.name.clone();
            let entry = site.flavors.entry(name.clone()).or_insert(flavor);
            entry.nodes_needed = entry.nodes_needed.max(g.ir.nodes);
            let tenant = site
                .tenants
                .entry(job.tenancy.queue.clone())
                .or_insert_with(|| Tenant {
                    namespace: job.tenancy.namespace.clone(),
                    checkpoint_root: job.tenancy.checkpoint_root.clone(),
                    queue: job.tenancy.queue.clone(),
                    cohort: dns_label(&plan.pool, 50),
                    quotas: job.tenancy.quotas.clone(),
                    flavors: BTreeSet::new(),
                });
            tenant.flavors.insert(name);
        }
    }
    // Every node group of the site and every tenant of its pool with a quota there, from the
    // catalogue: a site's objects do not depend on which of its jobs are emitted together.
    for site in sites.values_mut() {
        add_catalogue(site, options);
    }
    for service in &doc.services {
        let namespace = options.tenancy(&service.pool, &service.tenant).namespace;
        for role in &service.roles {
            sites
                .entry(site_label(&role.group.site))
                .or_default()
                .service_namespaces
                .insert(namespace.clone());
        }
    }
    let env =
        env::environment().map_err(|e| vec![crate::env::template_error("prerequisites", &e)])?;
    let mut files = Vec::new();
    for (label, site) in &sites {
        let folder = format!("{PREREQUISITES}/{label}");
        let mut add = |path: String, template: &str, ctx: Value| -> Result<(), Vec<Diagnostic>> {
            let text = env
                .get_template(&format!("kubernetes/{template}.yaml.j2"))
                .and_then(|t| t.render(ctx))
                .map_err(|e| vec![crate::env::template_error("prerequisites", &e)])?;
            files.push(Manifest {
                path: format!("{folder}/{path}"),
                contents: text,
            });
            Ok(())
        };
        let namespaces: BTreeSet<&str> = site
            .tenants
            .values()
            .map(|t| t.namespace.as_str())
            .chain(site.service_namespaces.iter().map(String::as_str))
            .collect();
        for ns in namespaces {
            add(
                format!("00-namespace-{ns}.yaml"),
                "namespace",
                minijinja::context! { namespace => ns },
            )?;
        }
        // The checkpoint volume every training pod of the tenant mounts (claim `checkpoints`);
        // services mount none.
        let claims: BTreeMap<&str, &str> = site
            .tenants
            .values()
            .map(|t| (t.namespace.as_str(), t.checkpoint_root.as_str()))
            .collect();
        for (ns, root) in claims {
            add(
                format!("00-pvc-{ns}-checkpoints.yaml"),
                "pvc",
                minijinja::context! {
                    namespace => ns,
                    checkpoint_root => root,
                    storage_class => options.checkpoint_storage_class,
                    request => CHECKPOINT_CLAIM_REQUEST,
                },
            )?;
        }
        // A site with services only runs no Kueue or Volcano workload, and may have neither
        // installed: its services bring their own PriorityClass.
        let priorities = if site.tenants.is_empty() {
            &[][..]
        } else {
            PRIORITIES
        };
        for (name, value) in priorities {
            let class = priority_class(name);
            let (path, template) = match options.flavor {
                Flavor::Jobset => (
                    format!("10-workloadpriorityclass-{class}.yaml"),
                    "workloadpriorityclass",
                ),
                Flavor::Volcano => (format!("10-priorityclass-{class}.yaml"), "priorityclass"),
            };
            add(
                path,
                template,
                minijinja::context! { name => class, value => value, priority => name, service => false },
            )?;
        }
        match options.flavor {
            Flavor::Jobset => {
                if !site.levels.is_empty() {
                    let name = topology_name(label);
                    add(
                        format!("10-topology-{name}.yaml"),
                        "topology",
                        minijinja::context! { name => name, levels => site.levels },
                    )?;
                }
                for flavor in site.flavors.values() {
                    add(
                        format!("20-resourceflavor-{}.yaml", flavor.name),
                        "resourceflavor",
                        Value::from_serialize(flavor),
                    )?;
                }
                if let Some((cohort, covered, flavors)) = lender(site, &options.node_groups) {
                    add(
                        format!("30-clusterqueue-{}.yaml", lender_name(&cohort)),
                        "lender-clusterqueue",
                        minijinja::context! {
                            queue => lender_name(&cohort),
                            cohort => cohort,
                            covered => covered,
                            flavors => Value::from_serialize(&flavors),
                        },
                    )?;
                }
                for tenant in site.tenants.values() {
                    let (covered, flavors) = cluster_queue(site, tenant);
                    add(
                        format!("30-clusterqueue-{}.yaml", tenant.queue),
                        "clusterqueue",
                        minijinja::context! {
                            queue => tenant.queue,
                            namespace => tenant.namespace,
                            cohort => tenant.cohort,
                            covered => covered,
                            flavors => Value::from_serialize(&flavors),
                        },
                    )?;
                    add(
                        format!("40-localqueue-{}-{}.yaml", tenant.namespace, tenant.queue),
                        "localqueue",
                        minijinja::context! { queue => tenant.queue, namespace => tenant.namespace },
                    )?;
                }
            }
            Flavor::Volcano => {
                for tenant in site.tenants.values() {
                    let (_, flavors) = cluster_queue(site, tenant);
                    // The queue's bounds from the catalogue's quota, summed per resource over
                    // the node groups the tenant uses here.
                    let mut deserved: BTreeMap<String, u64> = BTreeMap::new();
                    let mut capability: BTreeMap<String, u64> = BTreeMap::new();
                    for (name, _) in &flavors {
                        let Some(f) = site.flavors.get(name) else {
                            continue;
                        };
                        let share = share(tenant, f);
                        *deserved.entry(f.device_resource.clone()).or_default() += share.guaranteed;
                        *capability.entry(f.device_resource.clone()).or_default() +=
                            share.guaranteed + share.elastic;
                    }
                    add(
                        format!("30-queue-{}.yaml", tenant.queue),
                        "volcano-queue",
                        minijinja::context! {
                            queue => tenant.queue,
                            deserved => Value::from_serialize(&deserved),
                            capability => Value::from_serialize(&capability),
                        },
                    )?;
                }
            }
        }
    }
    Ok(files)
}

/// The ResourceFlavor of group `g`'s node group at a site with topology `levels`.
fn flavor_of(g: &Group<'_>, levels: &[String]) -> Flavor_ {
    flavor_from_ir(g.ir, g.device_resource.clone(), levels)
}

/// The catalogue's node groups at `site` as flavors (those no emitted job uses need no node),
/// and every tenant of the site's pool with a quota on a device type there, with a queue over
/// the flavors of those device types.
fn add_catalogue(site: &mut Site, options: &Options) {
    let Some(groups) = options.sites.get(&site.name) else {
        return;
    };
    for g in groups {
        let Some(vendor) = options.vendors.of_group(g) else {
            continue;
        };
        let node = g.node.clone().unwrap_or_default();
        if site.levels.is_empty() {
            site.levels.clone_from(&node.topology_levels);
        }
        let mut flavor =
            flavor_from_ir(g, crate::vendors::device_resource(g, vendor), &site.levels);
        // A whole node's resources, whatever share of a node the emitted jobs take; the jobs
        // keep what they need of it. A job on slices keeps its own flavor: its pods request
        // the slice's resource, which the queue must cover.
        match site.flavors.get(&flavor.name) {
            Some(used) if used.device_resource != flavor.device_resource => continue,
            Some(used) => flavor.nodes_needed = used.nodes_needed,
            None => flavor.nodes_needed = 0,
        }
        site.flavors.insert(flavor.name.clone(), flavor);
    }
    let cohort = dns_label(&site.pool, 50);
    for ((pool, _), tenancy) in &options.tenants {
        if *pool != site.pool {
            continue;
        }
        let flavors: BTreeSet<String> = site
            .flavors
            .values()
            .filter(|f| {
                tenancy
                    .quotas
                    .get(&f.device)
                    .is_some_and(|q| q.guaranteed + q.elastic > 0)
            })
            .map(|f| f.name.clone())
            .collect();
        if flavors.is_empty() {
            continue;
        }
        let tenant = site
            .tenants
            .entry(tenancy.queue.clone())
            .or_insert_with(|| Tenant {
                namespace: tenancy.namespace.clone(),
                checkpoint_root: tenancy.checkpoint_root.clone(),
                queue: tenancy.queue.clone(),
                cohort: cohort.clone(),
                quotas: tenancy.quotas.clone(),
                flavors: BTreeSet::new(),
            });
        tenant.flavors.extend(flavors);
    }
}

/// The ResourceFlavor of plan group `g` (its pods requesting `device_resource`) at a site with
/// topology `levels`.
fn flavor_from_ir(g: &GroupIr, device_resource: String, levels: &[String]) -> Flavor_ {
    let site = &g.site;
    let node = g.node.clone().unwrap_or_default();
    let mut per_node = BTreeMap::new();
    per_node.insert(device_resource.clone(), g.devices_per_node);
    if node.cpus > 0 {
        per_node.insert("cpu".to_string(), node.cpus);
    }
    if node.memory_gib > 0.0 {
        per_node.insert(
            "memory".to_string(),
            (node.memory_gib * 1024.0).round() as u64,
        );
    }
    if let Some(rdma) = &node.rdma {
        per_node.insert(rdma.resource.clone(), rdma.per_node);
    }
    Flavor_ {
        name: flavor_name(&g.node_group),
        node_group: g.node_group.clone(),
        device: g.device.clone(),
        node_labels: g
            .node_labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        taints: node
            .tolerations
            .iter()
            .map(|t| (t.key.clone(), t.value.clone(), t.effect.clone()))
            .collect(),
        topology: (!levels.is_empty() && !g.node_labels.is_empty()).then(|| topology_name(site)),
        per_node,
        devices_per_node: g.devices_per_node.max(1),
        device_resource,
        nodes_needed: g.nodes,
    }
}

/// The tenant's share of a flavor's devices: the catalogue's quota of the device type, or,
/// when the catalogue gives the tenant none, what its largest emitted job needs here, so
/// that job can be admitted.
fn share(tenant: &Tenant, f: &Flavor_) -> QuotaShare {
    tenant.quotas.get(&f.device).copied().unwrap_or(QuotaShare {
        guaranteed: f.nodes_needed * f.devices_per_node,
        elastic: 0,
    })
}

/// The covered resources (cpu, memory, then the others sorted) and each flavor's quotas in
/// that order, as Kueue requires of a resource group.
fn cluster_queue(site: &Site, tenant: &Tenant) -> (Vec<String>, Vec<(String, Vec<ResourceQuota>)>) {
    let flavors: Vec<&Flavor_> = tenant
        .flavors
        .iter()
        .filter_map(|n| site.flavors.get(n))
        .collect();
    let mut others: BTreeSet<String> = BTreeSet::new();
    for f in &flavors {
        others.extend(f.per_node.keys().cloned());
    }
    others.remove("cpu");
    others.remove("memory");
    let covered: Vec<String> = ["cpu".to_string(), "memory".to_string()]
        .into_iter()
        .chain(others)
        .collect();
    let quotas = flavors
        .iter()
        .map(|f| {
            let share = share(tenant, f);
            // Whole nodes' worth of the devices the share holds.
            let nodes = |devices: u64| devices.div_ceil(f.devices_per_node);
            let quotas = covered
                .iter()
                .map(|r| {
                    let per = f.per_node.get(r).copied().unwrap_or(0);
                    let (nominal, borrowing) = if *r == f.device_resource {
                        (share.guaranteed, share.elastic)
                    } else {
                        (nodes(share.guaranteed) * per, nodes(share.elastic) * per)
                    };
                    let unit = if r == "memory" { "Mi" } else { "" };
                    ResourceQuota {
                        name: r.clone(),
                        nominal: format!("{nominal}{unit}"),
                        borrowing: format!("{borrowing}{unit}"),
                    }
                })
                .collect();
            (f.name.clone(), quotas)
        })
        .collect();
    (covered, quotas)
}
