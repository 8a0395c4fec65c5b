//! Whether a job's model can fit in the memory of its allowed devices at all.
//!
//! For each allowed device type this finds the least memory per device any layout the spec
//! allows could need: the widest tensor parallelism inside one node, any pipeline depth up to
//! the layers, ZeRO-3 over every data rank the device budget leaves, full recomputation and
//! micro-batch 1 — each replaced by the spec's value where the spec pins it. The job is rejected
//! only when no allowed device type fits even then; the planner picks among those that do.

use super::check_job::{Allowed, ticked};
use super::codes;
use crate::check::Job;
use crate::check::{job_model_dims, train_setup};
use crate::cost::usable_memory;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::types::{Arch, Recompute, SplitRule};
use crate::workload::{Layout, ModelDims, StageSplit, TrainSetup, memory_per_device};

const GB: f64 = 1e9;

/// The pinned value of a degree, or `None` when it is `auto` or too large to matter.
fn pin(value: Option<&crate::span::Spanned<u64>>) -> Option<Option<u32>> {
    match value {
        None => Some(None),
        Some(v) => u32::try_from(v.value).ok().map(Some),
    }
}

/// The layout needing the least memory per device on `device` within `budget` devices, with
/// its bytes per device; `None` when no layout the spec allows fits in the budget.
fn best_layout(
    job: &Job,
    model: &ModelDims,
    setup: &TrainSetup,
    per_node: u32,
    budget: u64,
) -> Option<(Layout, f64)> {
    let p = &job.parallel;
    let (tensor, pipeline, data, context) = (
        pin(p.tensor.as_ref())?,
        pin(p.pipeline.as_ref())?,
        pin(p.data.as_ref())?,
        pin(p.context.as_ref())?,
    );
    let (expert, virtual_stages, micro_batch) = (
        pin(p.expert.as_ref())?,
        pin(p.virtual_stages.as_ref())?,
        pin(p.micro_batch.as_ref())?,
    );
    let zero = match &p.zero {
        Some(z) => u8::try_from(z.value).ok()?,
        None => 3,
    };
    let recompute = p.recompute.as_ref().map_or(Recompute::Full, |r| r.value);
    let tensors: Vec<u32> = match tensor {
        Some(t) => vec![t],
        None => (1..=per_node.max(1))
            .filter(|t| model.heads.is_multiple_of(*t))
            .collect(),
    };
    let pipelines: Vec<u32> = match pipeline {
        Some(pp) => vec![pp],
        None => std::iter::successors(Some(1u32), |x| x.checked_mul(2))
            .take_while(|x| *x < model.layers)
            .chain([model.layers.max(1)])
            .collect(),
    };
    let context = context.unwrap_or(1).max(1);
    // The split the planner would keep: the same memory function sees the same blocks.
    let (pinned_rule, pinned_stages) = crate::check::pinned_split(p, u64::from(model.layers));
    let micro_batch = micro_batch.unwrap_or(1).max(1);
    let mut best: Option<(Layout, f64)> = None;
    for &t in &tensors {
        for &pp in &pipelines {
            let model_parallel = u64::from(t) * u64::from(pp) * u64::from(context);
            let d = match data {
                Some(d) => d,
                None => {
                    let room = budget / model_parallel.max(1);
                    let most = (setup.global_batch / micro_batch).max(1);
                    u32::try_from(room.min(u64::from(most))).unwrap_or(most)
                }
            };
            if d == 0 || model_parallel * u64::from(d) > budget {
                continue;
            }
            let e = match (expert, model.arch) {
                (Some(e), _) => e,
                (None, Arch::Dense) => 1,
                (None, Arch::Moe) => (1..=d.min(model.experts))
                    .rev()
                    .find(|e| model.experts.is_multiple_of(*e))
                    .unwrap_or(1),
            };
            let layout = Layout {
                tensor: t,
                pipeline: pp,
                data: d,
                context,
                expert: e,
                virtual_stages: virtual_stages.unwrap_or(1).max(1),
                micro_batch,
                zero,
                recompute,
                sequence_parallel: p.sequence_parallel.as_ref().map_or(t > 1, |s| s.value),
                split: StageSplit::UNRESOLVED,
            };
            let layout = match (pinned_stages, pinned_rule) {
                (Some(split), _) if pipeline == Some(pp) => Layout { split, ..layout },
                (_, Some(rule)) if rule != SplitRule::Pinned => {
                    layout.with_split(model.layers, rule)
                }
                _ => layout,
            };
            let bytes = memory_per_device(model, setup, &layout).total;
            if best.is_none_or(|(_, b)| bytes < b) {
                best = Some((layout, bytes));
            }
        }
    }
    best
}

/// Reports a model that fits on none of the allowed device types.
pub(crate) fn check_fit(job: &Job, allowed: &Allowed<'_>, diags: &mut Diagnostics) {
    let model = job_model_dims(job);
    let setup = train_setup(job);
    let mut misses = Vec::new();
    for device in &allowed.devices {
        let id = device.id.value.as_str();
        let per_node = allowed
            .groups_of(id)
            .map(|g| g.devices_per_node.value)
            .max()
            .unwrap_or(device.devices_per_node.value)
            .min(device.devices_per_node.value);
        let in_pool: u64 = allowed.groups_of(id).map(|g| g.devices()).sum();
        let budget = job
            .resources
            .max_devices
            .as_ref()
            .map_or(in_pool, |m| m.value.min(in_pool));
        let Some((layout, bytes)) = best_layout(job, &model, &setup, per_node, budget) else {
            // No layout fits the device count at all; the count checks say why.
            return;
        };
        let usable = usable_memory(&device.figures());
        if bytes <= usable {
            return;
        }
        misses.push((*device, layout, bytes, usable, budget));
    }
    for (device, layout, bytes, usable, budget) in misses {
        let id = device.id.value.as_str();
        let span = allowed
            .named_at
            .get(id)
            .copied()
            .or_else(|| job.resources.max_devices.as_ref().map(|m| m.span))
            .unwrap_or(job.resources.pool.span);
        let label = if allowed.named_at.contains_key(id) {
            format!("too little memory on `{id}` for this model")
        } else {
            format!("no layout fits `{id}` within these limits")
        };
        let memory = device.memory_bytes.value;
        diags.push(
            Diagnostic::error(
                codes::MODEL_DOES_NOT_FIT,
                format!(
                    "model does not fit on `{id}`: needs at least {:.1} GB per device, the device has {:.1} GB ({:.1} GB usable)",
                    bytes / GB,
                    memory / GB,
                    usable / GB
                ),
                span,
                label,
            )
            .with_related(device.memory_bytes.span, format!("`{id}` has {:.0} GB", memory / GB))
            .with_help(format!(
                "the least memory is with tensor {} × pipeline {} × data {} on {budget} devices, ZeRO-{} and {} recomputation; allow more devices, or devices with more memory than {}",
                layout.tensor,
                layout.pipeline,
                layout.data,
                layout.zero,
                layout.recompute.as_str(),
                ticked([id])
            )),
        );
    }
}
