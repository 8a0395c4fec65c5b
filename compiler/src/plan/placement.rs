//! Where a job may be placed: the node groups of a pool that may run it (with what they give
//! it), what moving its data there costs, its currency, and how a group's nodes fall into
//! switch blocks.

use crate::catalogue::{Catalogue, Device, NodeGroup, Pool, Site, route};
use crate::check::Job;
use crate::check::catalogue::eligible;
use crate::hardware::ClusterFigures;
use loam_ir::plan::{DataIr, NodeShape};

/// One node group that may run the job.
pub(crate) struct Placement<'a> {
    pub(crate) site: &'a Site,
    pub(crate) group: &'a NodeGroup,
    pub(crate) device: &'a Device,
    pub(crate) cluster: ClusterFigures,
    /// Most devices the job may take from the group (group size, tenant quota, `max_devices`).
    pub(crate) available: u64,
    /// The tenant's guaranteed quota of the device type (devices above it may be preempted).
    pub(crate) guaranteed: u64,
    /// Whether the device trains in the job's precision; when not, it may still run the
    /// precision-sensitive ops of a heterogeneous pipeline (in bf16 for an fp8 job).
    pub(crate) hosts_job_precision: bool,
    /// The tenant's whole quota of the device type (guaranteed plus elastic), shared by every
    /// group of that type; `None` when the tenant has no quotas.
    pub(crate) quota: Option<u64>,
}

impl Placement<'_> {
    /// How `devices` of the group run on its nodes when the job's tensor groups have `tensor`
    /// ranks: [`NodeShape::place`] on the node group's nodes, the one rule `loam emit` checks.
    pub(crate) fn node_shape(&self, devices: u64, tensor: u64) -> NodeShape {
        NodeShape::place(
            devices,
            self.group.devices_per_node.value.into(),
            tensor,
            self.group.nodes.into(),
        )
    }

    /// Whether `devices` of the group can run as [`NodeShape::place`] intends: equal nodes,
    /// each tensor group of `tensor` ranks inside one, within the node group's nodes. A layout
    /// that cannot is no plan of this group: its group would take more nodes than there are, or
    /// split tensor groups the cost model kept inside a node.
    pub(crate) fn fits_nodes(&self, devices: u64, tensor: u64) -> bool {
        NodeShape::fits(
            devices,
            self.group.devices_per_node.value.into(),
            tensor,
            self.group.nodes.into(),
        )
    }
}

/// The node groups that may run `job`, in the pool's file order, and one sentence for each
/// group of an allowed device type that cannot.
pub(crate) fn options<'a>(
    job: &Job,
    pool: &'a Pool,
    catalogue: &'a Catalogue,
) -> (Vec<Placement<'a>>, Vec<String>) {
    let tenant = pool.tenant(&job.tenant.value);
    let allowed_device = |id: &str| eligible::device_allowed(job, id);
    let allowed_site = |name: &str| eligible::site_allowed(job, tenant, name);
    let precision = job.train.precision.value;
    let mut options = Vec::new();
    let mut skipped = Vec::new();
    for (site, group) in pool.node_groups() {
        let id = group.device.value.as_str();
        let place = format!("`{}` at {}", group.name.value, site.name.value);
        if !allowed_device(id) || !allowed_site(&site.name.value) {
            continue;
        }
        let Some(device) = catalogue.device(id) else {
            skipped.push(format!("{place}: the catalogue has no device `{id}`"));
            continue;
        };
        let trains = |p| device.supports(p) && device.peak(p).is_some();
        let hosts_job_precision = trains(precision);
        if !hosts_job_precision {
            skipped.push(format!("{place}: {id} does not train in {precision}"));
            if !trains(crate::cost::ops::op_precision(precision, true)) {
                continue;
            }
        }
        if let Some(missing) = job
            .resources
            .features
            .iter()
            .find(|f| !device.features.value.iter().any(|h| h.as_str() == f.value))
        {
            skipped.push(format!(
                "{place}: {id} lacks the feature `{}`",
                missing.value
            ));
            continue;
        }
        if transfer(job, pool, site).0.is_infinite() {
            skipped.push(format!("{place}: no WAN route brings the data there"));
            continue;
        }
        let mut cap = group.devices();
        let mut guaranteed = cap;
        let mut quota = None;
        if let Some(t) = tenant.filter(|t| !t.quota.is_empty()) {
            let Some(q) = t.quota.iter().find(|q| q.device.value == id) else {
                skipped.push(format!(
                    "{place}: tenant `{}` has no quota for {id}",
                    t.name.value
                ));
                continue;
            };
            // The elastic share is borrowed: devices above the guaranteed quota may be
            // preempted, which the plan reports (`preemptible_devices`).
            guaranteed = u64::from(q.guaranteed.value);
            quota = Some(guaranteed + u64::from(q.elastic.value));
            cap = cap.min(guaranteed + u64::from(q.elastic.value));
        }
        if let Some(max) = &job.resources.max_devices {
            cap = cap.min(max.value);
        }
        if cap == 0 {
            skipped.push(format!("{place}: no devices available to the job"));
            continue;
        }
        options.push(Placement {
            site,
            group,
            device,
            cluster: group.cluster_figures(device, site),
            available: cap,
            guaranteed,
            hosts_job_precision,
            quota,
        });
    }
    (options, skipped)
}

/// Seconds and money (pool base currency) to bring every data set of `job` to `site` over
/// the fewest WAN links (infinite time when a data set cannot reach it). A data set already
/// there, or cached there under its name, costs nothing.
pub(crate) fn transfer(job: &Job, pool: &Pool, site: &Site) -> (f64, f64) {
    let (mut seconds, mut money) = (0.0, 0.0);
    for data in &job.data {
        if data.site.value == site.name.value || site.dataset(&data.name.value).is_some() {
            continue;
        }
        let Some(links) = route(pool, &data.site.value, &site.name.value) else {
            return (f64::INFINITY, 0.0);
        };
        let bandwidth = links
            .iter()
            .map(|l| l.bandwidth)
            .fold(f64::INFINITY, f64::min);
        let bytes = data.size.value;
        if bandwidth > 0.0 && bandwidth.is_finite() {
            seconds += bytes / (bandwidth * crate::cost::LINK_EFFICIENCY);
        }
        money += bytes / 1e9 * links.iter().map(|l| l.egress_per_gb).sum::<f64>();
    }
    (seconds, money)
}

/// How the data reaches the compute at `site`.
pub(crate) fn data_ir(job: &Job, pool: &Pool, site: &Site) -> DataIr {
    let (seconds, _) = transfer(job, pool, site);
    let moved: f64 = job
        .data
        .iter()
        .filter(|d| d.site.value != site.name.value && site.dataset(&d.name.value).is_none())
        .map(|d| d.size.value)
        .sum();
    DataIr {
        strategy: data_strategy(job, site).to_string(),
        transfer_gb: loam_ir::display::significant(moved / 1e9),
        transfer_h: loam_ir::display::significant(seconds / 3600.0),
        options: Vec::new(),
        sources: job
            .data
            .iter()
            .map(|d| loam_ir::plan::DataSourceIr {
                name: d.name.value.clone(),
                site: d.site.value.clone(),
                size_gb: loam_ir::display::significant(d.size.value / 1e9),
            })
            .collect(),
    }
}

/// `move-data` when a data set must cross the WAN to `site`, `cached` when every one that is
/// elsewhere has a copy there, else `move-compute`.
pub(crate) fn data_strategy(job: &Job, site: &Site) -> &'static str {
    let away = |d: &&crate::check::DataSpec| d.site.value != site.name.value;
    if job
        .data
        .iter()
        .filter(away)
        .any(|d| site.dataset(&d.name.value).is_none())
    {
        "move-data"
    } else if job.data.iter().any(|d| away(&d)) {
        "cached"
    } else {
        "move-compute"
    }
}

/// The currency plans of `job` are priced in: the budget's, else the pool's base.
pub(crate) fn currency(job: &Job, pool: &Pool) -> String {
    job.goal
        .budget
        .as_ref()
        .map(|b| b.value.1.clone())
        .filter(|c| pool.convert(1.0, &pool.currency.value, c).is_some())
        .unwrap_or_else(|| pool.currency.value.clone())
}

/// The budget's currency, for messages.
pub(crate) fn currency_of(job: &Job) -> String {
    job.goal
        .budget
        .as_ref()
        .map_or_else(String::new, |b| b.value.1.clone())
}

/// Which switch blocks a group's `nodes` take at `site`, ranks ordered tensor, then pipeline,
/// then data: a model replica of `replica_nodes` nodes stays inside one block when it fits, so
/// pipeline neighbours talk at full bisection and only data-parallel traffic crosses blocks.
pub(crate) fn block_label(site: &Site, nodes: u64, replica_nodes: u64) -> Option<String> {
    let per_block = u64::from(site.nodes_per_block);
    if per_block == 0 || nodes == 0 {
        return None;
    }
    let blocks = nodes.div_ceil(per_block);
    let text = if blocks == 1 {
        format!("1 switch block ({nodes} of {per_block} nodes)")
    } else if replica_nodes <= per_block {
        format!(
            "{blocks} switch blocks of {per_block} nodes; each model replica inside one block, data parallel across blocks"
        )
    } else {
        format!(
            "{blocks} switch blocks of {per_block} nodes; each model replica spans {} blocks",
            replica_nodes.div_ceil(per_block)
        )
    };
    Some(text)
}
