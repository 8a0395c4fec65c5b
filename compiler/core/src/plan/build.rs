//! The parts of planning around the search: which node groups may run a job, what moving its
//! data costs, and turning the chosen layout into every field of the Plan IR.

use super::ir::{BreakdownIr, CheckpointIr, DataIr, EstimateIr, GroupIr, LayoutIr, MoneyIr, Plan};
use super::planner::Ranked;
use super::search::{RejectedRegion, Rejection};
use crate::catalogue::eligible;
use crate::catalogue::{Catalogue, Device, NodeGroup, Pool, Site, route};
use crate::check::Job;
use crate::hardware::ClusterFigures;
use crate::workload::{Layout, model_dims, param_count};

/// Bytes in a GiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

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
        transfer_gb: round(moved / 1e9),
        transfer_h: round(seconds / 3600.0),
        options: Vec::new(),
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

/// `x` to five significant digits, so JSON diffs show only changes that matter.
pub(crate) fn round(x: f64) -> f64 {
    crate::display::significant(x)
}

/// The layout in one short line: `TP8 PP4 DP16 mb1 ZeRO-1 recompute selective`.
pub(crate) fn layout_text(l: &Layout) -> String {
    crate::display::layout_short(l)
}

/// One line: layout and placement.
pub(crate) fn summary(r: &Ranked<'_>) -> String {
    format!(
        "{} on {} × {} at {} ({})",
        layout_text(&r.candidate.layout),
        r.candidate.devices,
        r.placement.device.id.value,
        r.placement.site.name.value,
        r.placement.group.name.value
    )
}

/// Why nothing could be costed: the most telling rejection of each node group, with numbers.
pub(crate) fn rejection_reasons(
    rejected: &[(usize, RejectedRegion)],
    options: &[Placement<'_>],
) -> Vec<String> {
    let mut reasons: Vec<String> = Vec::new();
    for (i, option) in options.iter().enumerate() {
        let mine: Vec<&RejectedRegion> = rejected
            .iter()
            .filter(|(o, _)| *o == i)
            .map(|(_, r)| r)
            .collect();
        let telling = mine
            .iter()
            .find(|r| matches!(r.reason, Rejection::OutOfMemory { .. }))
            .or_else(|| mine.first());
        let place = format!(
            "on {} at {} ({})",
            option.device.id.value, option.site.name.value, option.group.name.value
        );
        let text = match telling {
            None => format!("{place}: no layout fits {} devices", option.available),
            Some(r) => format!(
                "{} {place}, closest: {}",
                rejection_text(&r.reason),
                layout_text(&r.example)
            ),
        };
        if !reasons.contains(&text) {
            reasons.push(text);
        }
    }
    reasons
}

/// One rejection in words, with numbers.
pub(crate) fn rejection_text(r: &Rejection) -> String {
    match r {
        Rejection::OutOfMemory {
            need_bytes,
            have_bytes,
        } => format!(
            "out of memory by {:.1} GiB per device (needs {:.1} GiB, {:.1} GiB usable)",
            (need_bytes - have_bytes) / GIB,
            need_bytes / GIB,
            have_bytes / GIB
        ),
        Rejection::Indivisible { what, value, by } => {
            format!(
                "{what} must be 0, but {value} % {by} = {}",
                value % by.max(&1)
            )
        }
        Rejection::TensorBeyondNode {
            tensor,
            devices_per_node,
        } => {
            format!("tensor parallelism {tensor} spans beyond a node of {devices_per_node} devices")
        }
        Rejection::TooManyDevices { need, have } => {
            format!("needs {need} devices, {have} available")
        }
        Rejection::InterleaveNeedsMicroBatches {
            micro_batches,
            pipeline,
        } => format!(
            "interleaving needs micro-batches a multiple of the {pipeline} stages, got {micro_batches}"
        ),
        Rejection::Unsupported { message } => message.clone(),
    }
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

/// Money, energy and CO2 of the whole run.
pub(crate) struct Totals {
    pub(crate) cost: f64,
    pub(crate) currency: String,
    pub(crate) energy_kwh: f64,
    pub(crate) carbon_kg: f64,
}

/// A layout as the Plan IR writes it.
pub(crate) fn layout_ir(l: &Layout) -> LayoutIr {
    LayoutIr {
        tensor: l.tensor.into(),
        pipeline: l.pipeline.into(),
        data: l.data.into(),
        context: l.context.into(),
        expert: l.expert.into(),
        virtual_stages: l.virtual_stages.into(),
        micro_batch: l.micro_batch.into(),
        zero: l.zero,
        recompute: l.recompute,
    }
}

/// Fills every field of `plan` from the chosen layout `best`.
pub(crate) fn fill(plan: &mut Plan, job: &Job, pool: &Pool, best: &Ranked<'_>, totals: Totals) {
    let c = &best.candidate;
    let l = &c.layout;
    let o = best.placement;
    plan.layout = Some(layout_ir(l));
    let dpn = u64::from(o.group.devices_per_node.value.max(1));
    plan.groups = vec![GroupIr {
        site: o.site.name.value.clone(),
        device: o.device.id.value.clone(),
        nodes: c.devices.div_ceil(dpn),
        devices: c.devices,
        node_group: o.group.name.value.clone(),
        devices_per_node: c.devices.min(dpn),
        k8s_resource: o.device.kubernetes_resource.clone(),
        node_labels: o.group.node_labels.clone(),
        slurm_partition: Some(o.group.slurm_partition.clone()).filter(|p| !p.is_empty()),
        block: None,
        topology: block_label(o.site, c.devices.div_ceil(dpn), {
            let replica = u64::from(l.tensor) * u64::from(l.pipeline) * u64::from(l.context);
            replica.div_ceil(dpn)
        }),
        preemptible_devices: c.devices.saturating_sub(o.guaranteed),
        slice: None,
        tensor: None,
        layout: None,
        sequences_per_step: None,
        stages: Vec::new(),
    }];
    plan.stages = super::stages::homogeneous_stages(job, l.pipeline.into());
    let e = &c.estimate;
    let b = &e.breakdown;
    plan.estimate = Some(EstimateIr {
        step_time_s: round(e.step_time_s),
        tokens_per_s: round(e.tokens_per_s),
        model_tflops_per_device: round(e.model_tflops_per_device),
        mfu: round(e.mfu),
        flops_convention: "model: 6·N·tokens + attention, no recomputation (Megatron-LM, Llama 3)"
            .to_string(),
        memory_per_device_gib: round(e.memory_per_device_bytes / GIB),
        train_time_h: round(c.train_time_s / 3600.0),
        cost: MoneyIr {
            amount: round(totals.cost),
            currency: totals.currency,
        },
        energy_kwh: round(totals.energy_kwh),
        carbon_kg: round(totals.carbon_kg),
        breakdown_s: BreakdownIr {
            compute: round(b.compute),
            tensor_comm: round(b.tensor_comm),
            pipeline_bubble: round(b.pipeline_bubble),
            data_comm: round(b.data_comm),
            other: round(b.other),
        },
    });
    plan.data = Some(data_ir(job, pool, o.site));
    plan.checkpoint = Some(checkpoint(job, pool, best));
}

/// Young/Daly: interval `τ = √(2·δ·M) − δ` with `δ` the time to write one checkpoint (weights
/// and optimizer state at the site's storage bandwidth) and `M` the job's mean time between
/// failures (one device's MTBF over the devices used).
fn checkpoint(job: &Job, pool: &Pool, best: &Ranked<'_>) -> CheckpointIr {
    let o = best.placement;
    let mtbf_job = o.device.mtbf_s / (best.candidate.devices.max(1) as f64);
    checkpoint_for(job, pool, o.site.storage_bandwidth, mtbf_job)
}

/// The checkpoint plan given the slowest storage the job writes to and its mean time between
/// failures.
pub(crate) fn checkpoint_for(
    job: &Job,
    pool: &Pool,
    storage_bandwidth: f64,
    mtbf_job: f64,
) -> CheckpointIr {
    let params = param_count(&model_dims(&job.model)).total;
    let bytes =
        params * (job.train.precision.value.bytes() + job.train.optimizer.state_bytes_per_param());
    let write_s = bytes / storage_bandwidth.max(1.0);
    let interval_s = match &job.checkpoint.interval {
        Some(i) => i.value,
        None => ((2.0 * write_s * mtbf_job).sqrt() - write_s).max(write_s),
    };
    // Without `path`, `<root>/<job name>` (the checker refuses names that cannot be a folder,
    // L1019, and tenants it does not know, L2113, so the fallbacks are never used).
    let path = match &job.checkpoint.path {
        Some(p) => p.value.clone(),
        None => match pool.tenant(&job.tenant.value) {
            Some(t) => t
                .checkpoint_root
                .value
                .job_folder(&job.name.value)
                .map_or_else(|_| t.checkpoint_root.value.to_string(), |f| f.to_string()),
            None => format!("/ckpt/{}", job.name.value),
        },
    };
    CheckpointIr {
        interval_min: round(interval_s / 60.0),
        write_s: round(write_s),
        path,
    }
}
