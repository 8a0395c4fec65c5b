//! A plan on one node group: the costed layouts the search ranks, and turning the chosen one
//! into every field of the Plan IR (groups, stages, estimate, checkpoint), with the reasons
//! when no layout fits.

use super::goodput::Failures;
use super::placement::{Placement, block_label, data_ir};
use super::search::{Candidate, RejectedRegion, Rejection};
use crate::catalogue::Pool;
use crate::check::Job;
use crate::check::job_model_dims;
use crate::workload::{Layout, MemoryBreakdown, param_count};
use loam_ir::plan::{BreakdownIr, EstimateIr, GroupIr, LayoutIr, MemoryIr, MoneyIr, Plan};

/// One costed layout on one node group.
pub(crate) struct Ranked<'a> {
    pub(crate) score: f64,
    pub(crate) option: usize,
    pub(crate) candidate: Candidate,
    pub(crate) placement: &'a Placement<'a>,
}

/// Bytes in a GiB.
use loam_ir::units::GIB;

/// `x` to five significant digits, so JSON diffs show only changes that matter.
pub(crate) fn round(x: f64) -> f64 {
    loam_ir::display::significant(x)
}

/// The layout in one short line: `TP8 PP4 DP16 mb1 ZeRO-1 recompute selective`.
pub(crate) fn layout_text(l: &Layout) -> String {
    loam_ir::display::layout_short(l)
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
        Rejection::StagesWithoutBlocks { chunks, layers } => format!(
            "{chunks} pipeline chunks leave some of them without one of the {layers} blocks"
        ),
        Rejection::Unsupported { message } => message.clone(),
    }
}

/// Money, energy and CO2 of the whole run.
pub(crate) struct Totals {
    pub(crate) cost: f64,
    pub(crate) currency: String,
    pub(crate) energy_kwh: f64,
    pub(crate) carbon_kg: f64,
}

/// A layout as the Plan IR writes it, run under `setup`: whether its expert all-to-alls run
/// beside another micro-batch's compute is the cost model's rule
/// ([`crate::workload::expert_overlap_runs`]), so the plan states what its time assumed.
pub(crate) fn layout_ir(l: &Layout, setup: &crate::workload::TrainSetup) -> LayoutIr {
    LayoutIr {
        expert_overlap: setup.expert_overlap_on(l),
        ..LayoutIr::from(l)
    }
}

/// What the job's searches ran with: the model, the run (before each device's own setup) and
/// what it checkpoints.
#[derive(Clone, Copy)]
pub(crate) struct Run<'a> {
    pub(crate) model: &'a crate::workload::ModelDims,
    pub(crate) setup: &'a crate::workload::TrainSetup,
    pub(crate) checkpoint: &'a CheckpointNeeds,
}

/// Fills every field of `plan` from the chosen layout `best`.
pub(crate) fn fill(
    plan: &mut Plan,
    job: &Job,
    pool: &Pool,
    run: Run<'_>,
    best: &Ranked<'_>,
    totals: Totals,
) {
    let checkpoint_needs = run.checkpoint;
    let c = &best.candidate;
    let l = &c.layout;
    let o = best.placement;
    let setup = super::search::setup_on(run.setup, o.device);
    plan.layout = Some(layout_ir(l, &setup));
    let replica = l.replica_devices();
    plan.groups = vec![group_ir(o, c.devices, replica, l.tensor.into())];
    let timing = super::stages::StageTiming {
        model: run.model,
        setup: &setup,
        cluster: &o.cluster,
    };
    plan.stages = super::stages::homogeneous_stages(job, l, timing);
    let e = &c.estimate;
    let b = &e.breakdown;
    plan.estimate = Some(estimate_ir(
        &Figures {
            step_time_s: e.step_time_s,
            tokens_per_s: e.tokens_per_s,
            model_tflops_per_device: e.model_tflops_per_device,
            mfu: e.mfu,
            memory: e.memory,
            train_time_s: c.train_time_s,
            breakdown: BreakdownIr {
                compute: round(b.compute),
                tensor_comm: round(b.tensor_comm),
                pipeline_bubble: round(b.pipeline_bubble),
                data_comm: round(b.data_comm),
                other: round(b.other),
            },
        },
        totals,
    ));
    plan.data = Some(data_ir(job, pool, o.site));
    let o = best.placement;
    let failures = Failures::at(
        o.device,
        o.site,
        checkpoint_needs.bytes,
        checkpoint_needs.interval_s,
    );
    let run = failures.run(c.train_time_s, c.devices);
    super::goodput::state(plan, &run, c.devices, &checkpoint_needs.path);
}

/// What a plan predicts per step and per run, before rounding (the breakdown already rounded).
pub(crate) struct Figures {
    pub(crate) step_time_s: f64,
    pub(crate) tokens_per_s: f64,
    pub(crate) model_tflops_per_device: f64,
    pub(crate) mfu: f64,
    /// The memory of the device that needs the most (on any group).
    pub(crate) memory: MemoryBreakdown,
    pub(crate) train_time_s: f64,
    pub(crate) breakdown: BreakdownIr,
}

/// Bytes per device by what they hold, in GiB as the Plan IR states them.
pub(crate) fn memory_ir(m: &MemoryBreakdown) -> MemoryIr {
    MemoryIr {
        weights: round(m.weights / GIB),
        gradients: round(m.gradients / GIB),
        optimizer: round(m.optimizer / GIB),
        activations: round(m.activations / GIB),
        pipeline_stash: round(m.pipeline_stash / GIB),
        comm_buffers: round(m.comm_buffers / GIB),
        logits: round(m.logits / GIB),
        rank: m.rank.map(u64::from),
    }
}

/// The estimate section of the Plan IR, for a plan on one group or on a pair alike.
pub(crate) fn estimate_ir(f: &Figures, totals: Totals) -> EstimateIr {
    EstimateIr {
        step_time_s: round(f.step_time_s),
        tokens_per_s: round(f.tokens_per_s),
        model_tflops_per_device: round(f.model_tflops_per_device),
        mfu: round(f.mfu),
        flops_convention:
            "model: 6·N·tokens + causal attention (the keys each query sees), no recomputation"
                .to_string(),
        memory_per_device_gib: round(f.memory.total / GIB),
        memory_gib: Some(memory_ir(&f.memory)),
        train_time_h: round(f.train_time_s / 3600.0),
        cost: MoneyIr {
            amount: round(totals.cost),
            currency: totals.currency,
        },
        energy_kwh: round(totals.energy_kwh),
        carbon_kg: round(totals.carbon_kg),
        breakdown_s: f.breakdown.clone(),
        // Stated once the plan's groups are known (`super::uncertainty`).
        throughput_uncertainty: None,
        // Stated with the checkpoint plan (`super::goodput::state`).
        goodput: None,
    }
}

/// The IR of `n` devices of group `o` whose model replica takes `replica_devices` of them and
/// whose tensor groups `tensor`, for a plan on one group or either group of a pair; its nodes
/// are [`Placement::node_shape`]'s, so `loam emit` accepts them.
pub(crate) fn group_ir(o: &Placement<'_>, n: u64, replica_devices: u64, tensor: u64) -> GroupIr {
    let shape = o.node_shape(n, tensor);
    GroupIr {
        site: o.site.name.value.clone(),
        device: o.device.id.value.clone(),
        nodes: shape.nodes,
        devices: n,
        node_group: o.group.name.value.clone(),
        devices_per_node: shape.per_node,
        k8s_resource: o.device.kubernetes_resource.clone(),
        node_labels: o.group.node_labels.clone(),
        slurm_partition: Some(o.group.slurm_partition.clone()).filter(|p| !p.is_empty()),
        block: None,
        topology: block_label(
            o.site,
            shape.nodes,
            replica_devices.div_ceil(shape.per_node.max(1)),
        ),
        preemptible_devices: n.saturating_sub(o.guaranteed),
        slice: None,
        tensor: None,
        layout: None,
        sequences_per_step: None,
        stages: Vec::new(),
        throughput_uncertainty: None,
        mfu: None,
        model_tflops_per_device: None,
        memory_per_device_gib: None,
        memory_gib: None,
        node: Some(super::node::node_ir(o, shape.per_node)),
    }
}

/// What the job checkpoints and where, decided once for the planning request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckpointNeeds {
    /// The folder: the spec's `path`, else `<tenant root>/<job name>`.
    pub(crate) path: String,
    /// Bytes of one checkpoint: the weights and the optimizer state.
    pub(crate) bytes: f64,
    /// The spec's interval in seconds, when it pins one.
    pub(crate) interval_s: Option<f64>,
}

impl CheckpointNeeds {
    /// The checkpoint needs of `job` in `pool`.
    pub(crate) fn of(job: &Job, pool: &Pool) -> Self {
        // Frozen weights never change, so a checkpoint holds what trains and its optimizer state.
        let params = param_count(&job_model_dims(job)).trainable;
        let bytes = params
            * (job.train.precision.value.bytes() + job.train.optimizer.state_bytes_per_param());
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
        CheckpointNeeds {
            path,
            bytes,
            interval_s: job.checkpoint.interval.as_ref().map(|i| i.value),
        }
    }
}
